"""The files through which Loom processes share one model service, in the runtime directory.

For a service named KEY (one per server binary, model file and shape):
``KEY.json`` says where it listens (written by the supervisor when the model answers),
``KEY.exit.json`` how the last one ended, ``KEY.used`` is touched by every request (the
idle clock), ``KEY.lock`` serialises starting one, ``KEY.log`` holds the server's output.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError


class ServiceSpec(BaseModel):
    """What to run: handed from the starting client to the supervisor."""

    binary: str
    model: str
    alias: str
    threads: int
    parallel: int
    ctx: int
    idle_s: float
    runtime: str

    @property
    def key(self) -> str:
        material = "|".join((self.binary, self.model, str(self.parallel), str(self.ctx)))
        return "model-" + hashlib.sha256(material.encode()).hexdigest()[:12]


class ServiceRecord(BaseModel):
    instance: str
    supervisor_pid: int
    server_pid: int
    port: int
    api_key: str
    model: str
    binary: str
    started_at: float
    ready_at: float

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


ExitReason = Literal["crashed", "start-failed", "idle", "stopped"]


class ExitRecord(BaseModel):
    instance: str
    reason: ExitReason
    returncode: int | None
    output_tail: list[str]
    at: float


class Files:
    """The paths of one service's files."""

    def __init__(self, runtime: Path, key: str) -> None:
        self.record = runtime / f"{key}.json"
        self.exit = runtime / f"{key}.exit.json"
        self.used = runtime / f"{key}.used"
        self.lock = runtime / f"{key}.lock"
        self.log = runtime / f"{key}.log"

    def read_record(self) -> ServiceRecord | None:
        return _read(self.record, ServiceRecord)  # type: ignore[return-value]

    def read_exit(self) -> ExitRecord | None:
        return _read(self.exit, ExitRecord)  # type: ignore[return-value]

    def write(self, path: Path, value: BaseModel) -> None:
        """Atomically, readable by the user only (a record holds the service's key)."""
        partial = path.with_suffix(f".{os.getpid()}.partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(value.model_dump_json())
        partial.replace(path)

    def touch_used(self) -> None:
        with contextlib.suppress(OSError):
            self.used.touch()

    def last_used(self) -> float:
        try:
            return self.used.stat().st_mtime
        except OSError:
            return 0.0

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held by whoever checks for a service and starts one (blocking)."""
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


def _read(path: Path, model: type[BaseModel]) -> BaseModel | None:
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
