"""The ``tree`` drawing of seed 000: chains joined by ``→``, branch points by ``├→``/``└→``.

```
Root [r001] → ... → [a7x2]* (you are here)
                    ├→ [b3k9] → [e6p4] → [f7q8] (leaf)
                    ├→ [c4m2] → [g8r2] (leaf)
                    └→ [d5n7] (leaf)
```

A pure function of the continuations the caller gathered (``Workspace.continuation_map``
reads exactly what a drawing of a given depth needs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass

MAX_CHILDREN = 12  # per branch point; the rest are counted, not drawn (nor gathered)
MAX_LINES = 400


@dataclass(frozen=True)
class Item:
    id: str
    label: str


#: Node id → its continuations in sibling order; a node that is not a key has none.
Children = Mapping[str, Sequence[Item]]
Kids = Callable[[str], Sequence[Item]]


HERE = " (you are here)"


def _mark(item: Item, current: str | None) -> str:
    """``[b3k9]``, or ``[a7x2]* (you are here)`` for the current node, wherever it is
    drawn, not only where the drawing starts."""
    return f"[{item.label}]" + (f"*{HERE}" if item.id == current else "")


def draw(head: str, start: Item, children: Children, depth: int,
         current: str | None, keep: Set[str] = frozenset()) -> list[str]:
    """Lines of the drawing. ``head`` is the text before the start node (``Root [r001] →
    ... → ``); the start node's branches hang under its own column. ``children`` must hold
    every node within ``depth`` levels of ``start`` (the first ``MAX_CHILDREN`` of each,
    and those in ``keep``). A continuation in ``keep`` (your path) is drawn even past a
    branch point's ``MAX_CHILDREN``, in its place among the ones counted, not drawn."""
    table = children

    def kids(node_id: str) -> Sequence[Item]:
        return table.get(node_id, ())

    lines: list[str] = []
    first = head + _mark(start, current)
    children = kids(start.id)
    while len(children) == 1 and depth > 0:  # a single line of descent stays on one line
        node = children[0]
        first += " → " + _mark(node, current)
        depth -= 1
        head = first[: len(first) - len(_mark(node, current))]
        children = kids(node.id)
    if not children:
        first += " (leaf)"
    elif depth <= 0:
        first += f" → ... ({len(children)} more)"
    lines.append(first)
    if children and depth > 0:
        _branches(lines, " " * len(head), children, kids, depth, current, keep)
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"... ({len(lines) - MAX_LINES} more lines)"]
    return lines


def _shown(children: Sequence[Item], keep: Set[str]) -> list[Item | int]:
    """The first ``MAX_CHILDREN`` children, then any kept one: an ``int`` stands for that
    many children counted in its place, not drawn."""
    out: list[Item | int] = []
    for i, child in enumerate(children):
        if i < MAX_CHILDREN or child.id in keep:
            out.append(child)
        elif out and isinstance(out[-1], int):
            out[-1] += 1
        else:
            out.append(1)
    return out


def _branches(lines: list[str], prefix: str, children: Sequence[Item], kids: Kids,
              depth: int, current: str | None, keep: Set[str]) -> None:
    shown = _shown(children, keep)
    for i, child in enumerate(shown):
        last = i == len(shown) - 1
        connector = "└→ " if last else "├→ "
        if isinstance(child, int):
            lines.append(prefix + connector + f"... {child} more")
            continue
        line = prefix + connector
        node, remaining = child, depth - 1
        line += _mark(node, current)
        grand = kids(node.id)
        while len(grand) == 1 and remaining > 0:
            node, remaining = grand[0], remaining - 1
            line += " → " + _mark(node, current)
            grand = kids(node.id)
        if not grand:
            lines.append(line + " (leaf)")
            continue
        if remaining <= 0:
            lines.append(line + f" → ... ({len(grand)} more)")
            continue
        lines.append(line)
        column = len(line) - len(_mark(node, current))
        below = prefix + ("   " if last else "│  ")
        below = below + " " * (column - len(below))
        _branches(lines, below, grand, kids, remaining, current, keep)
        if len(lines) > MAX_LINES:
            return
