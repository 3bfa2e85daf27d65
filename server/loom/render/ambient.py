"""The ambient line for a participant (seed 000): where they are, at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom.render import formats as f
from loom.render.text import word_count

if TYPE_CHECKING:
    from loom.commands.context import Actor
    from loom.store.workspace import Workspace


def for_actor(ws: Workspace, actor: Actor, buffer_variant: bool | None = None,
              extended: bool = False) -> str:
    node, tip = ws.position(actor.participant, actor.tree)
    if buffer_variant is None:
        buffer_variant = actor.tree.mode == "buffer"
    if buffer_variant:
        path = ws.path(tip, prefer=(node.id, tip.id))
        words = sum(word_count(n.content) for n in path)
        return f.ambient_buffer(node.local_id, actor.tree.title, words)
    siblings = ws.siblings(node)
    if extended:
        others = [(p.name, n.label) for p, n in ws.active_elsewhere(actor.tree,
                                                                     actor.participant)]
        return f.ambient_extended(node.local_id, node.depth, siblings, actor.permissions,
                                  others)
    return f.ambient(node.local_id, node.depth, siblings,
                     ws.count_children(node.id, "annotation"), ws.count_links(node.id))
