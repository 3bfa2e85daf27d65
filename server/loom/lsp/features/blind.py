"""Blind comparison: in a tree whose ``blind`` setting is on, the editor does not say which
model wrote a node (hover, sibling markers, the sibling picker, the overview) until the
writer has chosen among that node's siblings (a pick, an accepted suggestion or a switch
in the preference log). Human-written nodes are never hidden."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from loom.model import preferences as prefs
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

#: What stands where a hidden model's name would be.
HIDDEN = "a model (hidden until you choose)"


def is_blind(ws: Workspace, tree_id: str | None) -> bool:
    """Whether the tree (read fresh: the setting may change in another process) is blind."""
    tree = ws.tree_or_none(tree_id) if tree_id else None
    return tree is not None and prefs.blind(tree.extra)


def veiled(ws: Workspace, who: Participant, tree: Tree | str | None,
           parents: Iterable[str | None]) -> set[str]:
    """The branch points among ``parents`` whose children's models stay hidden from
    ``who`` (none unless the tree is blind)."""
    tree_id = tree.id if isinstance(tree, Tree) else tree
    wanted = sorted({p for p in parents if p})
    if not wanted or not is_blind(ws, tree_id):
        return set()
    return set(wanted) - ws.chosen_among(who, wanted)


def hides(ws: Workspace, who: Participant, node: Node) -> bool:
    """Whether ``node``'s model is hidden from ``who``."""
    return node.author_type == "model" and bool(veiled(ws, who, node.tree_id, [node.parent]))


def visible_models(ws: Workspace, who: Participant, tree: Tree | None,
                   models: Mapping[str, str]) -> dict[str, str]:
    """``models`` (node id → model) without the nodes whose model is hidden."""
    if not models or tree is None or not is_blind(ws, tree.id):
        return dict(models)
    family = ws.node_family_rows(list(models))
    parents = {nid: row[0] for nid, row in family.items()}
    hidden = veiled(ws, who, tree, parents.values())
    return {nid: m for nid, m in models.items() if parents.get(nid) not in hidden}
