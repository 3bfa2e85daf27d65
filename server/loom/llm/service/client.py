"""Finding, starting and stopping the shared model service; explaining its failures.

Blocking functions (file locks, process waits): the async provider calls them through
``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from loom.llm.base import ModelError
from loom.llm.service import crash
from loom.llm.service.paths import runtime_dir
from loom.llm.service.record import Files, ServiceRecord, ServiceSpec, alive
from loom.llm.service.setup import bundled_gguf, find_server

#: Continuations decoded together (llama-server's slots); a request for more is split.
PARALLEL = 4
#: Tokens of context all slots share (SmolLM2 was trained on 8,192).
CTX = 8192
#: Per sequence: what Loom budgets a prompt and its reply for.
SEQ_CTX = 2048
DEFAULT_IDLE_S = 600.0
START_TIMEOUT_S = 60.0
SETUP_HINT = ("run `loom model setup` (fetches llama.cpp's source and SmolLM2 from PyPI and "
              "builds a portable server: about 6 minutes, once)")


def idle_s() -> float:
    """How long an unused service lives (``LOOM_MODEL_IDLE_S``, default 10 minutes)."""
    try:
        return max(1.0, float(os.environ.get("LOOM_MODEL_IDLE_S", DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def model_threads() -> int:
    """Threads the model decodes with (``LOOM_MODEL_THREADS``): one core left for the
    editor and everything else. llama.cpp's threads wait for each other at every token, so
    a core another program holds stalls them all: on two cores, 50 tokens took 0.47 s with
    two threads and 0.79 s with one on an idle machine, but 1.6 s against 0.78 s with one
    core busy, and a generation crawled at 4 tokens/s beside code-server and a browser.
    A writer's machine is not idle while they write: the steady choice is the default."""
    cores = os.cpu_count() or 2
    try:
        wanted = int(os.environ.get("LOOM_MODEL_THREADS", "0"))
    except ValueError:
        wanted = 0
    if wanted > 0:
        return min(wanted, cores)
    return max(1, cores - 1)


def model_file(model: str) -> Path:
    """A profile's model as a file: a path to a .gguf, or the bundled SmolLM2."""
    candidate = Path(model).expanduser()
    if model.endswith(".gguf") or candidate.is_file():
        if not candidate.is_file():
            raise ModelError("config", f"local model file not found: {candidate}",
                             "point the profile's model at an existing .gguf file")
        return candidate.resolve()
    found = bundled_gguf()
    if found is None:
        raise ModelError("unavailable", "the bundled local model (SmolLM2) is not set up",
                         SETUP_HINT)
    return found.resolve()


def spec_for(model: str, parallel: int = PARALLEL) -> ServiceSpec:
    """The service that runs ``model`` with ``parallel`` slots (1: a process whose requests
    are decoded alone, one after another)."""
    path = model_file(model)
    server = find_server()
    if server is None:
        raise ModelError("unavailable", "the local model server is not set up on this "
                         "machine", SETUP_HINT)
    try:
        runtime = runtime_dir()
    except OSError as exc:
        raise ModelError("unavailable", f"no private runtime directory for the model: {exc}",
                         "set LOOM_RUNTIME_DIR to a directory only you can use") from exc
    return ServiceSpec(binary=str(server), model=str(path), alias=path.stem,
                       threads=model_threads(), parallel=parallel, ctx=CTX,
                       idle_s=idle_s(), runtime=str(runtime))


def files_of(spec: ServiceSpec) -> Files:
    return Files(Path(spec.runtime), spec.key)


def _live(record: ServiceRecord | None) -> bool:
    return record is not None and alive(record.supervisor_pid) and alive(record.server_pid)


def running(spec: ServiceSpec) -> ServiceRecord | None:
    """The live service for ``spec``, if there is one (no lock, no start)."""
    record = files_of(spec).read_record()
    return record if _live(record) else None


