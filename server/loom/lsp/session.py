"""Open ``loom:`` documents: their text, node ranges, pending work, and commits.

A server-side change (a commit that re-renders, a sibling switch, streamed generation) is
sent to the client as a minimal edit and recorded as a *target*: when the client's
didChange brings the text to the target's text, the session adopts the target's node
ranges. Anything else the client sends is the human typing, tracked edit by edit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from loom.lsp.buffer import BufferSession, Segment
from loom.lsp.views import View, path_text, render
from loom.store.schema import BufferState, Node, Participant, Tree
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)


@dataclass
class Target:
    text: str
    segments: list[Segment]


@dataclass
class OpenDoc:
    uri: str
    view: View
    session: BufferSession
    targets: list[Target] = field(default_factory=list)
    client_version: int = 0
    generating: bool = False
    opened_seq: int = 0  # the change log's position when the editor opened it

    @property
    def kind(self) -> str:
        return self.view.kind

    @property
    def tree(self) -> Tree | None:
        return self.view.tree

    @property
    def text(self) -> str:
        return self.session.text


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
        #: uri → other dead sessions' uncommitted work found when the buffer was opened
        self.orphans: dict[str, list[BufferState]] = {}

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
        view = render(self.ws, uri, self.participant, tip)
        if view.kind != "path" or state is None:
            return view
        pending = {p["node"]: p["content"] for p in state.pending or []}
        parts, segments, offset = [], [], 0
        for seg in view.segments:
            content = pending.get(seg.node, seg.original) if seg.node else seg.original
            segments.append(Segment(seg.node, seg.label, seg.by_model, offset,
                                    offset + len(content), seg.original, seg.editable,
                                    seg.editable and content != seg.original))
            parts.append(content)
            offset += len(content)
        view.text = "".join(parts) + (state.working or "")
        view.segments = segments
        return view

    def text_for(self, uri: str) -> tuple[str, View]:
        doc = self.open.get(uri)
        if doc is not None:
            return doc.text, doc.view
        view = self.restore_view(uri)
        return view.text, view

    def did_open(self, uri: str, text: str, version: int = 0) -> OpenDoc:
        view = self.restore_view(uri)
        session = BufferSession(view.text, copy_segments(view.segments), self.encoding)
        doc = OpenDoc(uri, view, session, client_version=version,
                      opened_seq=self.ws.last_change())
        self.open[uri] = doc
        if text != view.text:  # the client has text we did not render: keep it as edits
            edit = minimal_edit(view.text, text)
            if edit:
                session.apply(*edit)
        return doc

    def ensure(self, uri: str) -> OpenDoc:
        """An open document, or a transient one for clients that only read and save."""
        doc = self.open.get(uri)
        if doc is not None:
            return doc
        view = self.restore_view(uri)
        return OpenDoc(uri, view, BufferSession(view.text, copy_segments(view.segments),
                                                self.encoding))

    def did_close(self, uri: str) -> None:
        self.open.pop(uri, None)

    # ── client edits ──
    def did_change(self, doc: OpenDoc, start: int, end: int, new: str) -> list[int]:
        """Apply one client change; returns the node segments it touched."""
        edit = doc.session.apply(start, end, new)
        self._adopt_target(doc)
        return edit.touched

    def replace_all(self, doc: OpenDoc, text: str) -> None:
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
                doc.session.segments = copy_segments(target.segments)
                del doc.targets[: i + 1]
                return

    # ── server edits ──
    def propose(self, doc: OpenDoc, text: str,
                segments: list[Segment]) -> tuple[int, int, str] | None:
        """Record a target and return the minimal edit the client must apply (None when
        the text is already there, in which case the ranges are adopted at once)."""
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
        path = self.ws.path(doc.view.tip, prefer=(doc.view.tip.id,))
        _, segments = path_text(self.ws, doc.tree, path, self.ws.clock())
        # Build on what the client will have once our own edits arrive, so an edit in
        # flight (a command line just removed) is not undone.
        base_text = self.expected_text(doc)
        base_segments = self.expected_segments(doc)
        pending = {s.node: base_text[s.start:s.end] for s in base_segments if s.dirty}
        working = base_text[base_segments[-1].end:] if base_segments else base_text
        parts, out, offset = [], [], 0
        for seg in segments:
            content = pending.get(seg.node, seg.original) if seg.node else seg.original
            out.append(Segment(seg.node, seg.label, seg.by_model, offset, offset + len(content),
                               seg.original, seg.editable, seg.editable and
                               content != seg.original))
            parts.append(content)
            offset += len(content)
        return "".join(parts) + working, out

    def persist(self, doc: OpenDoc) -> None:
        """Keep this session's uncommitted work in the database (survives a restart)."""
        if doc.kind != "path" or doc.tree is None or doc.view.tip is None:
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
