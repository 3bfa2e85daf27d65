"""loomsidian import: the Obsidian loom plugin's trees.

Two shapes: one note's state ``{"nodes": {id: node}, "current": id, …}``, or the plugin's
``data.json`` ``{"settings": …, "state": {"<note path>": {current, hoisted, nodes, …}}}``,
which gives one tree per note. A node is ``{text, parentId, unread, bookmarked,
lastVisited, collapsed, color…}``. Decisions:

- Buffer mode; a note's single root node becomes the Loom root. A note with several roots
  (the plugin allows them) gets an empty Loom root with those roots as its children.
- Children keep the order of the ``nodes`` map (the plugin lists them in that order).
- The plugin records no authorship: roots are human, other nodes are taken as the model's
  (they are mostly completions), named after the model in ``settings`` when known, and
  marked ``"authorship": "inferred"`` in extra.
- ``bookmarked`` → bookmarked; other node fields are kept in ``extra["loomsidian"]`` with
  the plugin's id; the note's other fields (``hoisted``…) on the root. ``settings`` (which
  hold API keys) are never stored. The human is placed at ``current``.
- A parentId naming no node, or parentIds that form a cycle, are errors naming the node.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

from loom.interchange.common import drop_secrets, invalid, place, unique_title
from loom.store.schema import Node, Tree
from loom.store.workspace import HUMAN, SUBJECT, NewNode, Workspace

_STRUCTURE = ("text", "parentId")


def import_loomsidian(ws: Workspace, data: Any, *, title: str | None = None,
                      human: str = HUMAN) -> list[Tree]:
    """Import each note's tree; every note is validated before anything is written."""
    if not isinstance(data, dict):
        raise invalid("loomsidian data is a JSON object")
    model = _model_name(data.get("settings"))
    if isinstance(data.get("state"), dict):
        notes = [(f'state["{path}"]', str(path), state) for path, state in data["state"].items()]
    elif isinstance(data.get("nodes"), dict):
        notes = [("", title or "loomsidian", data)]
    else:
        raise invalid('loomsidian data has "nodes" (one note) or "state" (the plugin\'s '
                      "data.json)")
    plans = [_Note(where, name, state, model, human) for where, name, state in notes]
    plans = [p for p in plans if p.nodes]
    if not plans:
        raise invalid("the loomsidian data has no nodes", "open the note in Obsidian first")
    with ws.db.atomic():
        return [p.write(ws) for p in plans]


def _model_name(settings: Any) -> str:
    if not isinstance(settings, dict):
        return SUBJECT
    presets, index = settings.get("modelPresets"), settings.get("modelPreset")
    if isinstance(presets, list) and isinstance(index, int) and 0 <= index < len(presets) \
            and isinstance(presets[index], dict) and presets[index].get("model"):
        return str(presets[index]["model"])
    return str(settings.get("model") or SUBJECT)


class _Note:
    """One note's tree, checked and turned into bulk specs before anything is written."""

    def __init__(self, where: str, name: str, state: Any, model: str, human: str) -> None:
        prefix = f"{where}." if where else ""
        if not isinstance(state, dict) or not isinstance(state.get("nodes"), dict):
            raise invalid(f"{prefix}nodes: a note's state has a nodes map")
        self.where, self.human, self.model = prefix, human, model
        self.title = PurePosixPath(name).stem or name
        self.nodes: dict[str, dict[str, Any]] = {}
        for nid, node in state["nodes"].items():
            at = f'{prefix}nodes["{nid}"]'
            if not isinstance(node, dict):
                raise invalid(f"{at}: a node is a JSON object")
            if not isinstance(node.get("text", ""), str):
                raise invalid(f"{at}.text: the text is not a string")
            parent = node.get("parentId")
            if parent is not None and str(parent) not in state["nodes"]:
                raise invalid(f'{at}.parentId: node "{nid}" has parent "{parent}" which is '
                              "not in nodes")
            self.nodes[str(nid)] = node
        self.current = state.get("current")
        self.rest = drop_secrets({k: v for k, v in state.items() if k != "nodes"})
        self.roots, self.order = self._walk()

    def _walk(self) -> tuple[list[str], list[str]]:
        """Roots and every node parents-first, iteratively; what is left is on a cycle."""
        kids: dict[str | None, list[str]] = defaultdict(list)
        for nid, node in self.nodes.items():
            parent = node.get("parentId")
            kids[None if parent is None else str(parent)].append(nid)
        roots = kids[None]
        order: list[str] = []
        stack = list(reversed(roots))
        while stack:
            nid = stack.pop()
            order.append(nid)
            stack.extend(reversed(kids.get(nid, [])))
        if len(order) < len(self.nodes):
            seen = set(order)
            loop = self._cycle_from(next(n for n in self.nodes if n not in seen))
            raise invalid(f'{self.where}nodes["{loop[0]}"].parentId: nodes '
                          f"{' → '.join(repr(n) for n in loop)} form a cycle of parentIds")
        return roots, order

    def _cycle_from(self, start: str) -> list[str]:
        path, at = [start], str(self.nodes[start]["parentId"])
        while at not in path:
            path.append(at)
            at = str(self.nodes[at]["parentId"])
        return [*path[path.index(at):], at]

    def _extra(self, nid: str, inferred: bool) -> dict[str, Any]:
        kept = {k: v for k, v in self.nodes[nid].items() if k not in _STRUCTURE}
        extra: dict[str, Any] = {"loomsidian": {"id": nid, **kept}}
        if inferred:
            extra["authorship"] = "inferred"
        return extra

    def write(self, ws: Workspace) -> Tree:
        single = len(self.roots) == 1
        root_id = self.roots[0] if single else None
        root_text = (self.nodes[root_id].get("text") or "") if root_id else ""
        tree = ws.create_tree(unique_title(self.title), "buffer", author=ws.human(self.human),
                              root_content=root_text)
        root = Node.get_by_id(tree.root)
        root_extra = {**(self._extra(root_id, False) if root_id else {}),
                      "loomsidian_note": self.rest}
        Node.update(extra=root_extra,
                    bookmarked=bool(root_id and self.nodes[root_id].get("bookmarked"))
                    ).where(Node.id == root.id).execute()
        specs = []
        for nid in self.order:
            if nid == root_id:
                continue
            parent = self.nodes[nid].get("parentId")
            is_root = parent is None
            specs.append(NewNode(
                key=nid, parent=None if is_root or str(parent) == root_id else str(parent),
                content=self.nodes[nid].get("text") or "",
                author=self.human if is_root else self.model,
                author_type="human" if is_root else "model",
                bookmarked=bool(self.nodes[nid].get("bookmarked")),
                extra=self._extra(nid, not is_root),
            ))
        added = ws.bulk_add(tree, root, specs)
        current = str(self.current) if self.current is not None else None
        target = root.id if current == root_id else added[current].id if current in added \
            else None
        if target is not None:
            place(ws, ws.human(self.human), tree, target)
        return Tree.get_by_id(tree.id)
