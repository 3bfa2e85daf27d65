"""Open ``loom:`` documents: their text, node ranges, pending work, and commits.

A server-side change (a commit that re-renders, a sibling switch, streamed generation) is
sent to the client as a minimal edit and recorded as a *target*: when the client's
didChange brings the text to the target's text, the session adopts the target's node
ranges. Anything else the client sends is the human typing, tracked edit by edit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types as lsp

from loom.lsp.buffer import BufferSession, Segment
from loom.lsp.merge import merge3
from loom.lsp.session_cache import SessionCache
from loom.lsp.threads import on_loop
from loom.lsp.views import View, path_text
from loom.store.schema import BufferState, Node, Participant, Tree
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)


@dataclass
class Target:
    text: str
    segments: list[Segment]


@dataclass(frozen=True)
class Rebased:
    """What became of the human's unsaved edit of a node that someone else versioned."""

    mine: str  # the label of the node the human was editing
    theirs: str  # the label of the version that took its place on the path
    author: str  # who made that version
    merged: bool  # re-applied onto their version; else kept as its own pending version


@dataclass
class OpenDoc:
    uri: str
    view: View
    session: BufferSession
    targets: list[Target] = field(default_factory=list)
    client_version: int = 0
    generating: bool = False
    #: one server edit of the document in flight at a time: an edit computed while another
    #: was being applied (a cancel's restore right after the last streamed piece) was
    #: refused by VS Code and the streamed text stayed
    edit_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)
    #: the model is still writing into it (its continuations are not nodes yet)
    streaming: bool = False
    opened_seq: int = 0  # the change log's position when the editor opened it
    #: The editor opened the path with text that is not the tree's (empty, or stale): its
    #: text is being replaced by the rendering, and until that lands nothing it holds is
    #: the human's work, so nothing is persisted or committed from it.
    out_of_step: bool = False
    #: What the editor's open text had that the rendering lacks (told to the human).
    discarded: str = ""
    #: Pending edits rebased onto other participants' versions, not yet told to the human;
    #: and every (edited node, their version) pair already told, so it is told once.
    rebased: list[Rebased] = field(default_factory=list)
    told: set[tuple[str, str]] = field(default_factory=set)
    #: The editor closed its last tab but keeps the document open (VS Code after "Don't
    #: Save"): an edit would make it dirty, and VS Code reopens every dirty file in a tab.
    #: The server's changes reach it as a reload (the target text through ``loom/read``)
    #: until a tab shows it again (``loom/tabClosed`` / ``loom/tabOpened``).
    unseen: bool = False
    #: The last move of the view (a sibling switch, a branch), for an undo in the editor:
    #: its text coming back is the move undone, not typing (ViewMove).
    last_move: ViewMove | None = None

    @property
    def kind(self) -> str:
        return self.view.kind

    @property
    def tree(self) -> Tree | None:
        return self.view.tree

    @property
    def text(self) -> str:
        return self.session.text


@dataclass
class ViewMove:
    """A move of the path view the server made (a sibling switch, a branch from a node):
    the text and node ranges before and after, and where the participant stood. An editor's
    undo brings ``before_text`` back as a change; it is read as the move undone (the view
    goes back), never as the human rewriting the other branch's nodes."""

    before_text: str
    before_segments: list[Segment]
    before: tuple[str, str]  # (position node id, tip id)
    after_text: str
    after_segments: list[Segment]
    after: tuple[str, str]

    def reversed(self) -> ViewMove:
        """The same move seen from its other end (an undo's redo is the move again)."""
        return ViewMove(self.after_text, self.after_segments, self.after,
                        self.before_text, self.before_segments, self.before)


def minimal_edit(old: str, new: str) -> tuple[int, int, str] | None:
    """The single replacement turning ``old`` into ``new`` (common prefix and suffix kept)."""
    if old == new:
        return None
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    return p, len(old) - s, new[p:len(new) - s]


def copy_segments(segments: list[Segment]) -> list[Segment]:
    return [Segment(s.node, s.label, s.by_model, s.start, s.end, s.original, s.editable,
                    s.dirty) for s in segments]


