"""A fake ``Host`` (``loom.lsp.host``) for the feature objects' unit tests: a real workspace
(a temporary SQLite file), and an editor that lives in a dict.

It records what the features tell the editor (messages, statuses, edits) and plays the
editor's part in an edit: ``send_edit`` applies the minimal edit to its copy of the text
and sends the ``didChange`` back through ``on_change`` (``Editing.changed``), as VS Code
and Neovim do. No pygls, no subprocess: each test runs in milliseconds."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lsprotocol import types as lsp

from loom.app import App
from loom.commands import syntax
from loom.commands.context import Actor
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, OpenDocuments
from loom.lsp.positions import TextDoc
from loom.lsp.settings import Settings

ENCODING = "utf-16"


def change(uri: str, version: int, before: str, start: int, end: int,
           new: str) -> lsp.DidChangeTextDocumentParams:
    """The ``didChange`` an editor sends for replacing ``before[start:end]`` by ``new``."""
    doc = TextDoc(before, ENCODING)
    rng = lsp.Range(lsp.Position(*doc.position_at(start)), lsp.Position(*doc.position_at(end)))
    return lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new)])


class FakeHost:
    """``Host`` over a real ``App``; the editor is ``self.client`` (uri → its text)."""

    def __init__(self, app: App) -> None:
        self.settings = Settings()
        self._app = app
        who = app.ws.human()
        self._docs = OpenDocuments(app.ws, who, ENCODING, app.ws.open_session(who))
        self.client: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        #: the editor's didChange handler (the server's is ``Editing.changed``)
        self.on_change: Callable[[lsp.DidChangeTextDocumentParams], None] | None = None
        self.shown: list[Result] = []
        self.warnings: list[str] = []
        self.statuses: list[tuple[str, str | None]] = []
        self.edits: list[tuple[str, str]] = []  # (uri, the editor's text after the edit)
        self.cleaned: list[str] = []
        self.refreshes = 0
        self.lost = 0
        self.backs: list[float] = []  # the outages' ends (``Outage.on_back``)
        self._tasks: set[asyncio.Task[Any]] = set()

    # ── the workspace ──
    @property
    def app(self) -> App:
        return self._app

    @property
    def docs(self) -> OpenDocuments:
        return self._docs

    @property
    def caps(self) -> lsp.ClientCapabilities:
        return lsp.ClientCapabilities()  # no progress, no refreshes: the plainest editor

    def doc(self, uri: str) -> OpenDoc | None:
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
        if tree is None and who.current_tree:
            tree = self.app.ws.tree_or_none(who.current_tree)
        return Actor(who, tree)

    def execute_now(self, command: str | syntax.Command, actor: Actor) -> Result:
        return self.app.executor.execute(command, actor)

    async def execute(self, command: str | syntax.Command, actor: Actor, *,
                      on_delta: Callable[[int, str], None] | None = None,
                      cancel: threading.Event | None = None,
                      on_done: Callable[[], None] | None = None) -> Result:
        try:
            return await asyncio.to_thread(self.app.executor.execute, command, actor,
                                           on_delta, cancel)
        finally:
            if on_done is not None:
                on_done()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for every background task (a commit on editing another node)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    # ── the editor ──
    def open(self, uri: str) -> OpenDoc:
        """The editor opens ``uri`` (its text read from the server, as loom/read does)."""
        text, _view = self.docs.text_for(uri)
        self.client[uri] = text
        self.versions[uri] = 1
        return self.docs.did_open(uri, text, 1)

    def type(self, uri: str, start: int, end: int, new: str) -> None:
        """The human replaces ``[start, end)`` of the editor's text by ``new``."""
        before = self.client[uri]
        self.client[uri] = before[:start] + new + before[end:]
        self._changed(uri, before, start, end, new)

    def append(self, uri: str, new: str) -> None:
        end = len(self.client[uri])
        self.type(uri, end, end, new)

    def _changed(self, uri: str, before: str, start: int, end: int, new: str) -> None:
        self.versions[uri] += 1
        params = change(uri, self.versions[uri], before, start, end, new)
        if self.on_change is not None:
            self.on_change(params)
        else:
            self.docs.did_change(self.docs.open[uri], start, end, new)

    async def send_edit(self, doc: OpenDoc, text: str, segments: list[Segment]) -> bool:
        edit = self.docs.propose(doc, text, segments)
        if edit is None:
            return True
        start, end, new = edit
        before = self.client[doc.uri]
        self.client[doc.uri] = before[:start] + new + before[end:]
        self.edits.append((doc.uri, self.client[doc.uri]))
        self._changed(doc.uri, before, start, end, new)
        return True

    def notify_changed(self, uri: str) -> None:
        pass  # only for documents no tab shows; these tests keep theirs shown

    def notify_trees_changed(self, trees: list[str]) -> None:
        pass

    def refresh_decorations(self) -> None:
        self.refreshes += 1

    def show(self, result: Result) -> None:
        self.shown.append(result)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def database_lost(self) -> None:
        self.lost += 1

    async def database_back(self, took: float) -> None:
        self.backs.append(took)

    def status(self, doc: OpenDoc, message: str | None = None) -> None:
        self.statuses.append((doc.uri, message))

    def notify_clean(self, doc: OpenDoc) -> None:
        self.cleaned.append(doc.uri)

    def notify_exploring(self, params: dict[str, Any]) -> None:
        pass  # explorations run in the language server tests (tests/lsp/test_exploring.py)

    async def show_document(self, uri: str, selection: lsp.Range | None = None) -> bool:
        return True

    def roots(self) -> list[Path]:
        return []

    async def ask(self, message: str, actions: list[str]) -> str | None:
        return None


