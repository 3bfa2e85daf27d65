"""What a ``loom:`` URI shows: path views, tree overviews, documents, traces."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote

from loom.errors import LoomError, not_found
from loom.lsp.buffer import Segment
from loom.lsp.features import blind
from loom.memory import operational as mem
from loom.model import permissions as perms
from loom.render import overview
from loom.render.text import relative_time
from loom.store import reader
from loom.store.schema import Document, Node, Participant, Tree
from loom.store.workspace import NodeRow, Workspace

#: "file": a ``.loom`` file on disk, whose text is the editor's (Loom keeps no copy)
Kind = Literal["path", "tree", "doc", "trace", "conversation", "file"]


@dataclass
class Target:
    kind: Kind
    tree: str | None = None
    node: str | None = None
    name: str | None = None


@dataclass
class RenderedView:
    uri: str
    kind: Kind
    text: str
    read_only: bool
    language_id: str
    tree: Tree | None = None
    tip: Node | None = None
    segments: list[Segment] = field(default_factory=list)
    doc: Document | None = None
    folds: list[tuple[int, int]] = field(default_factory=list)  # tree overviews


def parse_uri(uri: str) -> Target:
    if not uri.startswith("loom:"):
        raise not_found(f"not a loom: URI: {uri}")
    rest = uri[len("loom:"):].lstrip("/")
    kind, _, tail = rest.partition("/")
    parts = [p for p in tail.split("/") if p]
    # a third (second) segment is the tree's title, for people: ignored
    if kind == "path" and len(parts) in (2, 3):
        return Target("path", tree=parts[0], node=parts[1])
    if kind == "tree" and len(parts) in (1, 2):
        return Target("tree", tree=parts[0])
    if kind == "doc" and tail:
        return Target("doc", name=unquote(tail))
    if kind == "trace" and len(parts) == 1:
        return Target("trace", name=unquote(parts[0]))
    if kind == "conversation" and len(parts) == 2:
        return Target("conversation", tree=parts[1], name=unquote(parts[0]))
    raise not_found(f"unknown loom: URI {uri}",
                    "loom://path/TREE/NODE, loom://tree/TREE, loom://doc/NAME, loom://trace/WHO, "
                    "loom://conversation/AGENT/TREE")


def path_text(ws: Workspace, tree: Tree, path: list[NodeRow],
              now: float) -> tuple[str, list[Segment]]:
    """Buffer mode: the nodes' text, concatenated; dialogue: a headed block per node."""
    names: dict[str, str] = {}

    def author(pid: str) -> str:
        if pid not in names:
            names[pid] = ws.participant_name(pid)
        return names[pid]

    parts: list[str] = []
    segments: list[Segment] = []
    offset = 0
    if tree.mode == "buffer":
        for n in path:
            segments.append(Segment(n.id, n.label, n.author_type == "model", offset,
                                    offset + len(n.content), n.content))
            parts.append(n.content)
            offset += len(n.content)
        return "".join(parts), segments
    first = True
    for n in path:
        if n.kind == "root" and not n.content:
            continue
        header = ("" if first else "\n\n") + (f"[{n.label}] {author(n.author_id)} · "
                                              f"{relative_time(n.created, now)}\n")
        segments.append(Segment(None, n.label, False, offset, offset + len(header), header,
                                editable=False))
        offset += len(header)
        parts.append(header)
        segments.append(Segment(n.id, n.label, n.author_type == "model", offset,
                                offset + len(n.content), n.content))
        parts.append(n.content)
        offset += len(n.content)
        first = False
    return "".join(parts), segments


