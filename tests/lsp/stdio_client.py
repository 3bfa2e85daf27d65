"""A bare LSP client over a server process's stdio, for tests that kill the server.

pytest-lsp owns its server's lifetime; the crash tests need to start servers one after
another, send keystrokes at exact moments and ``SIGKILL`` the process in the middle of
typing. The servers are forked by ``Zygote`` (``tests/lsp/zygote.py``) so that fifty of
them do not spend the test importing. This client frames JSON-RPC itself, answers the
server's requests as an editor would (``workspace/applyEdit`` is applied to its copy of
the text and echoed back as a ``didChange``) and records every notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loom.lsp.positions import TextDoc

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "LOOM_SUBJECT": "none", "LOOM_NO_KEYRING": "1", "LOOM_SUMMARIES": "off"}


@dataclass
class StdioClient:
    """One server process (its pid and its stdio) and the editor's side of the talk."""

    pid: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    texts: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    edits_applied: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _reading: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self._reading = asyncio.create_task(self._read())

    # ── the wire ──
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def flush(self) -> None:
        await self.writer.drain()

    async def _read(self) -> None:
        out = self.reader
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                length = 0
                while (line := await out.readuntil(b"\r\n")) != b"\r\n":
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                self._dispatch(json.loads(await out.readexactly(length)))
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the server went away"))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:  # a response
            fut = self._waiting.pop(msg["id"], None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            return
        method, params = msg["method"], msg.get("params")
        if "id" not in msg:
            self.notifications.append((method, params))
            return
        result: Any = None
        if method == "workspace/applyEdit":
            self._apply_edit(params["edit"])
            result = {"applied": True}
        self._send({"id": msg["id"], "result": result})

    def _apply_edit(self, edit: dict[str, Any]) -> None:
        changes = dict(edit.get("changes") or {})
        for dc in edit.get("documentChanges") or []:
            changes.setdefault(dc["textDocument"]["uri"], []).extend(dc["edits"])
        for uri, edits in changes.items():
            for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"],
                                                  e["range"]["start"]["character"]),
                            reverse=True):
                doc = TextDoc(self.texts[uri])
                s, t = e["range"]["start"], e["range"]["end"]
                self.replace(uri, doc.offset_at(s["line"], s["character"]),
                             doc.offset_at(t["line"], t["character"]), e["newText"])
                self.edits_applied += 1

    async def request(self, method: str, params: Any, timeout: float = 30.0) -> Any:
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = fut
        self._send({"id": msg_id, "method": method, "params": params})
        answer = await asyncio.wait_for(fut, timeout)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    # ── the editor ──
    async def initialize(self, db: str | Path) -> None:
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": None,
            "capabilities": {"workspace": {"applyEdit": True,
                                           "workspaceEdit": {"documentChanges": True}},
                             "general": {"positionEncodings": ["utf-16"]}},
            "initializationOptions": {"database": str(db),
                                      "documentProvider": "textDocumentContent",
                                      "watchInterval": 0.2}})
        self.notify("initialized", {})

    async def read(self, uri: str) -> str:
        answer = await self.request("loom/read", {"uri": uri})
        return str(answer["text"])

    def open(self, uri: str, text: str) -> None:
        self.texts[uri], self.versions[uri] = text, 1
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "loom", "version": 1, "text": text}})

    def replace(self, uri: str, start: int, end: int, new: str) -> None:
        """Type: ``text[start:end] = new``, told to the server as an incremental change."""
        doc = TextDoc(self.texts[uri])
        a, b = doc.position_at(start), doc.position_at(end)
        self.texts[uri] = doc.text[:start] + new + doc.text[end:]
        self.versions[uri] += 1
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]},
            "contentChanges": [{"range": {"start": {"line": a[0], "character": a[1]},
                                          "end": {"line": b[0], "character": b[1]}},
                                "text": new}]})

    # ── ending ──
    async def kill(self) -> None:
        """``SIGKILL``, and wait until the process is gone (reaped by the zygote)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        await _gone(self.pid)
        await self._close()

    async def stop(self) -> None:
        """A clean shutdown, as an editor closing does."""
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            await self.flush()
        try:
            await asyncio.wait_for(_gone(self.pid), 10)
        except TimeoutError:
            await self.kill()
        await self._close()

    async def _close(self) -> None:
        self.writer.close()
        if self._reading is not None:
            await self._reading


async def _gone(pid: int) -> None:
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.005)


class Zygote:
    """``tests/lsp/zygote.py``: forks servers that have already imported Loom."""

    def __init__(self, proc: asyncio.subprocess.Process, fifos: Path) -> None:
        self.proc = proc
        self.fifos = fifos
        self.count = 0

    @classmethod
    async def start(cls, fifos: Path, stderr: Path) -> Zygote:
        with open(stderr, "ab") as err:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "tests.lsp.zygote", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=err, env=ENV, cwd=ROOT)
        fifos.mkdir(parents=True, exist_ok=True)
        return cls(proc, fifos)

    async def fork(self) -> StdioClient:
        """A new server process, its stdio connected to a new client."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.count += 1
        fifo_in, fifo_out = (self.fifos / f"{self.count}.{d}" for d in ("in", "out"))
        os.mkfifo(fifo_in)
        os.mkfifo(fifo_out)
        self.proc.stdin.write(f"{fifo_in} {fifo_out}\n".encode())
        await self.proc.stdin.drain()
        # the pid first: a zygote that failed to start answers nothing, not a hang below
        answer = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        assert answer.strip().isdigit(), f"the zygote did not fork: {answer!r}"
        pid = int(answer)
        # (each open waits for the child to open the other end, in the same order)
        to_server = await asyncio.to_thread(open, fifo_in, "wb", 0)
        from_server = await asyncio.to_thread(open, fifo_out, "rb", 0)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), from_server)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, to_server)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return StdioClient(pid, reader, writer)

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
