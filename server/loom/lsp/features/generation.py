"""Generation into the buffer: ``continue`` streams the first continuation into the text as
it arrives, with cancellable progress; the result lands as model nodes through the
executor like any ``→ continue``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass, field

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.context import PresetChoice
from loom.commands.handlers.content import checked_sampling, preset_of
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, copy_segments
from loom.lsp.features.diagnostics import Diagnostics
from loom.lsp.features.editing import Editing, base_segments
from loom.lsp.features.moves import Moves, ViewState
from loom.lsp.host import Host
from loom.lsp.messages import note_first
from loom.lsp.positions import TextDoc
from loom.render.text import plural, preview, quote

log = logging.getLogger(__name__)

STREAM_FLUSH_S = 0.08
PROVISIONAL = "…"


@dataclass
class Running:
    uri: str
    #: the ``→ continue`` line the writer typed (removed while it runs): put back, with its
    #: ✗ under it, when the generation fails
    line: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    streamed: list[str] = field(default_factory=list)
    #: the work has ended: the stream flusher stops even if its cancellation is lost
    #: (Python 3.11's wait_for returns an answer that arrives together with a cancel)
    finished: bool = False


async def outlast_cancellation(work: asyncio.Future[Result],
                                cancel: threading.Event) -> tuple[Result, bool]:
    """The worker's result, and whether the awaiting task was cancelled meanwhile. A
    cancelled task does not walk away from its worker thread (which would go on and
    commit): it sets ``cancel``, which stops the generation before anything is written,
    and waits for the worker to finish."""
    interrupted = False
    while True:
        try:
            return await asyncio.shield(work), interrupted
        except asyncio.CancelledError:
            interrupted = True
            cancel.set()
            if work.done():
                return work.result(), interrupted


class Generating:
    def __init__(self, host: Host, editing: Editing, diagnostics: Diagnostics,
                 progress: object, moves: Moves) -> None:
        self.host = host
        self.editing = editing
        self.diagnostics = diagnostics
        self.progress = progress  # pygls' work-done progress helper
        self.moves = moves  # an undo of a landing
        self.running: Running | None = None
        #: generations a save started, running on their own (continue_in_background)
        self.background: set[asyncio.Task[None]] = set()
        #: documents whose last editor tab closed while they generated (``loom/tabClosed``;
        #: VS Code keeps the document open for a while, so no didClose says so)
        self.closed_tabs: set[str] = set()

    @property
    def busy(self) -> bool:
        return self.running is not None

    def hold(self, uri: str) -> Running:
        """The one generation at a time taken for ``uri`` by another feature's model work
        (a fill), until ``release``."""
        self.running = Running(uri)
        return self.running

    def release(self) -> None:
        """The generation ended: another may start."""
        self.running = None

    def continue_in_background(self, uri: str, asked: syntax.Continue,
                               note: str | None = None, line: str | None = None) -> Result:
        """Start a generation that runs on its own (a save's ``→ continue`` line): the
        save answers at once, the continuations stream in and land in the tree whatever
        becomes of the request that started them, and their end is said as a message.
        ``loom.cancel`` stops it as any other."""
        async def run() -> None:
            try:
                result = await self.continue_(uri, asked, line)
            except Exception:  # the boundary of a task nobody awaits: say it, never lose it
                log.exception("a background generation failed")
                result = Result.failure("CONFLICT", "the generation failed inside Loom",
                                        "this is a bug in Loom; your text is kept")
            if note and result.ok:
                result.text = note_first(result.text, note)
            self.host.show(result)

        invalid = self.invalid(asked, uri)
        if invalid is not None:
            return invalid
        task = asyncio.ensure_future(run())
        self.background.add(task)  # held: a task only the loop references may be collected
        task.add_done_callback(self.background.discard)
        count = self.with_defaults(asked, self.preset(uri, asked)).total()
        read = f" {note}" if note else ""  # a typo's reading, where the editor shows it
        return Result.success(f"✓ generating {plural(count, 'continuation')}{read}… (they "
                              "land in the tree when done; cancel stops them)",
                              generating=True)

    async def continue_(self, uri: str, asked: syntax.Continue | None = None,
                        line: str | None = None) -> Result:
        """``asked`` as the person or program gave it (``→ continue …``, the editor's
        command), passed on whole: what it leaves out is the editor's default. ``line``:
        the command line it was typed as, put back if the generation fails."""
        host = self.host
        started = await self.start(uri, "continue works", asked or syntax.Continue(), line)
        if isinstance(started, Result):
            return started
        doc, run, cmd = started
        before = self.moves.state(doc)
        tip = doc.view.tip
        assert tip is not None
        loop = asyncio.get_running_loop()
        start = self._committed_end(doc)
        base = base_segments(doc)
        base_text = host.docs.expected_text(doc)

        def on_delta(index: int, piece: str) -> None:
            if index == 0 and not run.cancel.is_set():
                loop.call_soon_threadsafe(run.streamed.append, piece)

        doc.generating = doc.streaming = True
        host.status(doc, "generating…")
        token: str | None = None
        flusher: asyncio.Task[None] | None = None
        result: Result | None = None
        interrupted = False
        try:
            token = await self._progress_begin(
                f"Loom: generating {cmd.total()} from [{tip.label}]")
            flusher = asyncio.create_task(self._flush(doc, run, base_text, base, start,
                                                      token))
            # the model has stopped writing the moment the worker returns (its nodes are
            # committed): a move pressed then waits for the landing instead of being told
            # the model is still writing (under load that took a while to be seen here)
            work = asyncio.ensure_future(host.execute(
                cmd, host.actor(doc), on_delta=on_delta, cancel=run.cancel,
                on_done=lambda: setattr(doc, "streaming", False)))
            result, interrupted = await outlast_cancellation(work, run.cancel)
        except asyncio.CancelledError:  # the request was cancelled before it began
            interrupted = True
        finally:
            run.finished = True
            doc.streaming = False
            if flusher is not None:
                flusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await flusher
            self.running = None
            await self._progress_end(token)
        # The document stays "generating" until its final edit is out and its tip moved:
        # the change-log loop skips it meanwhile (else it re-renders from the old tip and
        # sends an edit that races ours, and the continuation reads as typed text).
        try:
            if interrupted:
                # $/cancelRequest: the work is stopped and nothing of it kept (unless the
                # nodes were written before the cancel reached the worker: then they show)
                self.closed_tabs.discard(uri)
                if result is not None and result.ok:
                    await self._show(doc, result, base_text, base, start)
                else:
                    await host.send_edit(doc, base_text, base)
                    host.status(doc, "generation cancelled")
                raise asyncio.CancelledError  # the request answers RequestCancelled
            assert result is not None
            return await self._land(doc, uri, run, result, base_text, base, start, before)
        finally:
            doc.generating = False

    def with_defaults(self, asked: syntax.Continue,
                      preset: PresetChoice | None = None) -> syntax.Continue:
        """``asked`` with the editor's defaults for what it and its sampler preset leave
        out (the one place they are applied). An explicit 0 is the writer's and is refused
        as the CLI refuses it (read with ``or``, it would be unset: n:0 would make three
        continuations)."""
        settings = self.host.settings
        base = preset.sampling if preset is not None else None

        def given(name: str, default: int) -> int:
            value = getattr(asked, name)
            if value is None and base is not None:
                value = getattr(base, name)
            return default if value is None else value

        return asked.model_copy(update={"n": given("n", settings.default_n),
                                        "tokens": given("tokens", settings.default_tokens)})

    def preset(self, uri: str | None, asked: syntax.Continue) -> PresetChoice | None:
        """The sampler preset ``asked`` samples with in ``uri``'s tree (named, or picked
        there); a ``LoomError`` when it names none there is."""
        if uri is None and asked.preset is None:
            return None
        host = self.host
        actor = host.actor(host.docs.ensure(uri) if uri else None)
        if actor.tree is None:
            return None
        return preset_of(host.app.ws, host.app.executor.subject, actor.participant,
                         actor.tree, asked.preset)

    def invalid(self, asked: syntax.Continue, uri: str | None = None) -> Result | None:
        """Why ``asked`` (with its preset and the editor's defaults) cannot run in
        ``uri``, before anything is committed or started for it; None when it can."""
        try:
            preset = self.preset(uri, asked)
            checked_sampling(self.with_defaults(asked, preset), preset)
        except LoomError as err:
            return Result.from_error(err)
        return None

    async def start(self, uri: str, what: str, asked: syntax.Continue, line: str | None = None
                    ) -> tuple[OpenDoc, Running, syntax.Continue] | Result:
        """A generation from the end of ``uri``'s path (``what`` names it where it cannot
        run): the typed text committed first, the run registered (one at a time), and the
        ``continue`` to execute; a ``Result`` when it cannot start."""
        host = self.host
        doc = host.docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return Result.failure("INVALID_SYNTAX", f"{what} in a path document",
                                  "open loom://path/TREE/NODE")
        if self.running is not None:
            return Result.failure("CONFLICT", "a generation is already running",
                                  "wait for it, or cancel it")
        invalid = self.invalid(asked, uri)
        if invalid is not None:
            return invalid
        committed = await self.editing.commit_and_show(doc)
        if not committed.ok:
            return committed
        tip = doc.view.tip
        assert tip is not None
        self.running = Running(uri, line)
        # from the path's end, with the editor's defaults for what was not asked for;
        # everything else the command says goes on as it is
        cmd = self.with_defaults(asked, self.preset(uri, asked)).model_copy(
            update={"from_": tip.id})
        return doc, self.running, cmd

    async def _land(self, doc: OpenDoc, uri: str, run: Running, result: Result,
                    base_text: str, base: list[Segment], start: int,
                    before: ViewState | None = None) -> Result:
        """The generation's result into the document: the first continuation as a node,
        or the text as it was (a failure, a cancel)."""
        host = self.host
        still_open = host.docs.open.get(uri) is doc
        # its tab closed: what lands reaches the document as a reload, not an edit
        # (send_edit), and a message says where the continuations went
        tab_gone = uri in self.closed_tabs or doc.unseen
        self.closed_tabs.discard(uri)
        if not result.ok:
            if run.cancel.is_set() and result.code == "MODEL_ERROR":
                # the user asked for it: not an error, and nothing was written
                result = Result.success("✓ generation cancelled: nothing was added",
                                        cancelled=True, created=[])
            if still_open:
                text = base_text
                if run.line and not result.ok:
                    # the writer's line back where it was, its ✗ under it, not the line
                    # gone and the ✗ on the last line of prose for good
                    text += ("\n" if text and not text.endswith("\n") else "") + run.line
                await host.send_edit(doc, text, base)
                if not result.ok:
                    last = TextDoc(text)
                    self.diagnostics.add(doc, run.line or last.line(last.line_count - 1),
                                         result)
                doc.generating = False
                host.status(doc, result.text)
                if tab_gone and not result.ok:
                    host.show(result)
            elif not result.ok:
                host.show(result)
            return result
        result = finished(host, result)
        if not still_open or tab_gone:
            # the tab closed while it ran: the continuations are in the tree; say where
            host.show(Result.success(f"{result.text.splitlines()[0]} in "
                                     f"\"{doc.tree.title if doc.tree else uri}\" (its tab "
                                     "was closed; they are in the tree)"))
        if still_open:
            await self._show(doc, result, base_text, base, start, before)
            if run.line:
                self.diagnostics.clear(doc, run.line)  # its ✗ of an earlier try, if any
            self.diagnostics.publish(doc)  # and those whose line is gone
        return result

    async def _show(self, doc: OpenDoc, result: Result, base_text: str,
                    base: list[Segment], start: int, before: ViewState | None = None) -> None:
        """The first continuation, committed, in place of the streamed text."""
        host = self.host
        first = host.app.ws.node(result.data["created"][0])
        seg = Segment(first.id, first.label, True, start, start + len(first.content),
                      first.content)
        # the tip first: a change-log catch-up while the edit is in flight must render
        # the path with the new node, not take it back out
        doc.view.tip = first
        await host.send_edit(doc, base_text[:start] + first.content + base_text[start:],
                             [*copy_segments(base), seg])
        self.editing.persist(doc)
        doc.generating = False
        if before is not None:
            self.moves.moved(doc, before)  # an undo takes the view back to before it
        host.status(doc, result.text.splitlines()[0])
        host.refresh_decorations()

    def _committed_end(self, doc: OpenDoc) -> int:
        segs = doc.targets[-1].segments if doc.targets else doc.session.segments
        return segs[-1].end if segs else 0

    async def _flush(self, doc: OpenDoc, run: Running, base_text: str,
                     base: list[Segment], start: int, token: str | None) -> None:
        shown = ""
        while not run.finished:  # not only the cancel: a cancel can be lost (Running)
            await asyncio.sleep(STREAM_FLUSH_S)
            if token and self._progress_cancelled(token):
                run.cancel.set()
            text = "".join(run.streamed)
            if text == shown or self.host.docs.open.get(doc.uri) is not doc or doc.unseen:
                continue  # nothing new, or its tab was closed: the nodes still land
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
            await asyncio.wait_for(asyncio.shield(progress.create_async(  # type: ignore[attr-defined]
                token)), self.host.settings.client_timeout_s)
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

    def tab_closed(self, uri: str) -> None:
        """The editor closed the last tab of ``uri``: if it is generating, the result will
        say where the continuations went."""
        if self.running is not None and self.running.uri == uri:
            self.closed_tabs.add(uri)

    def cancel(self) -> bool:
        if self.running is None:
            return False
        self.running.cancel.set()
        return True


def finished(host: Host, result: Result) -> Result:
    """The editor's answer once a generation has ended: ``✓ 3 continuations from [a7x2]``
    and one line per continuation (the seed's ``✓ generating …`` reads as still running
    when it arrives afterwards)."""
    ws = host.app.ws
    created = [ws.node(i) for i in result.data.get("created", [])]
    source = ws.find_node(result.data.get("source") or "")
    failures = result.data.get("failures") or []
    # a partial failure is said on the line the editor shows: ✓ 1 of 2 … (gpt-mini: no
    # API key); before, "✓ 1 continuation" hid it in the lines after
    made = (f"{len(created)} of {plural(len(created) + len(failures), 'continuation')}"
            if failures else plural(len(created), "continuation"))
    head = f"✓ {made}" + (f" from [{source.label}]" if source is not None else "")
    if failures:
        head += f" ({'; '.join(failures)})"
    models = result.data.get("models") or [""] * len(created)
    lines = [f"  [{c.label}] {quote(preview(c.content) or '(empty)')}"
             + (f" ({model})" if model else "") for c, model in zip(created, models, strict=False)]
    out = Result.success("\n".join([head, *lines]), **result.data)
    out.command = result.command
    return out