def ensure_running(spec: ServiceSpec, timeout_s: float = START_TIMEOUT_S) -> ServiceRecord:
    """The live service for ``spec``, started (by this process, under the lock) if none is."""
    files = files_of(spec)
    record = running(spec)
    if record is not None:
        return record
    with files.locked():
        record = files.read_record()
        if _live(record):
            assert record is not None
            return record
        if record is not None:
            _clear(record, files)
        return _start(spec, files, timeout_s)


def _start(spec: ServiceSpec, files: Files, timeout_s: float) -> ServiceRecord:
    instance = secrets.token_hex(8)
    fd = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "loom.llm.service.supervisor", spec.model_dump_json(),
             instance],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            close_fds=True)
    launcher.wait()  # the supervisor detaches at once (see supervisor.main)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = files.read_record()
        if record is not None and record.instance == instance:
            return record
        ended = files.read_exit()
        if ended is not None and ended.instance == instance:
            raise crash.died(ended, starting=True)
        time.sleep(0.02)
    raise ModelError("timeout", f"the local model did not start within {timeout_s:g} s",
                     f"read its log: {files.log}")


def _clear(record: ServiceRecord, files: Files) -> None:
    """A record whose processes are gone (or half gone): end what is left, forget it."""
    for pid in (record.server_pid, record.supervisor_pid):
        if alive(pid) and _is_ours(pid, record):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        files.record.unlink()


def _is_ours(pid: int, record: ServiceRecord) -> bool:
    """Whether ``pid`` still is the model server or its supervisor (pids are reused)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return record.instance.encode() in cmdline or record.binary.encode() in cmdline


def stop_record(record: ServiceRecord, files: Files, timeout_s: float = 10.0) -> None:
    with contextlib.suppress(OSError):
        os.kill(record.supervisor_pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (alive(record.supervisor_pid)
                                           or alive(record.server_pid)):
        time.sleep(0.05)
    _clear(record, files)


def stop_all(runtime: Path | None = None) -> int:
    """Stop every service recorded in ``runtime`` (default: the user's); how many."""
    runtime = runtime or runtime_dir()
    count = 0
    for path in sorted(runtime.glob("model-*.json")):
        if path.name.endswith(".exit.json"):
            continue
        files = Files(runtime, path.stem)
        record = files.read_record()
        if record is not None:
            stop_record(record, files)
            count += 1
    return count


def healthy(record: ServiceRecord, timeout_s: float = 2.0) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", record.port, timeout=timeout_s)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def explain(record: ServiceRecord, files: Files, waited_s: float) -> ModelError | None:
    """Why a request to ``record``'s service failed, if the service is the reason: it died
    (how, from the supervisor's exit record) or hangs (then it is killed, so the next
    request starts a fresh one). None: the service is fine; the error was something else."""
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        ended = files.read_exit()
        if ended is not None and ended.instance == record.instance:
            if ended.reason in ("idle", "stopped"):
                return ModelError("server", "the local model process was stopped while it "
                                  "was generating", crash.AGAIN)
            return crash.died(ended)
        server_up, supervisor_up = alive(record.server_pid), alive(record.supervisor_pid)
        if not server_up and not supervisor_up:
            return ModelError("server", "the local model process died", crash.AGAIN)
        # Both up and answering: the service is fine. Up but not answering may be a
        # process still dying (a SIGKILL takes effect when it is next scheduled, and under
        # load that was after the request failed: it read as "stopped answering"): wait
        # for its exit record until the deadline before calling it hung.
        if server_up and supervisor_up and healthy(record, timeout_s=1.0):
            return None
        time.sleep(0.05)
    if healthy(record):
        return None
    with contextlib.suppress(OSError):
        os.kill(record.server_pid, signal.SIGKILL)
    _wait_gone(record, files)
    return crash.hung(waited_s)


def _wait_gone(record: ServiceRecord, files: Files, timeout_s: float = 3.0) -> None:
    """Until a killed server's supervisor has noticed and forgotten it, so the next request
    cannot find it still recorded (a killed process takes a moment to be a zombie)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = files.read_record()
        if current is None or current.instance != record.instance:
            return
        time.sleep(0.02)
