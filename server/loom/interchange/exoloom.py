"""exoloom → Open Loom 2.0.

An exoloom export is ``{title, description, nodes, lens, …}``: ``nodes`` a list (or a map)
of ``{id, parentId, text, authorType: USER|LLM, model?, createdAt?, children?}``, and
``lens`` the reader's view of the tree: ``bookmarks`` (node ids, or ``{nodeId, label}``),
``prunedNodes`` (node ids) and the node being read. Decisions:

- ``authorType`` ``USER``/``LLM`` → ``human``/``model``; the model a node names becomes its
  author's name and ``generation.model`` (what the file records, nothing more).
- Children order: a node's ``children`` list when it has one, else the order of
  ``nodes``. Several parentless nodes make a multi-root tree. Dialogue mode unless the
  file says ``mode``.
- ``lens.bookmarks`` → bookmarked (with their label); ``lens.prunedNodes`` → pruned; the
  lens's current node → the current node; the rest of the lens and of each node →
  ``extensions.exoloom``.
"""

from __future__ import annotations

from typing import Any

from loom.interchange.adapters import Ids, document, edge, invalid, text_node
from loom.interchange.times import format_time, parse_any
from loom.model.ids import new_ulid

NAME = "exoloom"
NS = "exoloom"
_PARENT = ("parentId", "parent_id", "parent")
_TEXT = ("text", "content")
_MODEL = ("model", "modelName", "llm")
_TIME = ("createdAt", "created_at", "timestamp", "created")
_CURRENT = ("currentNodeId", "current", "focusedNodeId", "activeNodeId", "selectedNodeId")


def _nodes(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    nodes = data.get("nodes")
    if isinstance(nodes, dict):
        nodes = [({"id": k, **v} if "id" not in v else v) for k, v in nodes.items()
                 if isinstance(v, dict)]
    return nodes if isinstance(nodes, list) else None


def detect(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    nodes = _nodes(data)
    return nodes is not None and (isinstance(data.get("lens"), dict) or any(
        isinstance(n, dict) and "authorType" in n for n in nodes))


def _first(node: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((node[k] for k in keys if node.get(k) is not None), None)


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    raw_nodes = _nodes(data) or []
    ids = Ids()
    keyed: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    key_of: dict[str, str] = {}
    for i, node in enumerate(raw_nodes):
        if not isinstance(node, dict):
            raise invalid(f"nodes[{i}]: a node is a JSON object")
        text = _first(node, _TEXT)
        if text is not None and not isinstance(text, str):
            raise invalid(f"nodes[{i}].text: the text is not a string")
        ext: dict[str, Any] = {}
        nid = ids.take(node.get("id"), ext)
        if node.get("id") is not None:
            key_of.setdefault(str(node["id"]), nid)
        keyed.append((nid, node, ext))
    if not keyed:
        raise invalid("nodes: the exoloom file has no nodes")
    lens = data.get("lens") if isinstance(data.get("lens"), dict) else {}
    bookmarks: dict[str, str | None] = {}
    for mark in lens.get("bookmarks") or []:
        ref = mark if not isinstance(mark, dict) else _first(mark, ("nodeId", "id", "node"))
        label = mark.get("label") or mark.get("name") if isinstance(mark, dict) else None
        if ref is not None and str(ref) in key_of:
            bookmarks[key_of[str(ref)]] = label if isinstance(label, str) else None
    pruned = {key_of[str(p)] for p in lens.get("prunedNodes") or [] if str(p) in key_of}
    nodes: dict[str, dict[str, Any]] = {}
    parent_of: dict[str, str | None] = {}
    for nid, node, ext in keyed:
        parent = _first(node, _PARENT)
        parent_of[nid] = key_of.get(str(parent)) if parent is not None else None
        if parent is not None and parent_of[nid] is None:
            raise invalid(f'nodes: node "{node.get("id")}" has parent "{parent}" which is '
                          "not a node")
        kind = str(node.get("authorType") or "USER").upper()
        role = "model" if kind in ("LLM", "MODEL", "AI", "ASSISTANT") else "human"
        model = _first(node, _MODEL)
        model = str(model) if model is not None else None
        created = parse_any(_first(node, _TIME))
        ext.update({k: v for k, v in node.items() if k not in (
            "id", *_PARENT, *_TEXT, "authorType", *_MODEL, *_TIME, "children")})
        if kind not in ("USER", "LLM"):
            ext["authorType"] = node.get("authorType")
        if _first(node, _TIME) is not None and created is None:
            ext["createdAt"] = _first(node, _TIME)
        nodes[nid] = text_node(
            nid, _first(node, _TEXT) or "", role, name=model if role == "model" else None,
            created=format_time(created) if created is not None else None,
            meta={"bookmarked": nid in bookmarks, "bookmarkLabel": bookmarks.get(nid),
                  "pruned": nid in pruned},
            generation={"model": model} if model and role == "model" else None,
            namespace=NS, ext=ext)
    edges: list[dict[str, Any]] = []
    placed: set[str] = set()
    for nid, node, _ in keyed:  # a node's own children list first, in its order
        children = node.get("children")
        for child in children if isinstance(children, list) else []:
            cid = key_of.get(str(child))
            if cid is not None and parent_of.get(cid) == nid and cid not in placed:
                edges.append(edge(nid, cid))
                placed.add(cid)
    for nid, _, _ in keyed:
        if parent_of[nid] is not None and nid not in placed:
            edges.append(edge(parent_of[nid], nid))  # type: ignore[arg-type]
    mode = data.get("mode") if data.get("mode") in ("buffer", "dialogue") else "dialogue"
    tree: dict[str, Any] = {
        "id": new_ulid(), "title": str(data.get("title") or name or "exoloom"), "mode": mode,
        "rootNodeIds": [nid for nid, _, _ in keyed if parent_of[nid] is None],
        "nodes": nodes, "edges": edges}
    if isinstance(data.get("description"), str) and data["description"]:
        tree["description"] = data["description"]
    current = _first(lens, _CURRENT) if lens else None
    current = current if current is not None else _first(data, _CURRENT)
    if current is not None and str(current) in key_of:
        tree["currentNodeId"] = key_of[str(current)]
    rest = {k: v for k, v in data.items() if k not in ("title", "description", "nodes",
                                                       "lens", "mode")}
    lens_rest = {k: v for k, v in lens.items() if k not in ("bookmarks", "prunedNodes",
                                                            *_CURRENT)}
    if lens_rest:
        rest["lens"] = lens_rest
    if rest:
        tree["extensions"] = {NS: rest}
    return document([tree]), ids.note(NAME)
