"""loomsidian (the Obsidian loom plugin) → Open Loom 2.0 (§ 8.3).

Two shapes: one note's state ``{"nodes": {id: node}, "current": id, …}``, or the plugin's
``data.json`` ``{"settings": …, "state": {"<note path>": {current, hoisted, nodes, …}}}``,
which gives one tree per note. A node is ``{text, parentId, unread, bookmarked,
lastVisited, collapsed, color…}``. Decisions:

- Buffer mode; a note with several roots (the plugin allows them) is a multi-root tree.
- Children keep the order of the ``nodes`` map (sibling order is undefined in the plugin).
- The plugin records no authorship: roots are the human's, every other node is ``mixed``
  (the draft's advice: marking them all the model's is wrong too often).
- ``bookmarked`` → bookmarked; the nodes' other fields (``unread``, ``collapsed``,
  ``lastVisited``, colours…) and the note's (``hoisted``…) → ``extensions.loomsidian``.
  ``settings`` (which hold API keys) are never kept. ``current`` → the current node.
- A note's tree is titled after the note's name (``notes/story.md`` → ``story``); its key
  in ``state`` is kept whole as ``extensions.loomsidian.notePath``.
- A ``parentId`` naming no node is an error naming the node; parentIds forming a cycle
  are repaired like any Open Loom cycle.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from loom.interchange.adapters import Ids, document, drop_secrets, edge, invalid, text_node
from loom.model.ids import new_ulid

NAME = "loomsidian"
NS = "loomsidian"
_STRUCTURE = ("text", "parentId", "bookmarked")


def detect(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if isinstance(data.get("state"), dict):
        return True
    nodes = data.get("nodes")
    return isinstance(nodes, dict) and all(
        isinstance(n, dict) and "parentId" in n for n in nodes.values())


def _note(where: str, title: str, state: Any, path: str | None = None
          ) -> dict[str, Any] | None:
    prefix = f"{where}." if where else ""
    if not isinstance(state, dict) or not isinstance(state.get("nodes"), dict):
        raise invalid(f"{prefix}nodes: a note's state has a nodes map")
    raw = state["nodes"]
    if not raw:
        return None
    ids = Ids()
    key_of: dict[str, str] = {}
    for key, node in raw.items():
        at = f'{prefix}nodes["{key}"]'
        if not isinstance(node, dict):
            raise invalid(f"{at}: a node is a JSON object")
        if not isinstance(node.get("text", ""), str):
            raise invalid(f"{at}.text: the text is not a string")
        parent = node.get("parentId")
        if parent is not None and str(parent) not in raw:
            raise invalid(f'{at}.parentId: node "{key}" has parent "{parent}" which is not '
                          "in nodes")
        key_of[str(key)] = ids.take(str(key), {})
    nodes, edges, roots = {}, [], []
    for key, node in raw.items():
        nid = key_of[str(key)]
        parent = node.get("parentId")
        ext = {k: v for k, v in node.items() if k not in _STRUCTURE}
        nodes[nid] = text_node(nid, node.get("text") or "", "human" if parent is None
                               else "mixed", meta={"bookmarked": node.get("bookmarked") is True},
                               namespace=NS, ext=ext)
        if parent is None:
            roots.append(nid)
        else:
            edges.append(edge(key_of[str(parent)], nid))
    tree: dict[str, Any] = {"id": new_ulid(), "title": PurePosixPath(title).stem or title,
                            "mode": "buffer", "rootNodeIds": roots, "nodes": nodes,
                            "edges": edges}
    current = state.get("current")
    if current is not None and str(current) in key_of:
        tree["currentNodeId"] = key_of[str(current)]
    rest = drop_secrets({k: v for k, v in state.items() if k not in ("nodes", "current")})
    if path is not None:
        rest["notePath"] = path  # the title is only its stem: "notes/story.md" → "story"
    if rest:
        tree["extensions"] = {NS: rest}
    return tree


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    if isinstance(data.get("state"), dict):
        notes = [(f'state["{path}"]', str(path), state, str(path))
                 for path, state in data["state"].items()]
    else:
        notes = [("", name or "loomsidian", data, None)]
    trees = [t for t in (_note(*n) for n in notes) if t is not None]
    if not trees:
        raise invalid("the loomsidian data has no nodes", "open the note in Obsidian first")
    out = []
    if isinstance(data.get("settings"), dict):
        out.append("the plugin's settings were not imported (they hold API keys)")
    return document(trees), out
