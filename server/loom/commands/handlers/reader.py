"""The reader's tools: bookmark, tag, rate, prune and unprune, delete and undelete (soft,
within ``marks.UNDO_WINDOW_S``), rename a tree, and search every tree. The executor has
checked the permission; writes that change what a branch shows take its lock (``guard``)."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.errors import LoomError
from loom.model import marks
from loom.render import formats as f
from loom.render.text import plural, quote
from loom.store import reader
from loom.store.schema import Node

UNDO_DAYS = int(marks.UNDO_WINDOW_S // 86_400)


def _node(ctx: Ctx, ref: str | None) -> Node:
    node = ctx.resolve(ref)
    if node.kind == "annotation" and node.parent is None:  # pragma: no cover - defensive
        raise LoomError("NOT_FOUND", f"[{node.label}] has nothing to act on")
    return node


def bookmark(ctx: Ctx, cmd: syntax.Bookmark) -> Result:
    node = _node(ctx, cmd.node)
    reader.set_bookmark(ctx.ws, node, ctx.me, True, cmd.label)
    label = f" {quote(cmd.label)}" if cmd.label else ""
    return Result.success(f.ok(f"bookmarked {f.ref(node.label)}{label}"), node=node.id)


def unbookmark(ctx: Ctx, cmd: syntax.Unbookmark) -> Result:
    node = _node(ctx, cmd.node)
    if not node.bookmarked:
        return Result.success(f.ok(f"{f.ref(node.label)} has no bookmark"), node=node.id)
    reader.set_bookmark(ctx.ws, node, ctx.me, False)
    return Result.success(f.ok(f"removed the bookmark on {f.ref(node.label)}"), node=node.id)


def _tag_line(tags: list[str]) -> str:
    return " ".join(f"#{t}" for t in tags) if tags else "(no tags)"


def tag(ctx: Ctx, cmd: syntax.Tag) -> Result:
    node = _node(ctx, cmd.node)
    tags = reader.set_tags(ctx.ws, node, ctx.me, list(cmd.tags), [])
    return Result.success(f.ok(f"tagged {f.ref(node.label)}: {_tag_line(tags)}"),
                          node=node.id, tags=tags)


def untag(ctx: Ctx, cmd: syntax.Untag) -> Result:
    node = _node(ctx, cmd.node)
    remove = list(cmd.tags) or marks.tags_of(node.extra)
    tags = reader.set_tags(ctx.ws, node, ctx.me, [], remove)
    return Result.success(f.ok(f"{f.ref(node.label)} tags: {_tag_line(tags)}"),
                          node=node.id, tags=tags)


def rate(ctx: Ctx, cmd: syntax.Rate) -> Result:
    node = _node(ctx, cmd.node)
    reader.set_rating(ctx.ws, node, ctx.me, cmd.rating)
    shown = f"rated {f.ref(node.label)} {cmd.rating:+d}" if cmd.rating else \
        f"cleared the rating of {f.ref(node.label)}"
    return Result.success(f.ok(shown), node=node.id, rating=cmd.rating)


def _step_off(ctx: Ctx, node: Node) -> str | None:
    """Hiding a node the actor stands on (or passes through) moves them to its parent."""
    current = ctx.current_path()
    if not any(n.id == node.id for n in current) or node.parent is None:
        return None
    parent = ctx.ws.node(node.parent)
    ctx.ws.set_position(ctx.me, ctx.tree, parent, parent)
    return f"switched to {f.ref(parent.label)}"


def prune(ctx: Ctx, cmd: syntax.Prune) -> Result:
    node = ctx.resolve(cmd.node)
    ctx.guard(node, extends=False)
    below = len(reader.subtree_ids(ctx.ws, node)) - 1
    reader.set_pruned(ctx.ws, node, ctx.me, True)
    moved = _step_off(ctx, node)
    hidden = f" with {plural(below, 'node')} below it" if below else ""
    lines = [f"pruned {f.ref(node.label)}{hidden}: hidden from views, search and model "
             f"context (→ unprune {node.local_id} shows it again)"]
    return Result.success(f.ok(*lines, *([moved] if moved else [])), node=node.id)


def unprune(ctx: Ctx, cmd: syntax.Unprune) -> Result:
    node = ctx.resolve(cmd.node)
    ctx.guard(node, extends=False)
    if not node.pruned:
        return Result.success(f.ok(f"{f.ref(node.label)} is not pruned"), node=node.id)
    reader.set_pruned(ctx.ws, node, ctx.me, False)
    return Result.success(f.ok(f"{f.ref(node.label)} is shown again"), node=node.id)


def delete(ctx: Ctx, cmd: syntax.Delete) -> Result:
    if cmd.tree is not None:
        tree = ctx.ws.find_tree(cmd.tree)
        reader.delete_tree(ctx.ws, tree, ctx.me)
        return Result.success(f.ok(
            f'deleted tree "{tree.title}" (→ undelete tree:"{tree.title}" within '
            f"{UNDO_DAYS} days)"), tree=tree.id)
    node = ctx.resolve(cmd.node)
    ctx.guard(node, extends=False)
    count = reader.delete_subtree(ctx.ws, node, ctx.me)
    moved = _step_off(ctx, node)
    below = f" and {plural(count - 1, 'node')} below it" if count > 1 else ""
    lines = [f"deleted {f.ref(node.label)}{below} (→ undelete {node.local_id} within "
             f"{UNDO_DAYS} days)"]
    return Result.success(f.ok(*lines, *([moved] if moved else [])), node=node.id,
                          nodes=count)


def undelete(ctx: Ctx, cmd: syntax.Undelete) -> Result:
    if cmd.tree is not None:
        tree = reader.find_any_tree(ctx.ws, cmd.tree)
        reader.restore_tree(ctx.ws, tree, ctx.me)
        return Result.success(f.ok(f'restored tree "{tree.title}"'), tree=tree.id)
    node = ctx.resolve(cmd.node)
    ctx.guard(node, extends=False)
    count = reader.restore_subtree(ctx.ws, node, ctx.me)
    below = f" and {plural(count - 1, 'node')} below it" if count > 1 else ""
    return Result.success(f.ok(f"restored {f.ref(node.label)}{below}"), node=node.id)


def rename(ctx: Ctx, cmd: syntax.Rename) -> Result:
    tree = ctx.ws.find_tree(cmd.tree) if cmd.tree else ctx.tree
    old = reader.rename_tree(ctx.ws, tree, cmd.title, ctx.me)
    return Result.success(f.ok(f'renamed tree "{old}" to "{tree.title}"'), tree=tree.id)


def search(ctx: Ctx, cmd: syntax.Search) -> Result:
    tree = ctx.ws.find_tree(cmd.tree) if cmd.tree else None
    hits = reader.search(ctx.ws, cmd.query, tree)
    where = f' in "{tree.title}"' if tree else ""
    if not hits:
        return Result.success(f.ok(f"no matches for {quote(cmd.query)}{where}"),
                              hits=[])
    trees = {h.tree_title for h in hits}
    head = (f"{plural(len(hits), 'match', 'matches')} for {quote(cmd.query)}"
            + (where or f" in {plural(len(trees), 'tree')}"))
    lines = [(f"{f.ref(h.node.label)} " + ("" if tree else f'"{h.tree_title}": ')
              + h.snippet) for h in hits]
    return Result.success(f.ok(head, *lines), hits=[
        {"node": h.node.id, "localId": h.node.local_id, "label": h.node.label,
         "tree": h.node.tree_id, "treeTitle": h.tree_title, "snippet": h.snippet}
        for h in hits])
