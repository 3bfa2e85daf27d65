"""Generation into the buffer: ``continue`` streams the first continuation into the text as
it arrives, with cancellable progress; the result lands as model nodes through the
executor like any ``→ continue``."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field

from lsprotocol import types as lsp

from loom.commands import ast
from loom.commands.results import Result
from loom.lsp.buffer import Segment
from loom.lsp.features.diagnostics import Diagnostics
from loom.lsp.features.editing import Editing, base_segments
from loom.lsp.host import Host
from loom.lsp.session import OpenDoc, copy_segments
from loom.lsp.text import TextDoc

STREAM_FLUSH_S = 0.08
PROVISIONAL = "…"


@dataclass
class Running:
    uri: str
    cancel: threading.Event = field(default_factory=threading.Event)
    streamed: list[str] = field(default_factory=list)


class Generation:
    def __init__(self, host: Host, editing: Editing, diagnostics: Diagnostics,
                 progress: object) -> None:
        self.host = host
        self.editing = editing
        self.diagnostics = diagnostics
        self.progress = progress  # pygls' work-done progress helper
        self.running: Running | None = None

    @property
    def busy(self) -> bool:
        return self.running is not None

    async def continue_(self, uri: str, n: int | None = None, tokens: int | None = None,
                        temperature: float | None = None) -> Result:
        host = self.host
        doc = host.docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return Result.failure("INVALID_SYNTAX", "continue works in a path document",
                                  "open loom://path/TREE/NODE")
        if self.running is not None:
            return Result.failure("CONFLICT", "a generation is already running",
                                  "wait for it, or cancel it")
        committed = await self.editing.commit_and_show(doc)
        if not committed.ok:
            return committed
        tip = doc.view.tip
        assert tip is not None
        run = Running(uri)
        self.running = run
        cmd = ast.Continue.model_validate({
            "from": tip.id, "n": n or host.settings.default_n,
            "tokens": tokens or host.settings.default_tokens, "temperature": temperature})
        loop = asyncio.get_running_loop()
        start = self._committed_end(doc)
        base = base_segments(doc)
        base_text = host.docs.expected_text(doc)

        def on_delta(index: int, piece: str) -> None:
            if index == 0 and not run.cancel.is_set():
                loop.call_soon_threadsafe(run.streamed.append, piece)

        doc.generating = True
        host.status(doc, "generating…")
        token = await self._progress_begin(f"Loom: generating {cmd.n} from [{tip.label}]")
        flusher = asyncio.create_task(self._flush(doc, run, base_text, base, start, token))
        try:
            result = await host.execute(cmd, host.actor(doc), on_delta=on_delta,
                                        cancel=run.cancel)
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            doc.generating = False
            self.running = None
            await self._progress_end(token)
        if not result.ok:
            await host.send_edit(doc, base_text, base)
            last = TextDoc(base_text)
            self.diagnostics.add(doc, last.line(last.line_count - 1), result)
            host.status(doc, result.text)
            return result
        first = host.app.ws.node(result.data["created"][0])
        seg = Segment(first.id, first.label, True, start, start + len(first.content),
                      first.content)
        # The tip moves before the edit is awaited: the change-log loop may re-render the
        # buffer meanwhile, and from the old tip it would take the new text out again.
        doc.view.tip = first
        await host.send_edit(doc, base_text[:start] + first.content + base_text[start:],
                             [*copy_segments(base), seg])
        self.editing.persist(doc)
        host.status(doc)
        host.refresh_decorations()
        return result

    def _committed_end(self, doc: OpenDoc) -> int:
        segs = doc.targets[-1].segments if doc.targets else doc.session.segments
        return segs[-1].end if segs else 0

    async def _flush(self, doc: OpenDoc, run: Running, base_text: str,
                     base: list[Segment], start: int, token: str | None) -> None:
        shown = ""
        while True:
            await asyncio.sleep(STREAM_FLUSH_S)
            if token and self._progress_cancelled(token):
                run.cancel.set()
            text = "".join(run.streamed)
            if text == shown:
                continue
            shown = text
            segs = [*copy_segments(base),
                    Segment(None, PROVISIONAL, True, start, start + len(text), "", False)]
            await self.host.send_edit(doc, base_text[:start] + text + base_text[start:], segs)

    async def _progress_begin(self, title: str) -> str | None:
        window = self.host.caps.window
        if not (window and window.work_done_progress):
            return None
        token = f"loom-generate-{id(self)}-{asyncio.get_running_loop().time()}"
        progress = self.progress
        try:
            await asyncio.shield(progress.create_async(token))  # type: ignore[attr-defined]
            progress.begin(token, lsp.WorkDoneProgressBegin(  # type: ignore[attr-defined]
                title=title, cancellable=True))
        except Exception:
            return None
        return token

    def _progress_cancelled(self, token: str) -> bool:
        fut = getattr(self.progress, "tokens", {}).get(token)
        return bool(fut is not None and fut.cancelled())

    async def _progress_end(self, token: str | None) -> None:
        if token is None:
            return
        with contextlib.suppress(Exception):
            self.progress.end(token, lsp.WorkDoneProgressEnd())  # type: ignore[attr-defined]

    def cancel(self) -> bool:
        if self.running is None:
            return False
        self.running.cancel.set()
        return True
