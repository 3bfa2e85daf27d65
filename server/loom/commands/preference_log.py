"""Recording what the writer chose, for every front end at once: the executor calls
:func:`before` and :func:`after` around each command, so a switch, a prune, a rating, a
bookmark or an edit of a model's text is logged the same way whether the CLI, an editor,
the shell or a collaborator ran it. What only an editor sees (suggestions shown, accepted
or dismissed; a picker's shown order) is recorded by the language server itself.

A recording that fails is logged and never fails the command it describes."""

from __future__ import annotations

import logging
from typing import Any

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.model import preferences as prefs
from loom.store.schema import Node

log = logging.getLogger(__name__)

_RECORDED = frozenset({"switch", "prune", "rate", "bookmark", "unbookmark", "edit", "commit"})


def before(ctx: Ctx, cmd: syntax.Command) -> str | None:
    """What a recording needs from before the command: for a sibling switch, the node the
    participant stood on (the sibling left is the one rejected)."""
    if not isinstance(cmd, syntax.Switch) or cmd.tip is not None or ctx.actor.tree is None:
        return None
    try:
        return ctx.ws.position(ctx.me, ctx.tree)[0].id
    except Exception as err:  # (recording is never a reason for a switch to fail)
        log.info("no position before a switch: %s", err)
        return None


def after(ctx: Ctx, cmd: syntax.Command, result: Result, was: str | None) -> None:
    """Record the events a successful command means."""
    if not result.ok or cmd.verb not in _RECORDED or ctx.actor.tree is None:
        return
    try:
        for kind, fields in _events(ctx, cmd, result, was):
            ctx.ws.record_preference(ctx.me, ctx.tree, kind, **fields)
    except Exception:  # a lost log line must not turn a done command into a failure
        log.warning("could not record the preference event of %s", cmd.verb, exc_info=True)


def _node(ctx: Ctx, node_id: Any) -> Node | None:
    return ctx.ws.find_node(node_id) if isinstance(node_id, str) else None


def _events(ctx: Ctx, cmd: syntax.Command, result: Result, was: str | None
            ) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(cmd, syntax.Switch):
        if cmd.tip is not None or not isinstance(result.data.get("node"), str):
            return []  # (a branch from a node, a suggestion's way back: no choice)
        found = {n.id: n for n in ctx.ws.nodes_by_id(
            [result.data["node"], *([was] if was else [])])}
        node = found.get(result.data["node"])
        if node is None or node.parent is None:
            return []
        left = found.get(was) if was and was != node.id else None
        rejected = [left.id] if left is not None and left.parent == node.parent else []
        return [(prefs.SWITCH, {"parent": node.parent, "node": node.id,
                                "chosen": node.id, "rejected": rejected})]
    node = _node(ctx, result.data.get("node"))
    match cmd:
        case syntax.Prune():
            if node is None:
                return []
            return [(prefs.PRUNE, {"parent": node.parent, "node": node.id,
                                   "rejected": [node.id]})]
        case syntax.Rate():
            if node is None:
                return []
            return [(prefs.RATE, {"parent": node.parent, "node": node.id,
                                  "chosen": node.id if cmd.rating > 0 else None,
                                  "rejected": [node.id] if cmd.rating < 0 else [],
                                  "detail": {"rating": cmd.rating}})]
        case syntax.Bookmark() | syntax.Unbookmark():
            if node is None:
                return []
            on = isinstance(cmd, syntax.Bookmark)
            return [(prefs.BOOKMARK, {"parent": node.parent, "node": node.id,
                                      "chosen": node.id if on else None,
                                      "detail": {"on": on}})]
        case syntax.Edit():
            created = result.data.get("created") or []
            return _edits(ctx, {v.edited_from: v.id for v in map(ctx.ws.find_node, created)
                                if v is not None and v.edited_from})
        case syntax.Commit():
            return _edits(ctx, dict(result.data.get("versions") or {}))
    return []


def _edits(ctx: Ctx, versions: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """An edit of a model's text: the human's version chosen over the model's text."""
    out = []
    for original_id, version_id in versions.items():
        original = _node(ctx, original_id)
        if original is None or original.author_type != "model":
            continue
        out.append((prefs.EDIT_OF_MODEL_TEXT, {
            "parent": original.parent, "node": original.id, "chosen": version_id,
            "rejected": [original.id],
            "detail": {"model_node": original.id, "human_node": version_id}}))
    return out
