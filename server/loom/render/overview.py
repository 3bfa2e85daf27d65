"""The tree overview for people (the seed's id-only ``tree`` drawing stays the model-facing
``→ tree`` output): each node's own text beside its id, one node a line; chains of single
continuations run down at one indentation and long ones collapse; branch points hang their
alternatives under ``├→``/``└→``; the current path (``●``), the position (``*``) and
bookmarks (``★``) are marked; every branch is a fold.

```
Tree: "The House at the End of the Lane" (buffer · 14 nodes · 3 branch points)
● your path   * your position   ★ bookmark   › model

● [r001] The house stood empty at the end of the lane.
● [a7x2] She hadn't visited since her mother's death,
├→ ● [b3k9] › and the windows seemed to watch her approach with something…
│  ● [c4m2]* She stopped at the gate.
└→ ○ ★[d5n7] › and the walnut trees had dropped their leaves across the…
```

A pure function of the rows the caller gathered (``store.reader.outline``); iterative, so a
100,000-node chain draws as well as a bushy tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from loom.model import marks
from loom.render.text import one_line, plural

EXCERPT = 72  # characters of text beside each id
RUN_KEEP = 2  # a long single-line run keeps this many nodes at each end
RUN_MAX = 6  # runs longer than this collapse
MAX_LINES = 3000


class Row(Protocol):
    id: str
    label: str
    text: str
    by_model: bool
    bookmarked: bool
    extra: str | None


@dataclass
class Overview:
    lines: list[str]
    #: (first line, last line) of each branch, 0-based, for folding
    folds: list[tuple[int, int]] = field(default_factory=list)
    #: line → the node it shows (document links, "open the node under the cursor")
    nodes: dict[int, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def excerpt(text: str, limit: int = EXCERPT) -> str:
    flat = one_line(text)
    if not flat:
        return "(no text)"
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(",;:—-– ") + "…"


def _line(row: Row, on_path: bool, here: bool) -> str:
    star = "★" if row.bookmarked else ""
    label = marks.bookmark_label(row.extra) if row.bookmarked else None
    tags = marks.tags_of(row.extra)
    tail = (f'  ★ "{label}"' if label else "") + ("  " + " ".join(f"#{t}" for t in tags)
                                                   if tags else "")
    notes = getattr(row, "notes", 0)
    if notes:  # the collaborator's notes show here too, counted
        tail += f"  ({notes} note{'s' if notes != 1 else ''})"
    others = getattr(row, "others", ())
    if others:  # the original and versions not shown: → switch to one shows it instead
        tail += "  (other versions: " + " ".join(f"[{o}]" for o in others) + ")"
    model = getattr(row, "model", None)  # siblings from several models: which wrote it
    judged = marks.judgement_of(row.extra)  # the exploration judge's score (→ explore)
    reason = excerpt(str(judged.get("reason") or ""), 60) if judged else ""
    score = (f"{judged['score']:g}/10 " + (f"({reason}) " if reason != "(no text)" else "")
             if judged else "")
    return (f"{'●' if on_path else '○'} {star}[{row.label}]{'*' if here else ''} {score}"
            f"{'› ' if row.by_model else ''}{f'({model}) ' if model else ''}"
            f"{excerpt(row.text)}{tail}")


def _chain(start: str, children: Mapping[str, Sequence[str]]) -> list[str]:
    """``start`` and the single continuations after it, up to a branch point or a leaf."""
    chain = [start]
    while len(children.get(chain[-1], ())) == 1:
        chain.append(children[chain[-1]][0])
    return chain


def _shown(chain: list[str], keep: set[str]) -> list[str | int]:
    """The chain with long runs collapsed to ``N`` (how many nodes are left out); nodes
    in ``keep`` (the position) always show."""
    if len(chain) <= RUN_MAX:
        return list(chain)
    out: list[str | int] = []
    hidden = 0
    for i, nid in enumerate(chain):
        if i < RUN_KEEP or i >= len(chain) - RUN_KEEP or nid in keep:
            if hidden:
                out.append(hidden)
                hidden = 0
            out.append(nid)
        else:
            hidden += 1
    return out


def draw(title: str, mode: str, root: str, rows: Mapping[str, Row],
         children: Mapping[str, Sequence[str]], path: Iterable[str],
         position: str | None, also: Sequence[str] = ()) -> Overview:
    """The overview of a tree: ``rows`` by id, ``children`` in sibling order, the ids on
    the current ``path`` and the ``position`` node; ``also``: other openings drawn after
    the root's tree (a dialogue tree's edited root)."""
    on_path = set(path)
    keep = {position} if position else set()
    branches = sum(1 for kids in children.values() if len(kids) > 1)
    head = [f'Tree: "{title}" ({mode} · {plural(len(rows), "node")} · '
            f"{plural(branches, 'branch point')})",
            "● your path   * your position   ★ bookmark   › model   (2 notes) annotated", ""]
    out = Overview(list(head))
    if root not in rows:
        out.lines.append("(empty tree)")
        return out
    # (node, prefix of its first line, prefix of the lines after it)
    stack: list[tuple[str, str, str, int]] = [(r, "", "", -1) for r in reversed(
        [root, *(a for a in also if a in rows)])]
    open_folds: list[tuple[int, int]] = []  # (start line, depth) of branches being drawn
    while stack:
        nid, first, rest, depth = stack.pop()
        while open_folds and open_folds[-1][1] >= depth >= 0:
            start, _ = open_folds.pop()
            out.folds.append((start, len(out.lines) - 1))
        if len(out.lines) >= MAX_LINES:
            out.lines.append(f"… the rest is not drawn ({plural(len(rows), 'node')} in all)")
            break
        chain = _chain(nid, children)
        if depth >= 0:
            open_folds.append((len(out.lines), depth))
        for i, item in enumerate(_shown(chain, keep)):
            prefix = first if i == 0 else rest
            if isinstance(item, int):
                out.lines.append(f"{prefix}┆ … {plural(item, 'more node')} in one line …")
                continue
            out.nodes[len(out.lines)] = item
            out.lines.append(prefix + _line(rows[item], item in on_path, item == position))
        kids = children.get(chain[-1], ())
        if len(kids) > 1:
            for k in reversed(range(len(kids))):
                last = k == len(kids) - 1
                stack.append((kids[k], rest + ("└→ " if last else "├→ "),
                              rest + ("   " if last else "│  "), depth + 1))
    while open_folds:
        start, _ = open_folds.pop()
        out.folds.append((start, len(out.lines) - 1))
    out.folds = sorted((a, b) for a, b in out.folds if b > a)
    return out
