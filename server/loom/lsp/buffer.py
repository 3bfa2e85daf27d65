"""Buffer mode (SPEC-NOTES): a path rendered as one editable text, tracked edit by edit.

Each committed node owns a range of the text; what follows the last node is the working
buffer. Edits move the ranges; text typed inside a node makes it *pending* (committed later
as a version node); text typed at the very end goes to the working buffer. Pure logic: no
store, no LSP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lsp.text import TextDoc


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
class Edit:
    """What one change did: which node segments it touched (in order)."""

    touched: list[int] = field(default_factory=list)
    working: bool = False


class BufferSession:
    """The text of one open path document and the node ranges inside it."""

    def __init__(self, text: str, segments: list[Segment], encoding: str = "utf-16") -> None:
        self.doc = TextDoc(text, encoding)
        self.segments = segments
        self.version = 0

    # ── reading ──
    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def committed_end(self) -> int:
        return self.segments[-1].end if self.segments else 0

    @property
    def working_text(self) -> str:
        return self.doc.text[self.committed_end:]

    def segment_text(self, i: int) -> str:
        s = self.segments[i]
        return self.doc.text[s.start:s.end]

    def segment_at(self, offset: int) -> int | None:
        """The node segment owning the character at ``offset`` (None in the working buffer)."""
        lo, hi = 0, len(self.segments) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            s = self.segments[mid]
            if offset < s.start:
                hi = mid - 1
            elif offset >= s.end:
                lo = mid + 1
            else:
                return mid
        return None

    def node_segment(self, node_id: str) -> int | None:
        for i, s in enumerate(self.segments):
            if s.node == node_id:
                return i
        return None

    def pending(self) -> list[int]:
        return [i for i, s in enumerate(self.segments) if s.dirty]

    # ── editing ──
    def apply(self, start: int, end: int, new: str) -> Edit:
        """Apply ``text[start:end] = new`` and move every range; return what it touched."""
        start, end = max(0, start), min(end, len(self.doc.text))
        edit = Edit()
        owner = self._owner_of_insert(start) if start == end else None
        delta = len(new) - (end - start)
        for i, s in enumerate(self.segments):
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
            seg = self.segments[i]
            seg.dirty = seg.editable and self.segment_text(i) != seg.original
        self.version += 1
        return edit

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
        for s in self.segments:
            if s.start < prev:
                s.start = prev
            if s.end < s.start:
                s.end = s.start
            prev = s.end

    # ── committing ──
    def mark_committed(self, i: int, node: str, label: str, content: str) -> None:
        s = self.segments[i]
        s.node, s.label, s.original, s.dirty = node, label, content, False
        self.version += 1

    def append_committed(self, node: str, label: str, by_model: bool, content: str) -> None:
        """The working buffer (or its start) became a node: give it a segment."""
        start = self.committed_end
        self.segments.append(Segment(node, label, by_model, start, start + len(content),
                                     content))
        self.version += 1
