"""Navigation tools: view, list, tree, switch."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import marks
from loom.model import permissions as perms
from loom.render import formats as f
from loom.render import overview
from loom.render.keywords import themes as keyphrases
from loom.render.text import (
    plural,
    preview,
    quote,
    relative_time,
    whole_sentences,
)
from loom.render.tree_drawing import MAX_CHILDREN, Item, draw
from loom.store import reader
from loom.store.schema import Link, Node, Tree
from loom.store.workspace import NodeRow, TreeCounts

DEFAULT_TREE_DEPTH = 5


def summary_of(ctx: Ctx, node: Node) -> str:
    if node.summary:
        return node.summary
    return (node.content.strip() and preview(node.content, 120)) or "(empty)"


def link_line(ctx: Ctx, link: Link, node: Node) -> str:
    note = f' (note: "{link.note}")' if link.note else ""
    if link.target_kind == "doc":
        doc = ctx.ws.find_document(link.target_doc)
        return f"→ {f.doc_ref(doc.name if doc else '?', link.target_section)}{note}"
    if link.target_kind == "tree" and not link.target_node:
        t = ctx.ws.tree_or_none(link.target_tree)
        return f'→ tree:"{t.title if t else "?"}"{note}'
    other_id = link.target_node if link.source == node.id else link.source
    other = ctx.ws.find_node(other_id)
    if other is None:
        return f"→ [?]{note}"
    where = ""
    if other.tree_id != ctx.tree.id:
        t = ctx.ws.tree_or_none(other.tree_id)
        where = f' in tree:"{t.title if t else "?"}"'
    return f"→ {f.ref(other.label)}{where}{note}"


def view(ctx: Ctx, cmd: syntax.View) -> Result:
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
    lines += _judged_lines(node)
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


def _judged_lines(node: Node) -> list[str]:
    """What an exploration's judge (and pruning) did to the node, for → view: the score
    and its reason, and whether it is pruned, so a collaborator or an outside agent sees
    the judge's work as the hover shows it."""
    out = []
    judged = marks.judge_line(node.extra)
    if judged:
        out.append(f"Judge: {judged}")
    if node.pruned:
        out.append("Pruned: hidden from views, search and model context "
                   f"(→ unprune {node.local_id} shows it again)")
    return ["", *out] if out else []


def _view_branch(ctx: Ctx, cmd: syntax.View) -> Result:
    through = ctx.text_node(cmd.branch or cmd.node, "a branch runs through the text: → view "
                            "branch:{on} as:" + (cmd.as_ or "prose"))
    path = ctx.branch_path(through)
    if not any(n.id == through.id for n in path):  # a version of it stands in its place
        family = through.version_of or through.id
        through = next((n for n in path if family in (n.id, n.version_of)), through)
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


def _tree_with_text(ctx: Ctx, t: Tree) -> Result:
    """The tree as people read it (``loom tree``): every shown node with the start of its
    text, the path and the position marked, bookmarks, tags and notes; long single runs
    collapsed. A result too long for the model's context is summarized by its loop."""
    position, tip = ctx.position()
    o = reader.outline_on_path(ctx.ws, t, position, tip, ctx.choices())
    drawn = overview.draw(t.title, t.mode, o.root, o.rows, o.children, o.path, o.here,
                          o.also)
    return Result.success(drawn.text.rstrip("\n"), node=position.id)


def list_(ctx: Ctx, cmd: syntax.List) -> Result:
    node = ctx.resolve(cmd.node)
    ws = ctx.ws
    label = f.ref(node.label)
    if cmd.what == "continuations":
        if node.kind == "annotation":  # (its own notes are listed: → list ann-1 annotations)
            ctx.text_node(node.id, "its notes: → list {ann} annotations; the continuations of "
                          "the node it annotates: → list {on} continuations")
        kids = _in_place(ctx, ws.children(node))
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


def _in_place(ctx: Ctx, kids: list[Node]) -> list[Node]:
    """In a buffer-mode tree each continuation with versions as ``tree`` draws it: the
    member of its family on your path, else its newest version (SPEC-NOTES 5)."""
    if ctx.tree.mode != "buffer" or not kids:
        return kids
    shown = ctx.ws.shown_members([k.id for k in kids], {n.id for n in ctx.current_path()})
    return [ctx.ws.node(shown[k.id][0]) if k.id in shown else k for k in kids]