def tree_overview(ws: Workspace, tree: Tree, position: Node,
                  tip: Node | None = None, who: Participant | None = None
                  ) -> overview.Overview:
    """The overview for people (``render.overview``): each node's text beside its id, the
    current path and bookmarks marked, branches foldable. Models get the seed's id-only
    drawing from ``→ tree``. In a blind tree, ``who`` is not told which model wrote the
    siblings they have not chosen among yet."""
    chosen = ws.path_choices(who, tree) if who is not None else ()
    o = reader.outline_on_path(ws, tree, position, tip or position, chosen)
    if who is not None:
        hidden = blind.veiled(ws, who, tree, (r.parent for r in o.rows.values() if r.model))
        for nid, row in list(o.rows.items()):
            if row.model and row.parent in hidden:
                o.rows[nid] = dataclasses.replace(row, model=None)
    drawn = overview.draw(tree.title, tree.mode, o.root, o.rows, o.children, o.path, o.here,
                          o.also)
    if tree.description:
        drawn.lines.insert(1, tree.description)
        drawn.folds = [(a + 1, b + 1) for a, b in drawn.folds]
        drawn.nodes = {k + 1: v for k, v in drawn.nodes.items()}
    return drawn


def trace_text(ws: Workspace, who: Participant) -> str:
    entries = mem.trace(ws, who, limit=200)
    lines = [f"Action trace of {who.name} ({len(entries)} most recent)", ""]
    for e in entries:
        when = relative_time(e.created, ws.clock())
        if e.command == mem.THINK:
            first = e.message.strip().splitlines()[0] if e.message.strip() else ""
            lines.append(f"{when:>9}  → think … ({first[:60]})")
            continue
        mark = "✓" if e.ok else f"✗ {e.code}: {e.message}"
        lines.append(f"{when:>9}  {e.command}   {mark}")
    return "\n".join(lines) + "\n"


def conversation_text(ws: Workspace, agent: str, tree: Tree) -> str:
    from loom.agent.transcript import SqliteTurnLog, render_conversation

    turns = SqliteTurnLog(ws).turns(agent, tree.id)
    return render_conversation(turns, agent, tree.title, ws.clock())


def render(ws: Workspace, uri: str, who: Participant, tip: Node | None = None,
           paths: Callable[..., list[Any]] | None = None) -> RenderedView:
    """Render a URI for a participant. ``tip`` overrides the path's end (open buffers);
    ``paths`` reads a path as ``Workspace.path`` does (a session's cache)."""
    path_of = paths or ws.path
    target = parse_uri(uri)
    perms.require_read(who.permissions, "doc" if target.kind == "doc" else "tree")
    if target.kind == "doc":
        doc = ws.document(target.name or "")
        return RenderedView(uri, "doc", doc.content, False, "markdown", doc=doc)
    if target.kind == "trace":
        p = ws.participant(target.name or "")
        return RenderedView(uri, "trace", trace_text(ws, p), True, "loom")
    tree = ws.find_tree(target.tree or "")
    perms.require_read(who.permissions, tree=tree.id, home=who.current_tree)
    if target.kind == "conversation":
        name = ws.participant(target.name or "").name
        return RenderedView(uri, "conversation", conversation_text(ws, name, tree), True, "loom")
    if target.kind == "tree":
        position, tip = ws.position(who, tree)
        drawn = tree_overview(ws, tree, position, tip, who)
        return RenderedView(uri, "tree", drawn.text, True, "loom", tree=tree, folds=drawn.folds)
    opening = tip is None  # (an open buffer's own end is never moved)
    path = None
    chosen = ws.path_choices(who, tree)  # the versions the participant chose to see
    if tip is None:
        anchor = ws.resolve(tree, target.node or "")
        if anchor.kind == "annotation":
            raise LoomError("NOT_FOUND", f"[{anchor.label}] is an annotation",
                            "open the node it annotates")
        node, current_tip = ws.position(who, tree)
        current = path_of(current_tip, prefer=(node.id, current_tip.id, *chosen))
        if any(n.id == anchor.id for n in current):
            tip, path = current_tip, current  # the path shown is the one walked: once
        else:
            tip = ws.descend(anchor)
    if path is None:
        path = path_of(tip, prefer=(tip.id, *chosen))
    if opening and not any(n.content for n in path):
        # An imported tree whose current node has no text (socketteer's demo opens on the
        # root's empty first child): show the path on below it, and say so (a lens).
        below = ws.descend(tip)
        if below.id != tip.id:
            tip = below
            path = path_of(tip, prefer=(tip.id, *chosen))
    text, segments = path_text(ws, tree, path, ws.clock())
    return RenderedView(uri, "path", text, False, "loom", tree=tree, tip=tip, segments=segments)
