"""The ambient line for a participant (seed 000): where they are, at a glance.

A pure function of what the caller gathered (``loom.app.App.ambient`` reads it through
``Workspace``): nothing here touches the store or the clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loom.render import formats as f
from loom.render.text import word_count


@dataclass(frozen=True)
class Where:
    """A participant's position, as the ambient line shows it."""

    label: str  # the node as view and tree show it: its localId, a7x2' for a version
    depth: int
    tree_title: str
    siblings: int = 0
    annotations: int = 0
    links: int = 0
    path_texts: Sequence[str] = ()  # the contents along the path, root first (buffer mode)
    permissions: Sequence[str] = ()  # the extended line's ⟨permissions:…⟩
    others: Sequence[tuple[str, str]] = ()  # (participant, node label) active elsewhere


def line(where: Where, buffer_variant: bool, extended: bool = False) -> str:
    """``⟨node:a7x2 mode:buffer doc:"…" words:n⟩`` in buffer mode; else ``⟨node:… depth:…
    siblings:… annotations:… links:…⟩``; with ``extended`` (seed 000: "when more
    orientation is needed") followed by the permissions and who else is active."""
    if buffer_variant:
        words = sum(word_count(text) for text in where.path_texts)
        first = f.ambient_buffer(where.label, where.tree_title, words)
    else:
        first = f.ambient(where.label, where.depth, where.siblings, where.annotations,
                          where.links)
    return f.ambient_extended(first, where.permissions, where.others) if extended else first