class Subject:
    """A subject model that streams each continuation's pieces (index 0's through
    ``on_delta``) and returns them whole; with ``hold``, it streams the first piece and
    then waits for the request's cancel (a generation the human stops)."""

    def __init__(self, continuations: list[list[str]], hold: bool = False) -> None:
        self.continuations = continuations
        self.hold = hold
        self.started = threading.Event()

    def generate(self, request: Any, on_delta: Any = None) -> Any:
        pieces = self.continuations[0]
        for i, piece in enumerate(pieces):
            if on_delta is not None:
                on_delta(0, piece)
            self.started.set()
            if self.hold and i == 0:
                assert request.cancel is not None and request.cancel.wait(5.0)
                raise LoomError("MODEL_ERROR", "the generation was cancelled")
            if request.cancel is not None and request.cancel.wait(0.02):
                raise LoomError("MODEL_ERROR", "the generation was cancelled")
        comps = [SimpleNamespace(index=i, text="".join(self.continuations[
            i % len(self.continuations)]), finish_reason="stop", logprobs=None, usage=None)
            for i in range(request.n)]
        return SimpleNamespace(completions=comps, model="fake", provider="fake",
                               params={"n": request.n}, usage={}, latency_ms=1.0, raw=[])


class Features(SimpleNamespace):
    host: FakeHost
    wired: Any  # the table's features over the fake host (``lsp/wiring.py``)
    editing: Any
    generation: Any
    command_lines: Any
    suggestions: Any
    published: list[lsp.PublishDiagnosticsParams]


def features(db: Path) -> Features:
    """The editing features over a fake host, wired as ``server.py`` wires them (a fresh
    SQLite workspace at ``db``, no subject model until a test sets one); ``wired.get``
    gives any other feature of the table, built over the same host."""
    from loom.app import open_app
    from loom.lsp.features.command_lines import CommandLines
    from loom.lsp.features.editing import Editing
    from loom.lsp.features.generation import Generating
    from loom.lsp.features.suggestions import Suggestions
    from loom.lsp.wiring import FeatureSet

    host = FakeHost(open_app(db, use_default_subject=False))
    published: list[lsp.PublishDiagnosticsParams] = []
    wired = FeatureSet(host, {"publish": published.append, "progress": None,
                              "on_back": host.database_back})
    editing = wired.get(Editing)
    host.on_change = editing.changed
    return Features(host=host, wired=wired, editing=editing,
                    generation=wired.get(Generating), command_lines=wired.get(CommandLines),
                    suggestions=wired.get(Suggestions), published=published)
