"""A raw JSON-RPC client over the server's stdio: it sends any bytes, including frames no
real client library would produce, and records everything the server sends back.

pytest-lsp's client validates what it sends, so it cannot send a position as a string or
a batch; this one can. It answers the server's own requests by a per-method policy (a
result, ``null``, an error, or never), as a broken or slow editor would."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lsp.conftest import NO_MODEL_ENV, SERVER

# How the client answers the server's requests: "ok" (a sensible result), "null",
# "error" (a JSON-RPC error) or "never".
OK_ANSWERS: dict[str, Any] = {
    "workspace/applyEdit": {"applied": True},
    "window/showDocument": {"success": True},
    "window/showMessageRequest": None,
    "window/workDoneProgress/create": None,
    "workspace/configuration": [None],
}


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: Any) -> bytes:
    return frame(json.dumps(message).encode())


@dataclass
class RawClient:
    """One server process, driven frame by frame."""

    proc: asyncio.subprocess.Process
    stderr_path: Path
    answers: dict[Any, dict[str, Any]] = field(default_factory=dict)
    null_id: list[dict[str, Any]] = field(default_factory=list)  # errors with id null
    batches: list[list[Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    server_requests: list[dict[str, Any]] = field(default_factory=list)
    policy: dict[str, str] = field(default_factory=dict)
    choose: str | None = None  # the title to pick in a showMessageRequest, if any
    _next_id: int = 0
    _reader: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    async def start(cls, db: Path, env: dict[str, str] | None = None) -> RawClient:
        stderr_path = db.with_suffix(".stderr")
        err = stderr_path.open("wb")
        proc = await asyncio.create_subprocess_exec(
            *SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=err, env={**NO_MODEL_ENV, "LOOM_DB": str(db), **(env or {})},
            cwd=db.parent)
        err.close()
        client = cls(proc, stderr_path)
        client._reader = asyncio.get_running_loop().create_task(client._read())
        return client

    # ── sending ──
    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, message: Any) -> None:
        self.send_bytes(encode(message))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request(self, method: str, params: Any = None, *, omit_params: bool = False) -> int:
        msg_id = self.new_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if not omit_params:
            msg["params"] = params
        self.send(msg)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self, db: Path, **options: Any) -> dict[str, Any]:
        msg_id = self.request("initialize", {
            "processId": None, "rootUri": None, "capabilities": {
                "window": {"workDoneProgress": True, "showDocument": {"support": True}},
                "workspace": {"applyEdit": True,
                              "workspaceEdit": {"documentChanges": True}}},
            "initializationOptions": {"database": str(db),
                                      "documentProvider": "textDocumentContent",
                                      **options}})
        answer = await self.answer(msg_id)
        assert answer is not None and "result" in answer, answer
        self.notify("initialized", {})
        return answer["result"]  # type: ignore[no-any-return]

    # ── receiving ──
    async def answer(self, msg_id: Any, timeout: float = 15.0) -> dict[str, Any] | None:
        """The server's answer to request ``msg_id``, or None if none came in ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while msg_id not in self.answers:
            left = deadline - loop.time()
            if left <= 0 or self._reader is None or self._reader.done():
                return self.answers.get(msg_id)
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), min(left, 0.5))
        return self.answers[msg_id]

    async def settle(self, seconds: float = 0.3) -> None:
        """Let the server answer anything it is going to answer."""
        await asyncio.sleep(seconds)

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None, "the server sent a frame without Content-Length"
            body = json.loads(await out.readexactly(length))
            self._route(body)
            self._arrived.set()

    def _route(self, msg: Any) -> None:
        if isinstance(msg, list):
            self.batches.append(msg)
        elif "method" in msg and "id" in msg:
            self.server_requests.append(msg)
            self._answer_server(msg)
        elif "method" in msg:
            self.notifications.append(msg)
        elif msg.get("id") is None:
            self.null_id.append(msg)
        else:
            self.answers[msg["id"]] = msg

    def _answer_server(self, msg: dict[str, Any]) -> None:
        how = self.policy.get(msg["method"], "ok")
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if how == "never":
            return
        if how == "null":
            reply["result"] = None
        elif how == "error":
            reply["error"] = {"code": -32603, "message": "the editor failed"}
        elif msg["method"] == "window/showMessageRequest" and self.choose is not None:
            reply["result"] = {"title": self.choose}
        else:
            reply["result"] = OK_ANSWERS.get(msg["method"])
        self.send(reply)

    # ── ending ──
    async def exit_code(self, timeout: float = 15.0) -> int | None:
        """The process's exit code, or None if it is still running after ``timeout``."""
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            return None

    async def close(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
