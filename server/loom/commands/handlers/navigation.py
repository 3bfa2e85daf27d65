"""Navigation tools: view, list, tree, switch."""

from __future__ import annotations

from loom.commands import ast
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import permissions as perms
from loom.render import formats as f
from loom.render.text import (
    plural,
    preview,
    quote,
    relative_time,
)
from loom.render.tree_drawing import MAX_CHILDREN, Item, draw
from loom.store.schema import Document, Link, Node, Tree

DEFAULT_TREE_DEPTH = 5


def summary_of(ctx: Ctx, node: Node) -> str:
    if node.summary:
        return node.summary
    return (node.content.strip() and preview(node.content, 120)) or "(empty)"


def link_line(ctx: Ctx, link: Link, node: Node) -> str:
    note = f' (note: "{link.note}")' if link.note else ""
    if link.target_kind == "doc":
        doc = Document.get_or_none(Document.id == link.target_doc)
        return f"→ {f.doc_ref(doc.name if doc else '?', link.target_section)}{note}"
    if link.target_kind == "tree" and not link.target_node:
        t = Tree.get_or_none(Tree.id == link.target_tree)
        return f'→ tree:"{t.title if t else "?"}"{note}'
    other_id = link.target_node if link.source == node.id else link.source
    other = Node.get_or_none(Node.id == other_id)
    if other is None:
        return f"→ [?]{note}"
    where = ""
    if other.tree_id != ctx.tree.id:
        t = Tree.get_or_none(Tree.id == other.tree_id)
        where = f' in tree:"{t.title if t else "?"}"'
    return f"→ {f.ref(other.label)}{where}{note}"


def view(ctx: Ctx, cmd: ast.View) -> Result:
    if cmd.branch is not None or cmd.as_ is not None:
        return _view_branch(ctx, cmd)
    node = ctx.resolve(cmd.node)
    ws = ctx.ws
    header = f.node_header(node.label, ctx.name(node.author_id), ctx.when(node.created),
                           node.depth)
    conts = ws.count_children(node.id)
    anns = ws.count_children(node.id, "annotation")
    links = ws.count_links(node.id)
    lines = [header]
    if cmd.detail == "full":
        lines.append(node.content if node.content else "(empty)")
    else:
        lines.append(quote(summary_of(ctx, node)))
    if cmd.detail == "with-annotations":
        anns_nodes = ws.children(node, "annotation")
        if anns_nodes:
            lines += ["", "Annotations:"]
            lines += [f"  {f.ref(a.label)} {quote(a.content)}" for a in anns_nodes]
        lines += ["", f.counts_line(conts, None, links)]
    elif cmd.detail == "with-links":
        node_links = ws.links(node)
        if node_links:
            lines += ["", "Links:"] + [f"  {link_line(ctx, lk, node)}" for lk in node_links]
        lines += ["", f.counts_line(conts, anns, 0)]
    else:
        lines += ["", f.counts_line(conts, anns, links)]
    return Result.success("\n".join(lines), node=node.id, label=node.label)


def _view_branch(ctx: Ctx, cmd: ast.View) -> Result:
    through = ctx.resolve(cmd.branch or cmd.node)
    path = ctx.branch_path(through)
    if cmd.as_ == "nodes":
        blocks = []
        for n in path:
            conn = f.connections(ctx.ws.count_children(n.id),
                                 ctx.ws.count_children(n.id, "annotation"),
                                 ctx.ws.count_links(n.id))
            meta = f.node_metadata(n.label, ctx.name(n.author_id), ctx.when(n.created), conn)
            blocks.append(f"{meta}\n{n.content}" if n.content else meta)
        return Result.success("\n\n".join(blocks), node=through.id,
                              path=[n.id for n in path])
    pieces = [f.ProsePiece(n.content, n.author_type == "model") for n in path]
    text = f.prose(pieces)
    words = sum(len(p.content.split()) for p in pieces)  # prose: whitespace words suffice
    head = (f"branch {f.ref(through.label)} as:prose · {plural(len(path), 'node')} · "
            f"{plural(words, 'word')}")
    return Result.success(f"{head}\n\n{text}", node=through.id, path=[n.id for n in path])


def list_(ctx: Ctx, cmd: ast.List) -> Result:
    node = ctx.resolve(cmd.node)
    ws = ctx.ws
    label = f.ref(node.label)
    if cmd.what == "continuations":
        kids = ws.children(node)
        if not kids:
            return Result.success(f"{label} → no continuations (leaf)", node=node.id)
        lines = [f"{label} → {plural(len(kids), 'continuation')}:"]
        lines += [f"  {f.ref(k.label)} {ctx.name(k.author_id)} · "
                  f"{quote(preview(k.content) or '(empty)')}" for k in kids]
        return Result.success("\n".join(lines), node=node.id, items=[k.id for k in kids])
    if cmd.what == "annotations":
        anns = ws.children(node, "annotation")
        if not anns:
            return Result.success(f"{label} annotations: none", node=node.id)
        lines = [f"{label} annotations:"]
        lines += [f"  {f.ref(a.label)} {ctx.name(a.author_id)} · {quote(a.content)}"
                  for a in anns]
        return Result.success("\n".join(lines), node=node.id, items=[a.id for a in anns])
    node_links = ws.links(node)
    if not node_links:
        return Result.success(f"{label} links: none", node=node.id)
    lines = [f"{label} links:"] + [f"  {link_line(ctx, lk, node)}" for lk in node_links]
    return Result.success("\n".join(lines), node=node.id)


