"""The model service's supervisor: ``python -m loom.llm.service.supervisor SPEC_JSON``.

A small process of its own (started detached by the first Loom process that needs the
model) that runs ``llama-server`` on a loopback port with a random key, writes the record
other Loom processes find it by once the model answers, and stays to:

- note how the server ended (signal or exit status, its last lines of output) in the exit
  record, so a client can say "died with SIGILL" instead of "connection refused";
- stop it when no request has come for ``idle_s`` seconds and no slot is busy;
- stop it when told to (SIGTERM), or when the record no longer names this instance.

It imports nothing heavy: no model code runs here either.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from loom.llm.service.record import ExitReason, ExitRecord, Files, ServiceRecord, ServiceSpec

POLL_S = 0.05
WATCH_S = 0.25
TAIL_LINES = 40
READY_LIMIT_S = 90.0  # past the client's wait (client.START_TIMEOUT_S)
LOG_LIMIT = 5_000_000  # bytes of the server's log kept across its runs


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(spec: ServiceSpec, port: int, key_file: Path) -> list[str]:
    return [
        spec.binary,
        "--model", spec.model,
        "--alias", spec.alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--api-key-file", str(key_file),  # not on the command line, where `ps` shows it
        "--ctx-size", str(spec.ctx),
        "--parallel", str(spec.parallel),
        "--kv-unified",  # the slots share one cache: one long prompt may use all of it
        "--threads", str(spec.threads),
        "--threads-http", str(max(2, spec.parallel + 1)),
        "--no-webui",
    ]


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if the supervisor dies (no orphaned model)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Supervisor:
    def __init__(self, spec: ServiceSpec, instance: str) -> None:
        self.spec = spec
        self.instance = instance
        self.files = Files(Path(spec.runtime), spec.key)
        self.api_key = secrets.token_urlsafe(24)
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.stopping: ExitReason | None = None

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        started = time.time()
        with contextlib.suppress(OSError):  # a service that ran for weeks: start the log anew
            if self.files.log.stat().st_size > LOG_LIMIT:
                os.truncate(self.files.log, 0)
        self.port = free_port()
        log = os.fdopen(os.open(self.files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
                        "ab")
        key_file = self.files.record.with_suffix(".key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(self.api_key + "\n")
        self.proc = subprocess.Popen(
            server_command(self.spec, self.port, key_file),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent, close_fds=True)
        threading.Thread(target=self._pump, args=(log,), daemon=True).start()
        ready = self._wait_ready()
        with contextlib.suppress(OSError):
            key_file.unlink()  # read at start; the record keeps it for clients
        if not ready:
            return self._finish(self.stopping or "start-failed")
        self.files.touch_used()
        self.files.write(self.files.record, ServiceRecord(
            instance=self.instance, supervisor_pid=os.getpid(), server_pid=self.proc.pid,
            port=self.port, api_key=self.api_key, model=self.spec.model,
            binary=self.spec.binary, started_at=started, ready_at=time.time()))
        return self._finish(self._watch())

    def _pump(self, log: object) -> None:
        """Copy the server's output to the log file, keeping its last lines."""
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            log.write(raw)  # type: ignore[attr-defined]
            log.flush()  # type: ignore[attr-defined]
            self.tail.append(raw.decode("utf-8", "replace").rstrip())

    def _wait_ready(self) -> bool:
        """Until the model answers; a server that never does is given up on (the client
        that started it stopped waiting too), never left running unrecorded."""
        assert self.proc is not None
        deadline = time.monotonic() + READY_LIMIT_S
        while (self.proc.poll() is None and self.stopping is None
               and time.monotonic() < deadline):
            if self._get("/health", timeout=1.0) == 200:
                return True
            time.sleep(POLL_S)
        return False

    def _watch(self) -> ExitReason:
        assert self.proc is not None
        while True:
            if self.stopping is not None:
                return self.stopping
            if self.proc.poll() is not None:
                return "crashed"
            record = self.files.read_record()
            if record is None or record.instance != self.instance:
                return "stopped"  # a client removed or replaced the record: it is not ours
            idle = time.time() - max(self.files.last_used(), record.ready_at)
            if idle > self.spec.idle_s and not self._busy():
                return "idle"
            time.sleep(WATCH_S)

    def _busy(self) -> bool:
        status, body = self._get_json("/slots")
        if status != 200 or not isinstance(body, list):
            return False
        return any(isinstance(s, dict) and s.get("is_processing") for s in body)

    def _finish(self, reason: ExitReason) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        time.sleep(0.1)  # let the pump read the server's last words
        record = self.files.read_record()
        if record is not None and record.instance == self.instance:
            with contextlib.suppress(OSError):
                self.files.record.unlink()
        self.files.write(self.files.exit, ExitRecord(
            instance=self.instance, reason=reason, returncode=self.proc.returncode,
            output_tail=list(self.tail), at=time.time()))
        return 0

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = "stopped"

    def _get(self, path: str, timeout: float) -> int:
        return self._get_json(path, timeout)[0]

    def _get_json(self, path: str, timeout: float = 2.0) -> tuple[int, object]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.api_key}"})
            response = conn.getresponse()
            data = response.read()
            try:
                return response.status, json.loads(data or b"null")
            except ValueError:
                return response.status, None
        except (OSError, http.client.HTTPException):
            return 0, None
        finally:
            conn.close()


def main(argv: list[str] | None = None) -> int:
    """Detach (a second fork, so no Loom process is left to reap it), then supervise; a
    failure before the server runs still leaves an exit record saying why."""
    argv = sys.argv[1:] if argv is None else argv
    spec = ServiceSpec.model_validate_json(argv[0])
    instance = argv[1]
    if os.fork() > 0:
        os._exit(0)
    supervisor = Supervisor(spec, instance)
    try:
        return supervisor.run()
    except Exception as exc:
        Files(Path(spec.runtime), spec.key).write(
            Files(Path(spec.runtime), spec.key).exit,
            ExitRecord(instance=instance, reason="start-failed", returncode=None,
                       output_tail=[*supervisor.tail, f"supervisor: {exc!r}"], at=time.time()))
        if supervisor.proc is not None and supervisor.proc.poll() is None:
            supervisor.proc.kill()
        return 1


if __name__ == "__main__":
    sys.exit(main())
