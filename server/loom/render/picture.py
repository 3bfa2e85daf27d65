"""The tree as a picture: every shown node a dot placed by depth (left to right) and by the
leaves below it (top to bottom), edges from each node to its continuations, the current
path and the position stressed, model and human text in their colours, bookmarks starred.

Two drawings of one layout: an SVG (the VS Code webview, a file for the browser), whose
``<g class="node" data-node="…">`` elements carry each node's id for clicks, and a text map
for a Neovim float (one cell a node; ``cells`` says which node is where).

A pure function of the rows the caller gathered (``store.reader.outline``); iterative.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from loom.model import marks
from loom.render.overview import Row  # the same rows draw both
from loom.render.text import one_line

DX, DY, R = 34, 22, 6  # SVG: column width, row height, dot radius
PAD = 24
MODEL_COLOUR = "#3b6fd8"
HUMAN_COLOUR = "#5f6b7a"
PATH_COLOUR = "#e07b00"


@dataclass
class Layout:
    """Each node's (row, depth); rows are counted in leaves."""

    at: dict[str, tuple[int, int]] = field(default_factory=dict)
    rows: int = 0
    depth: int = 0
    edges: list[tuple[str, str]] = field(default_factory=list)


def layout(root: str, children: Mapping[str, Sequence[str]]) -> Layout:
    """A node sits on the row of its first continuation (a chain is one row); each further
    continuation starts the next free row below the previous one's subtree."""
    out = Layout()
    if not root:
        return out
    stack: list[tuple[str, int]] = [(root, 0)]
    next_row = 0
    while stack:
        nid, depth = stack.pop()
        out.at[nid] = (next_row, depth)
        out.depth = max(out.depth, depth)
        kids = children.get(nid, ())
        for kid in kids:
            out.edges.append((nid, kid))
        if not kids:
            next_row += 1
        for kid in reversed(kids):
            stack.append((kid, depth + 1))
    out.rows = next_row
    return out


def svg(title: str, root: str, rows: Mapping[str, Row], children: Mapping[str, Sequence[str]],
        path: Iterable[str], position: str | None) -> str:
    """The picture as an SVG document; hovering a dot shows the node's text, and each
    node's group has ``data-node`` (its id) for the editor to open its path on a click."""
    lay = layout(root, children)
    on_path = set(path)
    width = PAD * 2 + (lay.depth + 1) * DX + 260
    height = PAD * 2 + max(lay.rows, 1) * DY + 20

    def xy(nid: str) -> tuple[int, int]:
        row, depth = lay.at[nid]
        return PAD + depth * DX, PAD + 20 + row * DY

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
             f'<title>{escape(title)}</title>',
             f'<text x="{PAD}" y="{PAD}" font-size="13" font-weight="bold" '
             f'fill="currentColor">{escape(title)}</text>']
    for a, b in lay.edges:
        if a not in lay.at or b not in lay.at:
            continue
        (x1, y1), (x2, y2) = xy(a), xy(b)
        stressed = a in on_path and b in on_path
        colour = PATH_COLOUR if stressed else "#9aa4b2"
        width_ = 2.5 if stressed else 1
        d = (f"M{x1},{y1} L{x2},{y2}" if y1 == y2 else
             f"M{x1},{y1} L{x1 + DX // 2},{y1} L{x1 + DX // 2},{y2} L{x2},{y2}")
        parts.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width_}"/>')
    for nid, (_row, _depth) in lay.at.items():
        node = rows[nid]
        x, y = xy(nid)
        fill = MODEL_COLOUR if node.by_model else HUMAN_COLOUR
        ring = PATH_COLOUR if nid in on_path else "none"
        radius = R + 2 if nid == position else R
        text = one_line(node.text)[:240] or "(no text)"
        label = marks.bookmark_label(node.extra) if node.bookmarked else None
        model = getattr(node, "model", None)  # siblings from several models: which wrote it
        made = f" ({model})" if model else ""
        tip = f"[{node.label}]{' ★ ' + label if label else ''}{made} {text}"
        parts.append(f'<g class="node" data-node="{escape(nid)}" style="cursor:pointer">'
                     f"<title>{escape(tip)}</title>"
                     f'<circle cx="{x}" cy="{y}" r="{radius}" fill="{fill}" stroke="{ring}" '
                     'stroke-width="2.5"/>')
        if node.bookmarked:
            parts.append(f'<text x="{x - 6}" y="{y - 8}" font-size="13" fill="#d4a000">★</text>')
        if nid == position:
            parts.append(f'<text x="{x + 10}" y="{y + 4}" fill="currentColor">'
                         f"{escape(one_line(node.text)[:40] or node.label)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


@dataclass
class TextMap:
    lines: list[str]
    #: (line, column in characters, node id) of each node's cell
    cells: list[tuple[int, int, str]]


def text_map(root: str, rows: Mapping[str, Row], children: Mapping[str, Sequence[str]],
             path: Iterable[str], position: str | None) -> TextMap:
    """The picture in characters: ``●`` a node on the path (``◉`` the position), ``○``
    another, ``★`` a bookmark; ``─`` joins a chain, ``┬├└│`` the branches."""
    lay = layout(root, children)
    on_path = set(path)
    width = (lay.depth + 1) * 2
    grid = [[" "] * width for _ in range(max(lay.rows, 1))]
    cells: list[tuple[int, int, str]] = []
    for nid, (row, depth) in lay.at.items():
        node = rows[nid]
        col = depth * 2
        glyph = "◉" if nid == position else "★" if node.bookmarked else \
            "●" if nid in on_path else "○"
        grid[row][col] = glyph
        cells.append((row, col, nid))
        kids = children.get(nid, ())
        if not kids:
            continue
        grid[row][col + 1] = "┬" if len(kids) > 1 else "─"
        last_row = lay.at[kids[-1]][0] if kids[-1] in lay.at else row
        for r in range(row + 1, last_row + 1):
            grid[r][col + 1] = "│"
        for kid in kids[1:]:
            if kid in lay.at:
                kr = lay.at[kid][0]
                grid[kr][col + 1] = "└" if kid == kids[-1] else "├"
    return TextMap(["".join(r).rstrip() for r in grid], cells)