def tree_stats(ctx: Ctx, tree: Tree) -> tuple[int, int, int]:
    """(nodes, branch points, leaves) — annotations and hidden versions are not counted."""
    ws = ctx.ws
    nodes = ws.sql(
        "SELECT count(*) FROM node n LEFT JOIN edge e ON e.target = n.id WHERE n.tree_id = ? "
        "AND n.kind != 'annotation' AND (e.kind IS NULL OR e.kind = 'continuation')",
        (tree.id,)).fetchone()[0]
    branches = ws.sql(
        "SELECT count(*) FROM (SELECT s.node FROM edge_source s JOIN edge e ON e.target = "
        "s.target WHERE e.tree_id = ? AND e.kind = 'continuation' GROUP BY s.node "
        "HAVING count(*) > 1) AS b", (tree.id,)).fetchone()[0]
    parents = ws.sql(
        "SELECT count(DISTINCT s.node) FROM edge_source s JOIN edge e ON e.target = s.target "
        "JOIN node p ON p.id = s.node WHERE e.tree_id = ? AND e.kind = 'continuation'",
        (tree.id,)).fetchone()[0]
    return nodes, branches, max(0, nodes - parents)


def tree(ctx: Ctx, cmd: ast.Tree) -> Result:
    t = ctx.tree
    nodes, branches, leaves = tree_stats(ctx, t)
    if cmd.summary:
        lines = [f'Tree: "{t.title}"',
                 f"{plural(nodes, 'node')} · {plural(branches, 'branch', 'branches')} · "
                 f"{plural(leaves, 'leaf', 'leaves')}"]
        if t.themes:
            lines.append(f"Main themes: {', '.join(t.themes)}")
        if t.summary:
            lines.append(f"Summary: {t.summary}")
        elif t.description:
            lines.append(f"Description: {t.description}")
        lines.append(f"Last active: {relative_time(t.updated, ctx.now)}")
        return Result.success("\n".join(lines))
    position, _ = ctx.position()
    depth = cmd.depth if cmd.depth is not None else DEFAULT_TREE_DEPTH
    if depth < 1 or depth > 50:
        raise LoomError("LIMIT_EXCEEDED", "tree depth must be between 1 and 50",
                        "use depth:5 or another value up to 50")
    if cmd.from_ is not None:
        start = ctx.resolve(cmd.from_)
        head = ""
    else:
        start = position
        path = ctx.ws.path(start, prefer=(start.id,))
        if not ctx.ws.count_children(start.id):  # at a leaf: show the alternatives around it
            for ancestor in reversed(path[:-1]):
                if ctx.ws.count_children(ancestor.id) > 1 or ancestor.parent is None:
                    start = ancestor
                    break
            path = path[: [n.id for n in path].index(start.id) + 1]
        labels = [n.label for n in path]
        if len(path) == 1:
            head = "Root "
        elif len(path) == 2:
            head = f"Root {f.ref(labels[0])} → "
        else:
            head = f"Root {f.ref(labels[0])} → ... → "
    children = {parent: [Item(*kid) for kid in kids] for parent, kids in
                ctx.ws.continuation_map(start.id, depth, MAX_CHILDREN).items()}
    lines = [f'Tree: "{t.title}" ({plural(nodes, "node")}, '
             f"{plural(branches, 'branch', 'branches')})"]
    lines += draw(head, Item(start.id, start.label), children, depth, position.id)
    lines += ["", "* = current position"]
    return Result.success("\n".join(lines))


def switch(ctx: Ctx, cmd: ast.Switch) -> Result:
    if cmd.tree is not None:
        ctx.require(perms.CROSS_TREE, "switch trees")
        target_tree = ctx.ws.find_tree(cmd.tree)
        if target_tree.id != ctx.tree.id:
            ctx.actor.tree = target_tree
    node = ctx.resolve(cmd.node)
    if node.kind == "annotation":
        target = ctx.ws.node(node.parent).local_id if node.parent else "?"
        raise LoomError("NOT_FOUND", f"[{node.label}] is an annotation, not a position",
                        f"switch to the node it annotates: → switch to {target}")
    if cmd.tip is not None:  # the editor's branch: the path ends where it says
        tip = ctx.resolve(cmd.tip)
        if tip.id != node.id and not any(
                n.id == node.id for n in ctx.ws.path(tip, prefer=(node.id,))):
            raise LoomError("INVALID_SYNTAX", f"[{tip.label}] is not below [{node.label}]",
                            "the path's end must be the node or one of its descendants")
    else:
        current = ctx.current_path()
        on_path = any(n.id == node.id for n in current)
        tip = current[-1] if on_path else ctx.ws.descend(node)
    ctx.ws.set_position(ctx.me, ctx.tree, node, tip)
    path = ctx.ws.path(node, prefer=(node.id,))
    conts = ctx.ws.count_children(node.id)
    where = f' in tree:"{ctx.tree.title}"' if cmd.tree is not None else ""
    return Result.success(
        f.ok(f"switched to {f.ref(node.label)}{where}",
             f"depth:{node.depth} · {plural(conts, 'continuation')} · path: "
             f"{f.compact_path([n.label for n in path])}"),
        node=node.id, tree=ctx.tree.id,
    )
