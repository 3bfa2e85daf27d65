"""Open Loom v1 (the Loom Swift prototype's format) → Open Loom 2.0 (§ 8.1).

A v1 tree is ``{id, title, description, lastModified, systemMessage, rootNodeId,
currentNodeId, nodes: {id: node}, bookmarkedNodes}`` with nodes ``{id, text, author:
user|assistant|system, modelId, createdTime, parentId, childrenIds, rememberedChildId,
isBookmarked, bookmarkTitle}``; a file holds one tree or an array of them. Decisions:

- ``childrenIds`` order is sibling order (a child that names a parent not listing it
  comes after); ``author`` → ``human``/``model``/``system``; a model node's ``modelId`` →
  ``generation.model`` and its author's name, a user node's (a user name) → its author's
  name. Dates are Swift reference-date seconds (since 2001-01-01) when numeric.
- ``isBookmarked``/``bookmarkTitle`` → ``meta``; the redundant ``bookmarkedNodes`` map is
  ignored; ``rememberedChildId`` (navigation state) → ``extensions["open-loom-v1"]``;
  ``systemMessage`` → ``systemContext``; dialogue mode (v1 was a chat).
"""

from __future__ import annotations

from typing import Any

from loom.interchange.adapters import Ids, document, edge, invalid, text_node
from loom.interchange.times import format_time, parse_swift
from loom.model.ids import new_ulid

NAME = "Open Loom v1"
NS = "open-loom-v1"
_ROLE = {"user": "human", "assistant": "model", "system": "system"}
_NODE_MAPPED = ("id", "text", "author", "modelId", "createdTime", "parentId", "childrenIds",
                "isBookmarked", "bookmarkTitle")
_TREE_MAPPED = ("id", "title", "description", "lastModified", "systemMessage", "rootNodeId",
                "currentNodeId", "nodes", "bookmarkedNodes")


def _is_tree(data: Any) -> bool:
    return isinstance(data, dict) and "format" not in data and isinstance(
        data.get("nodes"), dict) and "rootNodeId" in data and (
        "bookmarkedNodes" in data or any(isinstance(n, dict) and "childrenIds" in n
                                         for n in data["nodes"].values()))


def detect(data: Any) -> bool:
    if isinstance(data, list):
        return bool(data) and all(_is_tree(t) for t in data)
    return _is_tree(data)


def _tree(i: int, data: dict[str, Any], many: bool) -> dict[str, Any]:
    where = f"[{i}]." if many else ""
    raw = data["nodes"]
    ids = Ids()
    key_of: dict[str, str] = {}
    exts: dict[str, dict[str, Any]] = {}
    for key, node in raw.items():
        if not isinstance(node, dict):
            raise invalid(f'{where}nodes["{key}"]: a node is a JSON object')
        if not isinstance(node.get("text", ""), str):
            raise invalid(f'{where}nodes["{key}"].text: the text is not a string')
        exts[str(key)] = {}
        key_of[str(key)] = ids.take(str(key), exts[str(key)])
    nodes: dict[str, dict[str, Any]] = {}
    parent_of: dict[str, str | None] = {}
    for key, node in raw.items():
        nid = key_of[str(key)]
        parent = node.get("parentId")
        parent_of[nid] = key_of.get(str(parent)) if parent is not None else None
        if parent is not None and parent_of[nid] is None:
            raise invalid(f'{where}nodes["{key}"].parentId: "{parent}" is not a node')
        author = node.get("author")
        role = _ROLE.get(author, "human") if isinstance(author, str) else "human"
        ext = exts[str(key)]
        if author not in _ROLE:
            ext["author"] = author
        ext.update({k: v for k, v in node.items() if k not in _NODE_MAPPED})
        model = node.get("modelId") if isinstance(node.get("modelId"), str) and \
            node.get("modelId") else None
        created = parse_swift(node.get("createdTime"))
        if node.get("createdTime") is not None and created is None:
            ext["createdTime"] = node["createdTime"]
        label = node.get("bookmarkTitle")
        nodes[nid] = text_node(
            nid, node.get("text") or "", role, name=model,
            created=format_time(created) if created is not None else None,
            meta={"bookmarked": node.get("isBookmarked") is True,
                  "bookmarkLabel": label if isinstance(label, str) else None},
            generation={"model": model} if model and role == "model" else None,
            namespace=NS, ext=ext)
    edges, placed = [], set()
    for key, node in raw.items():
        nid = key_of[str(key)]
        children = node.get("childrenIds")
        for child in children if isinstance(children, list) else []:
            cid = key_of.get(str(child))
            if cid is not None and parent_of.get(cid) == nid and cid not in placed:
                edges.append(edge(nid, cid))
                placed.add(cid)
    for nid, parent in parent_of.items():
        if parent is not None and nid not in placed:
            edges.append(edge(parent, nid))
    root = key_of.get(str(data.get("rootNodeId")))
    roots = ([root] if root and parent_of.get(root) is None else []) + [
        nid for nid, parent in parent_of.items() if parent is None and nid != root]
    tid = data.get("id")
    tree: dict[str, Any] = {"id": tid if isinstance(tid, str) and tid else new_ulid(),
                            "title": str(data.get("title") or ""),
                            "mode": "dialogue", "rootNodeIds": roots, "nodes": nodes,
                            "edges": edges}
    if isinstance(data.get("description"), str) and data["description"]:
        tree["description"] = data["description"]
    if isinstance(data.get("systemMessage"), str) and data["systemMessage"]:
        tree["systemContext"] = data["systemMessage"]
    updated = parse_swift(data.get("lastModified"))
    if updated is not None:
        tree["updatedAt"] = format_time(updated)
    current = data.get("currentNodeId")
    if current is not None and str(current) in key_of:
        tree["currentNodeId"] = key_of[str(current)]
    rest = {k: v for k, v in data.items() if k not in _TREE_MAPPED}
    if rest:
        tree["extensions"] = {NS: rest}
    return tree


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    many = isinstance(data, list)
    trees = [_tree(i, t, many) for i, t in enumerate(data if many else [data])]
    for tree in trees:
        if not tree["title"]:
            tree["title"] = name or "Open Loom v1"
    return document(trees), []
