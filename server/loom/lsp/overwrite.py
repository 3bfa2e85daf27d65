"""A commit that would wipe out the path: measured before it is made, so the editor can ask.

``ggdG`` then ``:w`` once made a version of every node, each empty, without a word; the
undo that followed committed the story again as one new node after them. A commit that
would take away most of the path's text (emptying it, or rewriting most of it) is held
back until the human chooses: keep the nodes as they are and put the new text on a branch
of its own after the last node left whole (``branch``), or make the versions anyway
(``replace``). Pure logic over the buffer's node ranges: no store, no LSP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom.lsp.buffer import BufferSession
from loom.render.text import plural

#: How the human answered: a branch after the last untouched node, or the versions.
Choice = Literal["branch", "replace"]
CHOICES: tuple[Choice, ...] = ("branch", "replace")

#: Share of the path's committed text a commit may take away before it asks.
MOST = 0.5


@dataclass(frozen=True)
class Overwrite:
    """What committing the buffer's pending node edits would take away."""

    nodes: int  # nodes with pending edits
    emptied: int  # of those, nodes whose text would be empty
    removed: int  # characters of committed text the edits remove or replace
    total: int  # characters of committed text on the path
    kept: int  # nodes at the start of the path left exactly as committed

    @property
    def share(self) -> float:
        return self.removed / self.total if self.total else 0.0

    @property
    def drastic(self) -> bool:
        """Takes away most of the path's committed text: worth a question first."""
        return self.nodes > 0 and self.share > MOST

    @property
    def can_branch(self) -> bool:
        """A branch needs a node to grow from: one left whole at the start of the path."""
        return self.kept > 0

    def describe(self) -> str:
        """``saving would empty 18 nodes of this path (all of its text)``"""
        share = ("all of its text" if self.removed >= self.total
                 else f"{round(100 * self.share)}% of its text")
        if self.emptied:
            what = f"empty {plural(self.emptied, 'node')}"
            if self.emptied < self.nodes:
                what += f" and rewrite {plural(self.nodes - self.emptied, 'other')}"
        else:
            what = f"rewrite {plural(self.nodes, 'node')}"
        return f"saving would {what} of this path ({share})"


def _removed(original: str, now: str) -> int:
    """Characters of ``original`` gone from ``now``: what lies between their common
    start and their common end (a rewrite of the middle counts its old length)."""
    head = 0
    limit = min(len(original), len(now))
    while head < limit and original[head] == now[head]:
        head += 1
    tail = 0
    while tail < limit - head and original[-1 - tail] == now[-1 - tail]:
        tail += 1
    return len(original) - head - tail


def measure(session: BufferSession) -> Overwrite:
    """What a commit of ``session`` now would take away from the path's nodes."""
    segments = session.segments
    pending = set(session.pending())
    nodes = emptied = removed = total = 0
    kept = 0
    counting_kept = True
    for i, seg in enumerate(segments):
        if seg.node is None:
            continue  # a dialogue header: not a node's text
        total += len(seg.original)
        if i not in pending:
            if counting_kept:
                kept += 1
            continue
        now = session.segment_text(i)
        # text typed right after a node is that node's (a boundary insertion): a node only
        # extended is whole, and the last one a branch can grow from
        if counting_kept and now.startswith(seg.original):
            kept += 1
        counting_kept = False
        nodes += 1
        if seg.original and not now.strip():
            emptied += 1
        removed += _removed(seg.original, now)
    return Overwrite(nodes, emptied, removed, total, kept)


def branch_point(session: BufferSession, kept: int) -> tuple[str, int] | None:
    """The node a branch grows from (the last of the ``kept`` whole nodes at the start of
    the path) and the offset where its committed text ends (what was typed after it is
    the branch's); None without one."""
    seen = 0
    for seg in session.segments:
        if seg.node is None:
            continue
        seen += 1
        if seen == kept:
            return seg.node, seg.start + len(seg.original)
    return None
