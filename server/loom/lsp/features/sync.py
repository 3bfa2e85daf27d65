"""Keeping open documents in step with the tree: what other participants and processes
change reaches the buffers through the change log, as minimal edits that keep what the
human is typing. The same loop keeps this editor session alive in the store, retries
commits that waited for a lock, and lets the collaborator notice its triggers.

On SQLite the loop reads the log every ``watch_interval``. On PostgreSQL a listener
(``LISTEN loom_changes``, a connection of its own) wakes it the moment another process or
machine commits a change; it still ticks every ``watch_interval`` for the heartbeat and the
collaborator, and reads the log then only as a safety net, every few seconds."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.documents import OpenDoc, minimal_edit
from loom.lsp.features.collaborator import Collaborator
from loom.lsp.features.editing import Editing
from loom.lsp.features.outage import Outage
from loom.lsp.host import Host
from loom.lsp.views import parse_uri, render
from loom.store.backend import unreachable
from loom.store.feed import ChangeCursor, ChangeListener

log = logging.getLogger(__name__)
HEARTBEAT_EVERY_S = 5.0
SAFETY_READ_EVERY_S = 5.0  # with a listener: read the log anyway this often


class ChangeSync:
    def __init__(self, host: Host, editing: Editing, collaborator: Collaborator,
                 outage: Outage) -> None:
        self.host = host
        self.editing = editing
        self.collaborator = collaborator
        self.outage = outage
        self.cursor: ChangeCursor | None = None
        self.listener: ChangeListener | None = None
        self._last_beat = 0.0
        self._last_read = 0.0
        self._woken: asyncio.Event | None = None

    @property
    def seen(self) -> int:
        return self.cursor.seen if self.cursor is not None else 0

    def start(self) -> None:
        ws = self.host.app.ws
        self.cursor = ChangeCursor(ws, start=self.host.docs.changes_from)
        self._woken = asyncio.Event()
        loop = asyncio.get_event_loop()
        self.listener = ws.listen(lambda: loop.call_soon_threadsafe(self._wake),
                                  lambda: loop.call_soon_threadsafe(self.host.database_lost))
        self.host.spawn(self._watch(), "change-log sync")

    def _wake(self) -> None:
        assert self._woken is not None
        self._woken.set()
        if self.outage.down:
            self.outage.nudge()  # (the listener is back: the database likely is)

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.stop()

    async def _watch(self) -> None:
        assert self._woken is not None
        loop = asyncio.get_running_loop()
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), self.host.settings.watch_interval_s)
            woken = self._woken.is_set()
            self._woken.clear()
            if self.outage.down:
                continue  # nothing to read or beat until it answers (its probe says when)
            read = (self.listener is None or woken
                    or loop.time() - self._last_read >= SAFETY_READ_EVERY_S)
            steps = [self.beat, *([self.catch_up] if read else []), self.collaborator.tick]
            for step in steps:
                try:
                    await step()
                except Exception as err:
                    if unreachable(err):
                        self.host.database_lost()
                        break
                    log.exception("the change-log loop failed in %s", step.__name__)

    async def beat(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_beat >= HEARTBEAT_EVERY_S:
            self._last_beat = loop.time()
            self.host.app.ws.heartbeat(self.host.docs.session)
            if self.editing.blocked:  # a lock of a process that died is freed, its
                self.host.app.ws.reap_dead_locks()  # lock.release retrying the commit

    async def catch_up(self) -> None:
        ws = self.host.app.ws
        self._last_read = asyncio.get_running_loop().time()
        assert self.cursor is not None
        changes = self.cursor.poll()
        if not changes:
            return
        participant = self.host.docs.participant
        if any(c.kind == "participant.permissions" and c.entity == participant.id
               for c in changes):
            # granted or revoked elsewhere (``loom users``): act with them from now on
            fresh = ws.participant_by_id(participant.id)
            if fresh is not None:
                participant.permissions = fresh.permissions
                self.host.refresh_decorations()
        if self.editing.blocked and any(c.kind == "lock.release" for c in changes):
            for title in await self.editing.retry_blocked():
                self.host.show(Result.success(
                    f"✓ committed your text in {title} (the branch is free again)"))
        scored = {c.entity for c in changes if c.kind == "node.tokens"}
        if scored:  # another process scored text (→ score): its colours and marks
            self.host.scoring.forget(scored)  # type: ignore[attr-defined]
        me = self.host.docs.participant.id
        trees = {c.tree for c in changes if c.tree and _changes_paths(c.kind, c.actor, me)}
        content = [c for c in changes if not c.kind.startswith("lock.")]
        docs_changed = any(c.kind.startswith("document.") for c in content)
        turn_trees = {c.tree for c in content if c.kind == "agent.turn" and c.tree}
        deleted = {c.tree: (c.payload or {}).get("title", "") for c in content
                   if c.kind == "tree.delete" and c.tree}
        for tree_id, title in deleted.items():
            if any(d.tree is not None and d.tree.id == tree_id and d.kind == "path"
                   for d in self.host.docs.open.values()):
                # the editor is told, so nothing typed goes on being committed into the
                # deleted tree unheard of
                self.host.show(Result.failure(
                    "NOT_FOUND", f'tree "{title}" was deleted while you had it open',
                    f'what you type there is kept in the buffer, not saved: → undelete '
                    f'tree:"{title}" brings it back'))
        # a buffer-mode version made elsewhere of the node a buffer ends on takes its
        # place there, as the store moved the positions on it (Workspace.add_version)
        versions = {(c.payload or {}).get("edited_from"): c.entity for c in content
                    if c.kind == "node.version" and (c.payload or {}).get("mode") == "buffer"}
        # text a person appended (elsewhere) where a buffer ends: the buffer shows it, as
        # it shows their edits inside nodes (loom/documentChanged alone leaves it out)
        appended = {(c.payload or {}).get("parent"): c.entity for c in content
                    if c.kind == "node.continuation"}
        for doc in list(self.host.docs.open.values()):
            if doc.generating:
                continue
            if doc.kind == "path" and doc.tree is not None and doc.tree.id in trees:
                if doc.view.tip is None or ws.find_node(doc.view.tip.id) is None:
                    continue
                if doc.view.tip.id in versions:
                    self._follow_version(doc, versions[doc.view.tip.id])
                while doc.view.tip.id in appended and self._follow_append(
                        doc, appended[doc.view.tip.id]):
                    pass
                text, segments = self.host.docs.rerender_target(doc)
                sent = True
                if text != self.host.docs.expected_text(doc) or doc.rebased:
                    sent = await self.host.send_edit(doc, text, segments)
                self.editing.announce(doc)
                if not sent or self.host.settings.document_provider == "textDocumentContent":
                    # (an editor that took the edit has the text: a reload as well raced
                    # the next edit, a sibling switch, and put the old text back)
                    self.host.notify_changed(doc.uri)
            elif (doc.kind in ("tree", "trace") or (doc.kind == "doc" and docs_changed)
                  or (doc.kind == "conversation" and parse_uri(doc.uri).tree in turn_trees)):
                await self.refresh_readonly(doc)
        if trees or any(c.kind.startswith(("link.", "node.flags")) for c in content):
            self.host.refresh_decorations()  # lenses count links; hints show bookmarks
        # the editor's lists and pictures of trees (VS Code's Loom view, the tree picture)
        # follow what changed anywhere: a tree made from the CLI, continuations, renames
        touched = sorted({c.tree for c in content if c.tree and not c.kind.startswith(
            ("agent.", "participant."))})
        if touched:
            self.host.notify_trees_changed(touched)

    def _follow_version(self, doc: OpenDoc, version_id: str) -> None:
        """The buffer's end moves to the new version of the node it ended on, unless the
        human holds an unsaved edit of that node (their save makes a version of its own)."""
        tip = doc.view.tip
        assert tip is not None
        if any(s.dirty and s.node == tip.id for s in self.host.docs.expected_segments(doc)):
            return
        version = self.host.app.ws.find_node(version_id)
        if version is not None:
            doc.view.tip = version

    def _follow_append(self, doc: OpenDoc, node_id: str) -> bool:
        """The buffer's end moves on to ``node_id``, a continuation of it, when a person
        wrote it and it is the only one (no choice to make among siblings; a model's
        continuations are offered as siblings, never followed). What the human is typing
        stays after it."""
        ws, tip = self.host.app.ws, doc.view.tip
        assert tip is not None
        node = ws.find_node(node_id)
        if node is None or node.pruned or node.author_type != "human":
            return False
        if [c.id for c in ws.children(tip)] != [node.id]:
            return False
        doc.view.tip = node
        return True

    async def refresh_traces(self) -> None:
        """Open trace views of this participant show each command as it runs."""
        for doc in list(self.host.docs.open.values()):
            if doc.kind == "trace":
                await self.refresh_readonly(doc)

    async def refresh_readonly(self, doc: OpenDoc) -> None:
        try:
            text = render(self.host.app.ws, doc.uri, self.host.docs.participant).text
        except LoomError:
            return
        if doc.kind == "doc":
            # a document someone else saved: shown unless the human has unsaved changes
            if (doc.session.text == doc.view.text and text != doc.text
                    and minimal_edit(doc.text, text)):
                await self.host.send_edit(doc, text, [])
                doc.view.text = text
                if doc.view.doc is not None:  # a later save builds on what it shows
                    doc.view.doc = self.host.app.ws.document(doc.view.doc.name)
            return
        if text != doc.text:
            doc.session.doc.replace(0, len(doc.text), text)
            doc.view.text = text
            self.host.notify_changed(doc.uri)


#: Change kinds that never alter what a path document shows: summaries (a background
#: worker writes them by the thousand), locks, memory, the collaborator's turns and an
#: exploration's start, end and stop (its nodes are changes of their own).
_NOT_TEXT = ("node.summary", "tree.summary", "document.", "lock.", "memory.", "agent.turn",
             "participant.", "link.", "explore.", "node.tokens")


def _changes_paths(kind: str, actor: str | None, me: str) -> bool:
    """Whether a change can alter the text of an open path view: node and tree changes do;
    a position only when it is this participant's (moved from another process)."""
    if kind.startswith(_NOT_TEXT):
        return False
    if kind == "position":
        return actor == me
    return True
