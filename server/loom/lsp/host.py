"""What the feature objects need from the server — the workspace, the open documents, and
the client helpers — as a protocol (``Host``), and its implementation over pygls
(``ClientHost``, which the server inherits). Features depend on the protocol only, so no
feature imports the server (and the server imports every feature); a test can give them
a fake host instead."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp

from loom.errors import LoomError
from loom.lsp.messages import read_as_first
from loom.lsp.rpc import AnsweringServer
from loom.lsp.threads import on_loop

if TYPE_CHECKING:
    from loom.app import App
    from loom.commands import ast
    from loom.commands.context import Actor
    from loom.commands.results import Result
    from loom.lsp.buffer import Segment
    from loom.lsp.documents import Documents, OpenDoc
    from loom.lsp.settings import Settings
    from loom.store.schema import Tree

# The workspace and what works on it (the store, the executor, the commands) are imported
# when the workspace is first opened, not when the server starts: ``initialize`` is
# answered before they load (bench/bench_startup.py).

log = logging.getLogger(__name__)
SCHEME = "loom"
ASK_TIMEOUT_S = 600.0  # a question put to the human waits this long for a choice


class Host(Protocol):
    settings: Settings

    @property
    def app(self) -> App: ...

    @property
    def docs(self) -> Documents: ...

    @property
    def caps(self) -> lsp.ClientCapabilities: ...

    def doc(self, uri: str) -> OpenDoc | None:
        """The open (or a transient) document of a ``loom:`` URI, or None."""
        ...

    def actor(self, doc: OpenDoc | None) -> Actor:
        """Who acts for this editor session: in the document's tree, or (no document) in
        the participant's current tree, if any."""
        ...

    def execute_now(self, command: str | ast.Command, actor: Actor) -> Result:
        """Run a short command on the event loop (commits: the buffer must not move under
        them)."""
        ...

    async def execute(self, command: str | ast.Command, actor: Actor, *,
                      on_delta: Callable[[int, str], None] | None = None,
                      cancel: threading.Event | None = None,
                      on_done: Callable[[], None] | None = None) -> Result:
        """Run a command in a worker thread (the executor does blocking I/O); ``on_done``
        is called in that thread the moment the command has returned."""
        ...

    async def send_edit(self, doc: OpenDoc, text: str, segments: list[Segment]) -> bool:
        """Make the client's copy of ``doc`` read ``text`` with one minimal edit."""
        ...

    def notify_changed(self, uri: str) -> None: ...

    def notify_trees_changed(self, trees: list[str]) -> None:
        """``loom/treesChanged``: these trees changed (anywhere), for the editor's lists."""

    def refresh_decorations(self) -> None: ...

    def show(self, result: Result) -> None:
        """A command's result as a message in the editor."""
        ...

    def warn(self, text: str) -> None:
        """A warning in the editor (``window/showMessage``)."""
        ...

    def database_lost(self) -> None:
        """The database did not answer (a statement failed on a lost connection): say so
        once, keep what is typed, and commit it when it is back (``features/outage.py``)."""
        ...

    def status(self, doc: OpenDoc, message: str | None = None) -> None:
        """The ``loom/status`` notification for a document."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        """Run ``coro`` in the background, kept referenced until it ends; its failure is
        logged, never lost."""
        ...

    async def show_document(self, uri: str, selection: lsp.Range | None = None) -> bool: ...

    def roots(self) -> list[Path]:
        """The workspace folders the client opened (where the server may write files)."""
        ...

    async def ask(self, message: str, actions: list[str]) -> str | None:
        """``window/showMessageRequest``: the title the human chose, or None."""
        ...

    def notify_exploring(self, params: dict[str, Any]) -> None:
        """``loom/exploring``: an exploration's progress, to an editor that asked for it
        (``features/exploring.py``)."""
        ...

    def notify_clean(self, doc: OpenDoc) -> None:
        """``loom/clean``: the editor may show ``doc`` as saved (nothing uncommitted)."""
        ...


# ── what the implementation asks of the features (they import this module) ──
class _Generating(Protocol):
    @property
    def busy(self) -> bool: ...


class _CollaboratorStatus(Protocol):
    def status(self, tree: Tree | None) -> dict[str, Any] | None: ...


class _Traces(Protocol):
    async def refresh_traces(self) -> None: ...


class _Outage(Protocol):
    def lost(self) -> None: ...


def _then(fn: Callable[..., Result], done: Callable[[], None] | None, *args: Any) -> Result:
    try:
        return fn(*args)
    finally:
        if done is not None:
            done()


class ClientHost(AnsweringServer):
    """``Host`` over pygls: the workspace opened on first use, commands run through the
    executor (then the editor's traces refreshed), and the client spoken to. The server
    (``server.py``) subclasses it and sets the features it consults."""

    generation: _Generating
    collaborator: _CollaboratorStatus
    sync: _Traces
    outage: _Outage

    def __init__(self, db: str | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.db_arg = db
        self.participant_arg: str | None = None
        #: the client's initializationOptions, parsed into ``settings`` on first use
        self.initial_settings: Any = None
        self._settings: Settings | None = None
        self._warming: threading.Thread | None = None
        #: the warming thread's state, under ``_turn``: the modules a first open needs are
        #: in (``_core``); it may go on with the rest (``_go``); reads it gives way to
        #: (``_holds``); parked between two modules (``_parked``); go on whatever holds
        #: (``_urgent``: someone waits for all of it)
        self._turn = threading.Condition()
        self._core = threading.Event()
        self._go = self._urgent = self._parked = False
        self._holds = 0
        self._ready = False
        self._app: App | None = None
        self._docs: Documents | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        #: request id → the task of a running command that stops when it is cancelled
        self._cancellable: dict[Any, asyncio.Task[Any]] = {}

    # ── warming up ──
    def warm(self, core: tuple[str, ...], rest: tuple[str, ...],
             then: Callable[[], None] | None = None) -> None:
        """Import ``core`` (what a first open needs), then — once ``go_on`` or ``warmed``
        says so — ``rest`` and ``then``, in a thread, the loop answering meanwhile. The
        thread gives way between two modules while a first open is read (``reading``):
        sharing the interpreter, each would take twice as long. One thread imports at a
        time: two importing at once can deadlock on the import locks."""
        def one(name: str) -> None:
            try:
                importlib.import_module(name)
            except Exception:  # its first use says what is wrong, on its own path
                log.exception("could not import %s", name)

        def load() -> None:
            try:
                for name in core:
                    one(name)
            finally:
                self._core.set()
            for name in rest:
                self._give_way()
                one(name)
            if then is not None:
                self._give_way()
                try:
                    then()
                except Exception:  # only a head start: the first requests do it anyway
                    log.exception("warming up failed")

        self._warming = threading.Thread(target=load, name="loom-warm", daemon=True)
        self._warming.start()

    def _give_way(self) -> None:
        """In the warming thread: wait while it may not go on."""
        with self._turn:
            while not self._go or (self._holds and not self._urgent):
                self._parked = True
                self._turn.notify_all()
                self._turn.wait()
            self._parked = False

    def go_on(self) -> None:
        """The warming thread may import the rest now."""
        with self._turn:
            self._go = True
            self._turn.notify_all()

    def core_warmed(self) -> None:
        """Wait until what a first open needs is imported."""
        if self._warming is not None and self._warming is not threading.current_thread():
            self._core.wait()

    def warmed(self) -> None:
        """Wait for the warming thread, if it runs: what imports more of Loom calls this
        first (two threads importing the same modules at once can deadlock on the import
        locks). Only the first requests of a session ever wait."""
        thread = self._warming
        if thread is not None and thread is not threading.current_thread():
            with self._turn:
                self._go = self._urgent = True
                self._turn.notify_all()
            thread.join()
            self._warming = None

    def warming_done(self) -> None:
        """Wait for the warming thread to end at its own pace (reads still come first)."""
        thread = self._warming
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Around a read that may come before the session has started (an editor restoring
        its tabs asks for a path's text the moment it has said ``initialized``): what the
        read needs is imported and the workspace opened, and the warming thread, parked
        between two modules, waits until the read is answered."""
        thread = self._warming
        if self._ready or thread is None or thread is threading.current_thread():
            yield
            return
        self.core_warmed()
        with self._turn:
            self._holds += 1
            while not self._parked and not self._urgent and thread.is_alive():
                self._turn.wait(0.05)
        try:
            self.docs  # noqa: B018
            yield
        finally:
            with self._turn:
                self._holds -= 1
                self._turn.notify_all()

    def ready(self) -> None:
        """The session started (``start_session``), once: ``initialized`` calls this
        when the warming thread is done, and so does every handler's wrapper
        (``answers.py``) in case a request comes first. After that, a flag test."""
        if self._ready:
            return
        self.warmed()
        self._ready = True
        self.start_session()

    def start_session(self) -> None:
        """What the server does once before its first answer (``LoomServer``)."""

    # ── settings ──
    @property
    def settings(self) -> Settings:
        """The settings, parsed from ``initializationOptions`` when first read (after
        ``initialize`` is answered: pydantic is not loaded for it)."""
        if self._settings is None:
            self.warmed()
            from loom.lsp.settings import parse_settings

            self._settings, problem = parse_settings(self.initial_settings)
            if problem:
                log.warning(problem)
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._settings = value

    def initial_option(self, alias: str) -> Any:
        """One of ``initializationOptions`` as the client sent it (``initialize``'s answer
        depends on one, before the settings are parsed)."""
        raw = self.initial_settings
        if isinstance(raw, dict) and isinstance(raw.get("loom"), dict):
            raw = raw["loom"]
        return raw.get(alias) if isinstance(raw, dict) else None

    # ── the workspace ──
    @property
    def app(self) -> App:
        if self._app is None:
            self.core_warmed()
            from loom.app import open_app

            self._app = open_app(self._opening("database") or self.db_arg,
                                 participant=self._opening("participant") or
                                 self.participant_arg)
        return self._app

    def _opening(self, name: str) -> str | None:
        """``database`` or ``participant``: from the settings once they are parsed; before
        (a first open comes before pydantic is loaded), as the client sent it."""
        if self._settings is not None:
            return getattr(self._settings, name)  # type: ignore[no-any-return]
        value = self.initial_option(name)
        return value if isinstance(value, str) else None

    @property
    def docs(self) -> Documents:
        if self._docs is None:
            self.core_warmed()
            from loom.lsp.documents import Documents

            encoding = str(self.workspace.position_encoding or "utf-16")
            ws = self.app.ws
            # A name the workspace does not know starts with no permissions (Identity).
            who = self.app.me()
            self._docs = Documents(ws, who, encoding, ws.open_session(who))
        return self._docs

    @property
    def opened(self) -> bool:
        """Whether the workspace was opened (``initialized`` opens it)."""
        return self._docs is not None

    def doc(self, uri: str) -> OpenDoc | None:
        if not uri.startswith(f"{SCHEME}:"):  # a .loom file on disk, if open
            return self.docs.files.get(uri) if self.opened else None
        doc = self.docs.open.get(uri)
        if doc is not None:
            return doc
        try:
            return self.docs.ensure(uri)
        except LoomError:
            return None

    # ── acting ──
    def actor(self, doc: OpenDoc | None) -> Actor:
        who = self.docs.participant
        tree = doc.tree if doc is not None else None
        if tree is None:
            tree_id = who.current_tree
            tree = self.app.ws.tree_or_none(tree_id) if tree_id else None
            if tree is None and doc is not None:
                first = self.app.ws.trees()
                if not first:
                    raise LoomError("NOT_FOUND", "there are no trees yet",
                                    "create one: loom new TITLE")
                tree = first[0][0]
        from loom.commands.context import Actor

        return Actor(who, tree)

    def execute_now(self, command: str | ast.Command, actor: Actor) -> Result:
        result = self.app.executor.execute(command, actor)
        self.spawn(self.sync.refresh_traces(), "trace refresh")
        return result

    async def execute(self, command: str | ast.Command, actor: Actor, *,
                      on_delta: Callable[[int, str], None] | None = None,
                      cancel: Any = None, on_done: Callable[[], None] | None = None) -> Result:
        result = await asyncio.to_thread(_then, self.app.executor.execute, on_done, command,
                                         actor, on_delta, cancel)
        await self.sync.refresh_traces()
        return result

    @contextlib.contextmanager
    def cancellable(self, msg_id: Any, task: asyncio.Task[Any] | None) -> Iterator[None]:
        """While it runs, ``$/cancelRequest`` for ``msg_id`` cancels ``task``."""
        if msg_id is not None and task is not None:
            self._cancellable[msg_id] = task
        try:
            yield
        finally:
            if msg_id is not None:
                self._cancellable.pop(msg_id, None)

    def cancel_request(self, msg_id: Any) -> None:
        """``$/cancelRequest``: cancel the task of a cancellable command still running."""
        task = self._cancellable.pop(msg_id, None)
        if task is not None and not task.done():
            task.cancel()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        on_loop("ClientHost.spawn")
        task = asyncio.get_event_loop().create_task(coro, name=name)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task %s failed", name, exc_info=t.exception())

        task.add_done_callback(done)

    # ── talking to the client ──
    @property
    def caps(self) -> lsp.ClientCapabilities:
        return self.client_capabilities

    def roots(self) -> list[Path]:
        out = []
        for folder in self.workspace.folders.values():
            parsed = urlparse(folder.uri)
            if parsed.scheme == "file":
                out.append(Path(unquote(parsed.path)))
        root = self.workspace.root_path
        if root and not out:
            out.append(Path(root))
        return out

    async def send_edit(self, doc: OpenDoc, text: str, segments: list[Segment]) -> bool:
        """Bring the editor's copy of ``doc`` to ``text`` (one edit at a time per
        document, each computed from what the one before it leaves). The edit is
        computed before this yields to the loop: from the text the editor's last change
        left, so a change arriving meanwhile is one made on top of it (before: an empty
        open, then a typed "x", could find the "x" taken into the edit and replaced)."""
        async with doc.edit_lock:
            params = self._propose_edit(doc, text, segments)
            if params is None:
                return True
            sending = asyncio.ensure_future(self._apply_edit(doc, params))
            try:
                return await asyncio.shield(sending)
            except asyncio.CancelledError:
                # the caller gave up (a generation's flusher, cancelled): the edit is out,
                # and the next one must wait for its answer, or VS Code refuses the next
                with contextlib.suppress(BaseException):
                    await sending
                raise

    def _propose_edit(self, doc: OpenDoc, text: str, segments: list[Segment]
                      ) -> lsp.ApplyWorkspaceEditParams | None:
        """The edit to send (its target recorded), or None when there is none to send."""
        from loom.lsp.positions import TextDoc

        base = self.docs.expected_text(doc)
        edit = self.docs.propose(doc, text, segments)
        if edit is None:
            return None
        if doc.unseen:
            # no tab shows it: the editor reads the target text again (loom/read) and its
            # didChange adopts the target, as after an edit, without making it dirty
            self.notify_changed(doc.uri)
            return None
        start, end, new = edit
        base_doc = (doc.session.doc if base is doc.session.text
                    else TextDoc(base, self.docs.encoding))
        rng = lsp.Range(start=lsp.Position(*base_doc.position_at(start)),
                        end=lsp.Position(*base_doc.position_at(end)))
        text_edit = lsp.TextEdit(range=rng, new_text=new)
        ws_caps = self.caps.workspace
        versioned = bool(ws_caps and ws_caps.workspace_edit and
                         ws_caps.workspace_edit.document_changes)
        if versioned:
            wedit = lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=doc.uri,
                                                                          version=None),
                edits=[text_edit])])
        else:
            wedit = lsp.WorkspaceEdit(changes={doc.uri: [text_edit]})
        return lsp.ApplyWorkspaceEditParams(edit=wedit, label="Loom")

    async def _apply_edit(self, doc: OpenDoc, params: lsp.ApplyWorkspaceEditParams) -> bool:
        # request_client sends at once (before its first await), so a caller cancelled
        # meanwhile (a generation's stream flusher) still has its recorded target sent.
        try:
            result = await self.protocol.request_client(
                lsp.WORKSPACE_APPLY_EDIT, params, self.settings.client_timeout_s)
        except Exception as err:  # no answer in time, an error, an answer that is no result
            log.warning("applyEdit failed: %s", err)
            doc.targets.clear()
            return False
        if not result.applied:
            log.warning("client refused an edit of %s: %s", doc.uri, result.failure_reason)
            doc.targets.clear()
            return False
        return True

    def notify_changed(self, uri: str) -> None:
        self.protocol.notify("loom/documentChanged", {"uri": uri})
        ws_caps = self.caps.workspace
        if ws_caps is not None and getattr(ws_caps, "text_document_content", None) is not None:
            with contextlib.suppress(Exception):
                self.workspace_text_document_content_refresh(
                    lsp.TextDocumentContentRefreshParams(uri=uri))

    def notify_trees_changed(self, trees: list[str]) -> None:
        self.protocol.notify("loom/treesChanged", {"trees": trees})

    def refresh_decorations(self) -> None:
        ws_caps = self.caps.workspace
        if ws_caps is None:
            return
        for cap, fn in ((ws_caps.code_lens, self.workspace_code_lens_refresh),
                        (ws_caps.semantic_tokens, self.workspace_semantic_tokens_refresh),
                        (ws_caps.inlay_hint, self.workspace_inlay_hint_refresh)):
            if cap is not None and getattr(cap, "refresh_support", False):
                with contextlib.suppress(Exception):
                    fn(None)

    def show(self, result: Result) -> None:
        kind = lsp.MessageType.Info if result.ok else lsp.MessageType.Error
        self.window_show_message(lsp.ShowMessageParams(type=kind,
                                                       message=read_as_first(result.text)))

    def warn(self, text: str) -> None:
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                       message=text))

    def database_lost(self) -> None:
        self.outage.lost()

    def status(self, doc: OpenDoc, message: str | None = None) -> None:
        tip = doc.view.tip
        self.protocol.notify("loom/status", {
            "uri": doc.uri, "label": tip.label if tip else None,
            "node": tip.local_id if tip else None, "depth": tip.depth if tip else None,
            "generating": self.generation.busy, "message": message,
            "collaborator": self.collaborator.status(doc.tree),
            "title": doc.tree.title if doc.tree is not None else None})
        self.notify_clean(doc)

    def notify_exploring(self, params: dict[str, Any]) -> None:
        self.protocol.notify("loom/exploring", params)

    def notify_clean(self, doc: OpenDoc) -> None:
        """``loom/clean {uri, version}``: at this client version the document holds nothing
        uncommitted, so the editor may show it as saved (what it shows came from the tree,
        not from typing). Sent once the client has applied every edit of ours."""
        if doc.kind != "path" or doc.targets or doc.generating or doc.uri not in self.docs.open:
            return
        session = doc.session
        if session.pending() or session.working_text.strip():
            return
        self.protocol.notify("loom/clean", {"uri": doc.uri, "version": doc.client_version})

    async def show_document(self, uri: str, selection: lsp.Range | None = None) -> bool:
        try:
            result = await self.protocol.request_client(
                lsp.WINDOW_SHOW_DOCUMENT,
                lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection),
                self.settings.client_timeout_s)
        except Exception as err:
            log.info("showDocument failed: %s", err)
            return False
        return bool(result and result.success)

    async def ask(self, message: str, actions: list[str]) -> str | None:
        try:
            choice = await self.protocol.request_client(
                lsp.WINDOW_SHOW_MESSAGE_REQUEST, lsp.ShowMessageRequestParams(
                    type=lsp.MessageType.Info, message=message,
                    actions=[lsp.MessageActionItem(title=a) for a in actions]), ASK_TIMEOUT_S)
        except Exception as err:  # no answer (in time) is no choice
            log.info("showMessageRequest failed: %s", err)
            return None
        return choice.title if choice is not None else None
