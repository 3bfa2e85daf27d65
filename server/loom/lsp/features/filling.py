"""Fill from a selection (``loom.fill``): the selected span of one node gets ``n``
model-written alternatives, the text around it kept (``→ fill``).

The typed text is committed first; the selection must lie within one node. While the
model writes, the first alternative streams into the buffer in place of the span (cancel
stops it as it stops ``continue``: ``loom.cancel``, the progress' cancel, or the request's
own cancel, and the text goes back as it was); when it lands, the path shows the first
version, and the sibling picker lists the others beside the node."""

from __future__ import annotations

import asyncio
import contextlib

from loom.commands import syntax
from loom.commands.results import Result
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, copy_segments
from loom.lsp.features.editing import Editing
from loom.lsp.features.generation import (
    STREAM_FLUSH_S,
    Generating,
    Running,
    outlast_cancellation,
)
from loom.lsp.host import Host
from loom.lsp.positions import TextDoc


class Filling:
    def __init__(self, host: Host, editing: Editing, generation: Generating) -> None:
        self.host = host
        self.editing = editing
        #: the one generation a server runs at a time (``loom.cancel`` stops either)
        self.generation = generation

    def span(self, doc: OpenDoc, start: tuple[int, int], end: tuple[int, int]
             ) -> tuple[Segment, int, int] | Result:
        """The node segment holding the selection, and the selection's offsets in its
        node's text; a failure when it is not within one node."""
        docs = self.host.docs
        text = TextDoc(docs.expected_text(doc), docs.encoding)
        a, b = sorted((text.offset_at(*start), text.offset_at(*end)))
        for seg in docs.expected_segments(doc):
            if seg.node is not None and seg.start <= a and b <= seg.end:
                return seg, a - seg.start, b - seg.start
        return Result.failure("INVALID_SYNTAX", "select a span within one node's text",
                              "a selection across two nodes cannot be filled: select "
                              "part of one")

    async def fill(self, uri: str, start: tuple[int, int], end: tuple[int, int],
                   asked: syntax.Fill) -> Result:
        host, generation = self.host, self.generation
        doc = host.docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return Result.failure("INVALID_SYNTAX", "fill works in a path document",
                                  "open loom://path/TREE/NODE")
        if generation.running is not None:
            return Result.failure("CONFLICT", "a generation is already running",
                                  "wait for it, or cancel it")
        committed = await self.editing.commit_and_show(doc)
        if not committed.ok:
            return committed
        found = self.span(doc, start, end)
        if isinstance(found, Result):
            return found
        seg, a, b = found
        cmd = asked.model_copy(update={"node": seg.node, "start": a, "end": b,
                                       "span": None})
        run = generation.hold(uri)
        base_text = host.docs.expected_text(doc)
        base = copy_segments(host.docs.expected_segments(doc))
        loop = asyncio.get_running_loop()

        def on_delta(index: int, piece: str) -> None:
            if index == 0 and not run.cancel.is_set():
                loop.call_soon_threadsafe(run.streamed.append, piece)

        doc.generating = doc.streaming = True
        host.status(doc, "filling…")
        flusher = asyncio.create_task(self._flush(doc, run, base_text, base, seg, a, b))
        result: Result | None = None
        interrupted = False
        try:
            work = asyncio.ensure_future(host.execute(
                cmd, host.actor(doc), on_delta=on_delta, cancel=run.cancel,
                on_done=lambda: setattr(doc, "streaming", False)))
            result, interrupted = await outlast_cancellation(work, run.cancel)
        except asyncio.CancelledError:
            interrupted = True
        finally:
            run.finished = True
            doc.streaming = False
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            generation.release()
        try:
            if result is not None and result.ok:
                await self._show(doc)
                return result
            await host.send_edit(doc, base_text, base)  # the span as it was
            if interrupted:
                raise asyncio.CancelledError
            assert result is not None
            if run.cancel.is_set() and result.code == "MODEL_ERROR":
                result = Result.success("✓ fill cancelled: nothing was added",
                                        cancelled=True, created=[])
            host.status(doc, result.text)
            return result
        finally:
            doc.generating = False

    async def _flush(self, doc: OpenDoc, run: Running, base_text: str, base: list[Segment],
                     seg: Segment, a: int, b: int) -> None:
        """The first alternative as it streams, in place of the span."""
        shown = ""
        at, to = seg.start + a, seg.start + b
        while not run.finished:
            await asyncio.sleep(STREAM_FLUSH_S)
            text = "".join(run.streamed)
            if text == shown or self.host.docs.open.get(doc.uri) is not doc:
                continue
            shown = text
            shift = len(text) - (to - at)
            segs = copy_segments(base)
            for s in segs:
                if s is not None and s.start >= to and s.node != seg.node:
                    s.start += shift
                    s.end += shift
                elif s.node == seg.node and s.start == seg.start:
                    s.end += shift
            await self.host.send_edit(doc, base_text[:at] + text + base_text[to:], segs)

    async def _show(self, doc: OpenDoc) -> None:
        """The path as it is now: the first version in the node's place."""
        host = self.host
        ws = host.app.ws
        assert doc.tree is not None
        _node, doc.view.tip = ws.position(host.docs.participant, doc.tree)
        text, segments = host.docs.rerender_target(doc)
        await host.send_edit(doc, text, segments)
        self.editing.persist(doc)
        host.status(doc)
        host.refresh_decorations()
