"""Buffer mode (SPEC-NOTES): a path rendered as one editable text, tracked edit by edit.

Each committed node owns a range of the text; what follows the last node is the working
buffer. Edits move the ranges; text typed inside a node makes it *pending* (committed later
as a version node); text typed at the very end goes to the working buffer. Pure logic: no
store, no LSP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lsp.positions import TextDoc


@dataclass
class Segment:
    node: str | None  # node id; None for decoration (dialogue headers)
    label: str
    by_model: bool
    start: int
    end: int
    original: str  # the node's committed content
    editable: bool = True
    dirty: bool = False


@dataclass
class EditEffect:
    """What one change did: which node segments it touched (in order)."""

    touched: list[int] = field(default_factory=list)
    working: bool = False


class BufferSession:
    """The text of one open path document and the node ranges inside it.

    Typing is kept O(log n) in the number of nodes (a 2,000-node path): the edit's node is
    found by bisection, and the move of every range after it is *deferred* (one offset
    for all ranges from an index on) until someone reads the ranges; a key typed right
    after the last one adds to the same deferred offset. ``segments`` always gives the
    true ranges."""

    def __init__(self, text: str, segments: list[Segment], encoding: str = "utf-16") -> None:
        self.doc = TextDoc(text, encoding)
        self.version = 0
        self.segments = segments

    @property
    def segments(self) -> list[Segment]:
        """The node ranges, every deferred move applied."""
        self._settle(len(self._segments))
        return self._segments

    @segments.setter
    def segments(self, value: list[Segment]) -> None:
        self._segments = value
        self._shift_from, self._shift = len(value), 0  # ranges from here on are behind
        self._dirty: set[int] | None = None  # pending node indices (None: not known yet)
        self._committed: str | None = None  # the nodes' committed text, joined (realign)
        self.version += 1

    def _settle(self, upto: int) -> None:
        """Apply the deferred move to the ranges before index ``upto``."""
        if self._shift and self._shift_from < upto:
            d = self._shift
            for seg in self._segments[self._shift_from:upto]:
                seg.start += d
                seg.end += d
        if upto >= len(self._segments):
            self._shift_from, self._shift = len(self._segments), 0
        elif self._shift_from < upto:
            self._shift_from = upto

    def _bounds(self, i: int) -> tuple[int, int]:
        s = self._segments[i]
        d = self._shift if i >= self._shift_from else 0
        return s.start + d, s.end + d

    def _first_ending_after(self, offset: int, inclusive: bool) -> int:
        """The first range whose end is ≥ ``offset`` (> when not ``inclusive``)."""
        lo, hi = 0, len(self._segments)
        while lo < hi:
            mid = (lo + hi) // 2
            end = self._bounds(mid)[1]
            if end < offset or (not inclusive and end == offset):
                lo = mid + 1
            else:
                hi = mid
        return lo

    # ── reading ──
    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def committed_end(self) -> int:
        return self._bounds(len(self._segments) - 1)[1] if self._segments else 0

    @property
    def working_text(self) -> str:
        return self.doc.text[self.committed_end:]

    def segment_text(self, i: int) -> str:
        start, end = self._bounds(i)
        return self.doc.text[start:end]

    def segment_at(self, offset: int) -> int | None:
        """The node segment owning the character at ``offset`` (None in the working buffer)."""
        i = self._first_ending_after(offset, inclusive=False)
        if i < len(self._segments):
            start, end = self._bounds(i)
            if start <= offset < end:
                return i
        return None

    def node_segment(self, node_id: str) -> int | None:
        for i, s in enumerate(self._segments):
            if s.node == node_id:
                return i
        return None

    def pending(self) -> list[int]:
        if self._dirty is None:
            self._dirty = {i for i, s in enumerate(self._segments) if s.dirty}
        return sorted(self._dirty)

    def _mark(self, i: int) -> None:
        seg = self._segments[i]
        seg.dirty = seg.editable and self.segment_text(i) != seg.original
        if self._dirty is not None:
            if seg.dirty:
                self._dirty.add(i)
            else:
                self._dirty.discard(i)

    # ── editing ──
    def apply(self, start: int, end: int, new: str) -> EditEffect:
        """Apply ``text[start:end] = new`` and move every range; return what it touched."""
        start, end = max(0, start), min(end, len(self.doc.text))
        inside = self._inside(start, end)
        if inside is not None:
            return self._apply_inside(inside, start, end, new)
        segments = self.segments  # (every deferred move applied)
        edit = EditEffect()
        owner = self._owner_of_insert(start) if start == end else None
        delta = len(new) - (end - start)
        for i, s in enumerate(segments):
            if start == end:  # a pure insertion
                if i == owner:
                    s.end += delta
                    edit.touched.append(i)
                elif owner is not None and s.start >= start:
                    # (typing in the working buffer moves nothing: even an empty node
                    # at its start, such as a new tree's root, stays before it)
                    s.start += delta
                    s.end += delta
                continue
            if s.end <= start:
                continue
            if s.start >= end:
                s.start += delta
                s.end += delta
                continue
            head = max(0, start - s.start)
            tail = max(0, s.end - end)
            if not edit.touched:  # the first node the change overlaps takes the new text
                s.start = min(s.start, start)
                s.end = s.start + head + len(new) + tail
            else:
                s.start = start + len(new)
                s.end = s.start + tail
            edit.touched.append(i)
        if start == end and owner is None:
            edit.working = start >= self.committed_end
        elif end > self.committed_end:
            edit.working = True
        self._fix_order()
        self.doc.replace(start, end, new)
        for i in edit.touched:
            self._mark(i)
        self.version += 1
        if self.pending() and (len(new) > 1 or end - start > 1 or len(self.pending()) > 1):
            self.realign()
        return edit

    def _inside(self, start: int, end: int) -> int | None:
        """The one node an edit stays inside of (as the general walk would find it), or
        None when it reaches past a node, or into the working buffer."""
        if not self._segments:
            return None
        if start == end:  # an insertion belongs to the node it extends (_owner_of_insert)
            if start >= self.committed_end:
                return None
            i = self._first_ending_after(start, inclusive=True)
            if i < len(self._segments) and (self._bounds(i)[0] < start or start == 0 == i):
                return i
            return None
        i = self._first_ending_after(start, inclusive=False)
        if i < len(self._segments):
            s_start, s_end = self._bounds(i)
            if s_start <= start and end <= s_end:
                return i
        return None

    def _apply_inside(self, i: int, start: int, end: int, new: str) -> EditEffect:
        delta = len(new) - (end - start)
        if i >= self._shift_from:
            self._settle(i + 1)
        if self._shift and self._shift_from != i + 1:
            self._settle(len(self._segments))  # typing moved to an earlier node: once
        self._segments[i].end += delta
        if delta:
            if self._shift_from != i + 1:
                self._shift_from, self._shift = i + 1, 0
            self._shift += delta
            if self._shift_from >= len(self._segments):
                self._shift_from, self._shift = len(self._segments), 0
        working = end > self.committed_end  # (after the move, as the general walk has it)
        self.doc.replace(start, end, new)
        self._mark(i)
        self.version += 1
        if self._dirty and (len(new) > 1 or end - start > 1 or len(self._dirty) > 1):
            self.realign()
        return EditEffect(touched=[i], working=working)

    def _owner_of_insert(self, at: int) -> int | None:
        """Insertion at a boundary extends the node before it; at the very end it goes to
        the working buffer; at the start of the text, to the first node."""
        if at >= self.committed_end:
            return None
        for i, s in enumerate(self.segments):
            if s.start < at <= s.end or (at == 0 and i == 0):
                return i
        return None

    def _fix_order(self) -> None:
        prev = 0
        for s in self._segments:
            if s.start < prev:
                s.start = prev
            if s.end < s.start:
                s.end = s.start
            prev = s.end

    def realign(self) -> bool:
        """When the text begins with every node's committed text again (an undo of a
        deletion, a paste of what was cut), give each node its own range back: nothing is
        pending, and what follows is working text. Without it, an undo of ``ggdG`` read as
        every node emptied and the whole story typed anew at the end. Called after edits
        that can restore text (more than one character, or several nodes pending), so a
        keystroke costs one comparison of the text with the joined originals."""
        if self._committed is None:
            self._committed = "".join(s.original for s in self._segments)
        committed = self._committed
        if not self.doc.text.startswith(committed):
            return False
        offset = 0
        for s in self._segments:
            s.start, s.end = offset, offset + len(s.original)
            s.dirty = False
            offset = s.end
        self._shift_from, self._shift = len(self._segments), 0
        self._dirty = set()
        self.version += 1
        return True

    # ── committing ──
    def mark_committed(self, i: int, node: str, label: str, content: str) -> None:
        s = self._segments[i]
        s.node, s.label, s.original, s.dirty = node, label, content, False
        if self._dirty is not None:
            self._dirty.discard(i)
        self._committed = None
        self.version += 1

    def append_committed(self, node: str, label: str, by_model: bool, content: str) -> None:
        """The working buffer (or its start) became a node: give it a segment."""
        start = self.committed_end
        self.segments.append(Segment(node, label, by_model, start, start + len(content),
                                     content))
        self._committed = None
        self.version += 1
