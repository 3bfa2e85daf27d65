"""What the feature objects need from the server: the workspace, the open documents, and
the client helpers. The server implements it; features depend on this protocol only, so
no feature imports the server (and the server imports every feature)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

from loom.commands import ast
from loom.commands.context import Actor
from loom.commands.results import Result
from loom.lsp.buffer import Segment
from loom.lsp.session import Documents, OpenDoc
from loom.lsp.settings import Settings

if TYPE_CHECKING:
    import threading

    from loom.app import App


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
                      cancel: threading.Event | None = None) -> Result:
        """Run a command in a worker thread (the executor does blocking I/O)."""
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