def tree(ctx: Ctx, cmd: syntax.ShowTree) -> Result:
    t = ctx.tree
    counts = ctx.ws.tree_counts(t)
    if cmd.summary:
        return _tree_summary(ctx, t, counts)
    if cmd.text:
        return _tree_with_text(ctx, t)
    position, _ = ctx.position()
    depth = cmd.depth if cmd.depth is not None else DEFAULT_TREE_DEPTH
    if depth < 1 or depth > 50:
        raise LoomError("LIMIT_EXCEEDED", "tree depth must be between 1 and 50",
                        "use depth:5 or another value up to 50")
    on_path = [n.id for n in ctx.current_path()]
    if cmd.from_ is not None:
        start = ctx.text_node(cmd.from_, "the tree is drawn from nodes of the text: → tree "
                              "from:{on}")
        head = ""
    else:
        start = position
        path = ctx.ws.path(start, prefer=(start.id, *ctx.choices()))
        if not ctx.ws.count_children(start.id):  # at a leaf: show the alternatives around it
            # (no further up than the drawing reaches down, so the leaf stays in it)
            for up, ancestor in enumerate(reversed(path[:-1]), 1):
                if (ctx.ws.count_children(ancestor.id) > 1 or ancestor.parent is None
                        or up >= depth):
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
    openings = [start]
    if start.id == t.root or (cmd.from_ is None and start.parent is None):
        # a dialogue tree's edited root is another opening, with replies of its own: the
        # drawing of where you are at the top holds them all, in order
        openings = [ctx.ws.node(t.root), *ctx.ws.other_openings(t)]
    lines = [f'Tree: "{t.title}" ({plural(counts.nodes, "node")}, '
             f"{plural(counts.branches, 'branch', 'branches')})"]
    keep = frozenset(on_path)
    drawing: list[str] = []
    for opening in openings:
        # a node with buffer-mode versions is drawn as the member on your path (or its newest)
        start_id, start_label = ctx.ws.shown_members([opening.id], keep).get(
            opening.id, (opening.id, opening.label))
        children = {parent: [Item(*kid) for kid in kids] for parent, kids in
                    ctx.ws.continuation_map(start_id, depth, MAX_CHILDREN, on_path).items()}
        drawing += draw(head, Item(start_id, start_label), children, depth, position.id, keep)
    lines += drawing
    if any(f"{f.ref(position.label)}*" in line for line in drawing):
        lines += ["", "* = current position"]
    else:  # the legend would explain a mark that is not there
        lines += ["", f"current position: {f.ref(position.label)} (not in this drawing)"]
    return Result.success("\n".join(lines))


THEMES_TEXT_CHARS = 20_000  # the newest text of a long path (~3,500 words): quick to read


def _recent_text(path: list[NodeRow]) -> list[str]:
    """The contents along a path, newest last, up to THEMES_TEXT_CHARS from its end."""
    texts: list[str] = []
    left = THEMES_TEXT_CHARS
    for n in reversed(path):
        if n.kind == "annotation" or n.excluded or not n.content:
            continue
        texts.append(n.content[-left:])
        left -= len(texts[-1])
        if left <= 0:
            break
    return texts[::-1]


def _tree_summary(ctx: Ctx, t: Tree, counts: TreeCounts) -> Result:
    """Seed 000's condensed overview. The themes are the model's (from its structured tree
    summary) when a model summarized the tree, else key phrases of your path's text (its
    newest THEMES_TEXT_CHARS characters); the
    model's summary is shown only as whole sentences."""
    lines = [f'Tree: "{t.title}"',
             f"{plural(counts.nodes, 'node')} · {plural(counts.branches, 'branch', 'branches')}"
             f" · {plural(counts.leaves, 'leaf', 'leaves')}"]
    by_model = t.summary_source == "model"
    themes = list(t.themes or []) if by_model else []
    if not themes:
        themes = keyphrases(_recent_text(ctx.current_path()))
    if themes:
        lines.append(f"Main themes: {', '.join(themes)}")
    summary = whole_sentences(t.summary or "") if by_model else ""
    if summary:
        lines.append(f"Summary: {summary}")
    lines.append(f"Last active: {relative_time(ctx.ws.last_active(t), ctx.now)}")
    return Result.success("\n".join(lines))


def switch(ctx: Ctx, cmd: syntax.Switch) -> Result:
    if cmd.tree is not None:
        ctx.require(perms.CROSS_TREE, "switch trees")
        target_tree = ctx.ws.find_tree(cmd.tree)
        if target_tree.id != ctx.tree.id:
            ctx.actor.tree = target_tree
    node = ctx.text_node(cmd.node, "switch to the node it annotates: → switch to {on}")
    switched_back = False
    if cmd.tip is None and node.id != cmd.node.strip():
        # a node named as people name it (not the editor's exact id): in buffer mode its
        # version on your path, else its newest, stands in its place; but an original
        # named while one of its versions is on your path is the way back to it (issue
        # 47: an unwanted save of empty versions could not be undone)
        shown = ctx.in_place(node)
        current = {n.id for n in ctx.current_path()}
        switched_back = (shown.id != node.id and shown.id in current
                         and node.version_of is None)
        if not switched_back:
            node = shown
    if cmd.tip is not None:  # the editor's branch: the path ends where it says
        tip = ctx.resolve(cmd.tip)
        if tip.id != node.id and not any(
                n.id == node.id for n in ctx.ws.path(tip, prefer=(node.id,))):
            raise LoomError("INVALID_SYNTAX", f"[{tip.label}] is not below [{node.label}]",
                            "the path's end must be the node or one of its descendants")
    else:
        current = ctx.current_path()
        family = node.version_of or node.id
        # another member of its family on your path: the path below it is shared (a
        # version's continuations are its original's), so it ends where it ends now
        on_path = any(n.id == node.id or (ctx.tree.mode == "buffer"
                                          and (n.version_of or n.id) == family)
                      for n in current)
        tip = current[-1] if on_path else ctx.ws.descend(node)
        if on_path and (tip.version_of or tip.id) == family:
            tip = node  # the path ended on the family: it ends on the member chosen
    ctx.ws.set_position(ctx.me, ctx.tree, node, tip)
    if ctx.tree.mode == "buffer" and (node.version_of is not None or switched_back
                                      or ctx.ws.has_versions(node.id)):
        ctx.ws.choose_member(ctx.me, ctx.tree, node)  # the path shows it from now on
    path = ctx.ws.path(node, prefer=(node.id, *ctx.choices()))
    conts = ctx.ws.count_children(node.id)
    where = f' in tree:"{ctx.tree.title}"' if cmd.tree is not None else ""
    return Result.success(
        f.ok(f"switched to {f.ref(node.label)}{where}",
             f"depth:{node.depth} · {plural(conts, 'continuation')} · path: "
             f"{f.compact_path([n.label for n in path])}"),
        node=node.id, tree=ctx.tree.id,
    )