class Documents:
    """Every open loom: document of one editor session, for one participant.

    Uncommitted text is kept per editor session (``session``): two editors on one buffer
    never overwrite each other's. When a session died with uncommitted text, the next one
    to open the buffer takes the newest such text into the buffer and reports the others
    (``orphans``) so they can be committed rather than lost."""

    def __init__(self, ws: Workspace, participant: Participant, encoding: str,
                 session: str = "") -> None:
        self.ws = ws
        self.participant = participant
        self.encoding = encoding
        self.session = session
        self.open: dict[str, OpenDoc] = {}
        #: ``.loom`` files on disk the editor has open (``open_file``): apart from
        #: ``open``, whose documents are the workspace's and are kept, committed, followed
        self.files: dict[str, OpenDoc] = {}
        #: uri → other dead sessions' uncommitted work found when the buffer was opened
        self.orphans: dict[str, list[BufferState]] = {}
        #: uri → what became of kept edits whose nodes were versioned while no editor ran
        self.restored_notes: dict[str, list[Rebased]] = {}
        #: paths and views read again and again, kept until the change log says otherwise
        self.cache = SessionCache(ws, participant)
        #: the change log's position as the session began: it is followed from here
        #: (``features/sync.py``), so nothing committed after the first read is missed,
        #: however late the rest of the session starts
        self.changes_from = ws.last_change()

    # ── opening ──
    def _state_for(self, uri: str) -> BufferState | None:
        """This session's uncommitted work on the buffer, else the newest dead session's
        (the others are kept in ``orphans``)."""
        states = self.ws.buffer_states(uri, self.participant)
        own = next((s for s in states if s.session == self.session), None)
        if own is not None:
            return own
        dead = [s for s in states if not self.ws.session_alive(s.session)]
        if not dead:
            return None
        self.orphans[uri] = dead[1:]
        return dead[0]

    def restore_view(self, uri: str) -> View:
        """The view with this session's uncommitted work for it put back in."""
        state = self._state_for(uri) if uri.startswith("loom://path/") else None
        tip = self.ws.find_node(state.tip) if state else None
        working = state.working or "" if state else ""
        if state is not None and tip is not None and working:
            tip, working = self._committed_since(state, tip, working)
        view = self.cache.view(uri, tip)
        if view.kind != "path" or state is None:
            return view
        kept = {p["node"]: p["content"] for p in state.pending or []}
        pending = {}
        for node_id, content in kept.items():
            node = self.ws.find_node(node_id)
            if node is not None:
                pending[node_id] = (content, node.content)
        parts, segments, notes = self._overlay(view.segments, pending)
        self.restored_notes[uri] = notes
        view.text = "".join(parts) + working
        view.segments = segments
        return view

    def _committed_since(self, state: BufferState, tip: Node, working: str
                         ) -> tuple[Node, str]:
        """The state's end and working text, less what this participant committed of
        that text after the state was written. A server killed between a commit and the
        state's next write left the committed text in the state as still to commit: the
        next server showed it after the path again and a save committed it twice, or an
        editor reopening with the committed text had it replaced."""
        while working:
            lead = len(working) - len(working.lstrip("\n"))  # (a dialogue's blank lines)
            child = next((c for c in self.ws.children(tip)
                          if c.author_id == self.participant.id and c.created >= state.updated
                          and c.content and working[lead:].startswith(c.content)), None)
            if child is None:
                break
            tip, working = child, working[lead + len(child.content):]
        return tip, working

    def _overlay(self, segments: list[Segment], pending: dict[str, tuple[str, str]]
                 ) -> tuple[list[str], list[Segment], list[Rebased]]:
        """The rendered path's segments with the human's pending edits (node id → (their
        text, the committed text they were typed over)) put back in.

        A pending node no longer on the path was versioned by someone else meanwhile: the
        path shows that version now. The human's edit is re-applied onto it when the two
        edits merge; otherwise the human's text stays as a pending edit of the node it
        was typed into, so a commit makes it a version beside theirs. Nothing is lost."""
        on_path = {s.node for s in segments if s.node}
        gone = [n for n in pending if n not in on_path]
        moved: dict[str, str] = {}  # a version on the path → the pending node it replaced
        if gone:
            rows = self.ws.node_family_rows(gone + list(on_path))
            family = {nid: row[1] or nid for nid, row in rows.items()}
            for node_id in gone:
                for seg in segments:
                    if (seg.node and seg.node not in moved and seg.node not in pending
                            and family.get(seg.node) == family.get(node_id)):
                        moved[seg.node] = node_id
                        break
        parts: list[str] = []
        out: list[Segment] = []
        notes: list[Rebased] = []
        offset = 0
        for seg in segments:
            node, label, by_model, original = seg.node, seg.label, seg.by_model, seg.original
            if node is None:
                content = original
            elif node in pending:
                content = pending[node][0]
            elif node in moved:
                mine_id = moved[node]
                mine, base = pending[mine_id]
                merged = merge3(base, mine, original)
                edited, theirs = self.ws.node(mine_id), self.ws.node(node)
                notes.append(Rebased(edited.label, theirs.label,
                                     self.ws.participant_name(theirs.author_id),
                                     merged is not None))
                if merged is not None:
                    content = merged
                else:  # kept whole, still an edit of the node it was typed into
                    content, node, label = mine, edited.id, edited.label
                    by_model, original = edited.author_type == "model", base
            else:
                content = original
            out.append(Segment(node, label, by_model, offset, offset + len(content),
                               original, seg.editable, seg.editable and content != original))
            parts.append(content)
            offset += len(content)
        return parts, out, notes

    def text_for(self, uri: str) -> tuple[str, View]:
        doc = self.open.get(uri)
        if doc is not None:
            return doc.text, doc.view
        view = self.restore_view(uri)
        return view.text, view

    def peek(self, uri: str) -> View:
        """What a URI shows, for reading only (status, tips): the open document's view,
        else the cached rendering; nothing is opened."""
        doc = self.open.get(uri)
        return doc.view if doc is not None else self.cache.view(uri)

    def did_open(self, uri: str, text: str, version: int = 0) -> OpenDoc:
        """Open a document. The rendering of a path (committed nodes, and the uncommitted
        text kept for it) is the truth: an editor's open text that differs is not typing.
        Text it adds at the very end is kept (keys typed while no server ran); any other
        difference (an empty open, a stale copy) leaves the document ``out_of_step``
        until the caller has sent the rendering to the editor."""
        on_loop("Documents.did_open")
        view = self.restore_view(uri)
        session = BufferSession(view.text, copy_segments(view.segments), self.encoding)
        doc = OpenDoc(uri, view, session, client_version=version,
                      opened_seq=self.ws.last_change())
        for note in self.restored_notes.pop(uri, []):
            doc.told.add((note.mine, note.theirs))
            doc.rebased.append(note)
        self.open[uri] = doc
        if view.kind == "path" and not text.startswith(view.text):
            # Follow the editor's text (its next changes are positions in it), as a copy
            # whose node ranges mean nothing until the rendering is back in the editor.
            doc.out_of_step = True
            doc.discarded = "" if view.text.startswith(text) else text
            doc.session = BufferSession(text, [
                Segment(s.node, s.label, s.by_model, 0, 0, s.original, s.editable)
                for s in view.segments], self.encoding)
            return doc
        edit = minimal_edit(view.text, text)  # (for a path: text typed at its end)
        if edit:
            session.apply(*edit)
        return doc

    def open_file(self, uri: str, text: str, version: int = 0) -> OpenDoc:
        """A ``.loom`` file on disk: its text is the editor's, Loom keeps no copy; its
        command lines work in the participant's current tree (completion, hover, go to a
        node, run a line). Saving it is the editor's: it runs nothing."""
        on_loop("Documents.open_file")
        who = self.participant
        tree = self.ws.tree_or_none(who.current_tree) if who.current_tree else None
        view = View(uri, "file", text, False, "loom", tree=tree)
        doc = OpenDoc(uri, view, BufferSession(text, [], self.encoding),
                      client_version=version)
        self.files[uri] = doc
        return doc

    def ensure(self, uri: str) -> OpenDoc:
        """An open document, or a transient one for clients that only read and save."""
        doc = self.open.get(uri) or self.files.get(uri)
        if doc is not None:
            return doc
        view = self.restore_view(uri)
        return OpenDoc(uri, view, BufferSession(view.text, copy_segments(view.segments),
                                                self.encoding))

    def did_close(self, uri: str) -> None:
        on_loop("Documents.did_close")
        self.open.pop(uri, None)

    # ── client edits ──
    def did_change(self, doc: OpenDoc, start: int, end: int, new: str) -> list[int]:
        """Apply one client change; returns the node segments it touched."""
        on_loop("Documents.did_change")
        if end > start and new:
            # A client may write a span over text it only extends (VS Code's Tab on a
            # suggestion a word of which was accepted writes the whole of it over the
            # word, by then a node): only what changed is an edit, as if typed.
            trimmed = minimal_edit(doc.session.text[start:end], new)
            if trimmed is None:
                self._adopt_target(doc)
                return []
            start, end, new = start + trimmed[0], start + trimmed[1], trimmed[2]
        edit = doc.session.apply(start, end, new)
        self._adopt_target(doc)
        return edit.touched

    def apply_changes(self, doc: OpenDoc, changes: Sequence[Any]) -> list[int]:
        """A ``didChange``'s content changes, in order; returns the node segments touched."""
        on_loop("Documents.apply_changes")
        touched: list[int] = []
        for change in changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                text = doc.session.doc
                touched += self.did_change(
                    doc, text.offset_at(change.range.start.line, change.range.start.character),
                    text.offset_at(change.range.end.line, change.range.end.character),
                    change.text)
            else:
                self.replace_all(doc, change.text)
        return touched

    def replace_all(self, doc: OpenDoc, text: str) -> None:
        on_loop("Documents.replace_all")
        edit = minimal_edit(doc.session.text, text)
        if edit:
            doc.session.apply(*edit)
        self._adopt_target(doc)

    def _adopt_target(self, doc: OpenDoc) -> None:
        # The latest target with this text: a server edit that changed nothing (a
        # generation's final text, already streamed in) shares its text with the edit
        # before it, and only the later one has the final node ranges.
        for i in range(len(doc.targets) - 1, -1, -1):
            target = doc.targets[i]
            if target.text == doc.session.text:
                # Targets right after it with the same text (a final edit that changes no
                # text: a streamed continuation confirmed as a node) arrive as no change:
                # take the last of them, or it waits forever and its ranges are lost.
                while i + 1 < len(doc.targets) and doc.targets[i + 1].text == target.text:
                    i += 1
                    target = doc.targets[i]
                doc.session.segments = copy_segments(target.segments)
                del doc.targets[: i + 1]
                doc.out_of_step = False  # every target builds on the rendering
                return
        if (doc.out_of_step and len(doc.targets) == 1
                and doc.session.text.startswith(doc.targets[0].text)):
            # keys typed into the wrong open text before the rendering arrived, at its
            # end: the rendering with them as working text, as an open with them would be
            doc.session.segments = copy_segments(doc.targets.pop().segments)
            doc.out_of_step = False

    # ── server edits ──
    def propose(self, doc: OpenDoc, text: str,
                segments: list[Segment]) -> tuple[int, int, str] | None:
        """Record a target and return the minimal edit the client must apply (None when
        the text is already there, in which case the ranges are adopted at once)."""
        on_loop("Documents.propose")
        base = doc.targets[-1].text if doc.targets else doc.session.text
        edit = minimal_edit(base, text)
        if edit is None and not doc.targets:
            doc.session.segments = copy_segments(segments)
            return None
        doc.targets.append(Target(text, copy_segments(segments)))
        if edit is None:
            return None
        return edit

    def expected_text(self, doc: OpenDoc) -> str:
        return doc.targets[-1].text if doc.targets else doc.session.text

    def expected_segments(self, doc: OpenDoc) -> list[Segment]:
        return doc.targets[-1].segments if doc.targets else doc.session.segments

    def rerender_target(self, doc: OpenDoc) -> tuple[str, list[Segment]]:
        """The committed path re-rendered, with pending edits and working text kept."""
        assert doc.tree is not None and doc.view.tip is not None
        path = self.cache.path(doc.view.tip, prefer=(
            doc.view.tip.id, *self.ws.path_choices(self.participant, doc.tree)))
        _, segments = path_text(self.ws, doc.tree, path, self.ws.clock())
        # Build on what the client will have once our own edits arrive, so an edit in
        # flight (a command line just removed) is not undone.
        base_text = self.expected_text(doc)
        base_segments = self.expected_segments(doc)
        pending = {s.node: (base_text[s.start:s.end], s.original) for s in base_segments
                   if s.dirty and s.node}
        working = base_text[base_segments[-1].end:] if base_segments else base_text
        parts, out, notes = self._overlay(segments, pending)
        for note in notes:
            if (note.mine, note.theirs) not in doc.told:
                doc.told.add((note.mine, note.theirs))
                doc.rebased.append(note)
        return "".join(parts) + working, out

    def persist(self, doc: OpenDoc) -> None:
        """Keep this session's uncommitted work in the database (survives a restart)."""
        if doc.kind != "path" or doc.tree is None or doc.view.tip is None or doc.out_of_step:
            return
        session = doc.session
        pending = [{"node": session.segments[i].node, "content": session.segment_text(i)}
                   for i in session.pending() if session.segments[i].node]
        self.ws.save_buffer_state(doc.uri, self.participant, self.session, tree=doc.tree.id,
                                  tip=doc.view.tip.id, pending=pending,
                                  working=session.working_text)

    # ── helpers ──
    def node_at(self, doc: OpenDoc, offset: int) -> Node | None:
        if doc.kind != "path":
            return None
        i = doc.session.segment_at(offset)
        if i is None and offset == doc.session.committed_end and doc.session.segments:
            i = len(doc.session.segments) - 1
        if i is None:
            return None
        seg = doc.session.segments[i]
        return self.ws.find_node(seg.node) if seg.node else None
