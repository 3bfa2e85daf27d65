"""MiniLoom (JD-P/minihf's loom) → Open Loom 2.0 (§ 8.4).

A save is ``{"loomTree": {"root": node, "nodeStore": {id: node}}, "focus": node}``; a node
is ``{id, timestamp (ms), type: root|user|gen, patch, summary, rating, parent, children}``
where ``patch`` is a diff-match-patch patch (the JSON of its patch objects, or its text
form) turning the parent's *rendered* text into this node's. Decisions:

- Each node's full text is materialised by applying the patches from the root (with the
  ``diff-match-patch`` library, as MiniLoom does). Loom's nodes hold what they add to
  their parent, so a node whose text extends its parent's holds the addition; a node that
  rewrote its parent's text (MiniLoom lets a user edit anywhere) holds the whole text, and
  ``extensions.miniloom.rewrite`` says so. The patch itself is kept in
  ``extensions.miniloom.patch``; a patch that does not apply cleanly is a repair.
- ``type`` ``user``/``gen`` → ``human``/``model`` (the root is the human's); ``rating``
  (true/false, or a number) → ``meta.rating`` (1/−1); ``summary`` → ``meta.note``;
  ``timestamp`` → ``createdAt``; ``children`` order is sibling order; ``focus`` → the
  current node. A buffer-mode tree.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import diff_match_patch as dmp_module

from loom.interchange.adapters import Ids, document, edge, invalid, text_node
from loom.interchange.times import format_time, parse_epoch
from loom.interchange.utf16 import from_units, has_lone_half, to_units
from loom.model.ids import new_ulid

NAME = "MiniLoom"
NS = "miniloom"
_MAPPED = ("id", "timestamp", "type", "summary", "rating", "parent", "children", "model")


def detect(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    tree = data.get("loomTree")
    if isinstance(tree, dict) and isinstance(tree.get("nodeStore"), dict):
        return True
    store = data.get("nodeStore")
    return isinstance(store, dict) and any(
        isinstance(n, dict) and "patch" in n and n.get("type") in ("root", "user", "gen")
        for n in store.values())


def _patches(dmp: dmp_module.diff_match_patch, patch: Any, where: str) -> list[Any]:
    """diff-match-patch patch objects from what the file stores."""
    if patch in (None, "", []):
        return []
    if isinstance(patch, str):
        try:
            return dmp.patch_fromText(patch)
        except ValueError:
            raise invalid(f"{where}.patch: not a diff-match-patch patch") from None
    if not isinstance(patch, list):
        raise invalid(f"{where}.patch: not a diff-match-patch patch")
    out = []
    for j, item in enumerate(patch):
        if not isinstance(item, dict) or not isinstance(item.get("diffs"), list):
            raise invalid(f"{where}.patch[{j}]: not a diff-match-patch patch object")
        p = dmp_module.patch_obj()
        try:
            # in UTF-16 units, as MiniLoom (JavaScript) counted them
            p.diffs = [(int(op), to_units(str(text))) for op, text in item["diffs"]]
            p.start1, p.start2 = int(item.get("start1") or 0), int(item.get("start2") or 0)
            p.length1, p.length2 = int(item.get("length1") or 0), int(item.get("length2") or 0)
        except (TypeError, ValueError):
            raise invalid(f"{where}.patch[{j}]: its diffs are not [operation, text] "
                          "pairs") from None
        out.append(p)
    return out


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    tree_raw = data.get("loomTree") if isinstance(data.get("loomTree"), dict) else data
    store = tree_raw.get("nodeStore")
    if not isinstance(store, dict) or not store:
        raise invalid("loomTree.nodeStore: the MiniLoom tree has no nodes")
    for key, node in store.items():
        if not isinstance(node, dict):
            raise invalid(f'loomTree.nodeStore["{key}"]: a node is a JSON object')
    dmp = dmp_module.diff_match_patch()
    ids = Ids()
    key_of = {str(k): ids.take(str(k), {}) for k in store}

    def parent_of(key: str) -> str | None:
        parent = store[key].get("parent")
        return str(parent) if parent is not None and str(parent) in store else None

    # Children order: each node's ``children`` list, then any node naming a parent that
    # does not list it, in store order.
    kids: dict[str | None, list[str]] = {}
    for key in store:
        listed = store[key].get("children")
        kids[key] = [str(c) for c in listed if str(c) in store and parent_of(str(c)) == key] \
            if isinstance(listed, list) else []
    for key in store:
        parent = parent_of(key)
        bucket = kids.setdefault(parent, [])
        if key not in bucket:
            bucket.append(key)
    roots = kids.get(None, [])
    full: dict[str, str] = {}
    notes: list[str] = []
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    rewrites = failed = 0
    order: list[str] = []
    queue = deque(roots)
    seen: set[str] = set()
    while queue:
        key = queue.popleft()
        if key in seen:
            continue
        seen.add(key)
        order.append(key)
        queue.extend(kids.get(key, []))
    for key in order:
        node = store[key]
        where = f'loomTree.nodeStore["{key}"]'
        parent = parent_of(key)
        base = full.get(parent, "") if parent is not None else ""
        units, results = dmp.patch_apply(_patches(dmp, node.get("patch"), where),
                                         to_units(base))
        if not all(results):
            failed += 1
        text = from_units(units)
        if has_lone_half(text):  # a patch that did not apply cleanly cut a character
            text = text.encode("utf-8", "replace").decode("utf-8")
            failed += all(results)
        full[key] = text
        ext: dict[str, Any] = {k: v for k, v in node.items() if k not in _MAPPED}
        if "patch" in ext and has_lone_half(json.dumps(ext["patch"], ensure_ascii=False)):
            # a patch whose context cuts a character in two (MiniLoom counts UTF-16
            # units): kept as its JSON text, escapes and all (UTF-8 cannot hold the half)
            ext["patchJson"] = json.dumps(ext.pop("patch"))
        if str(node.get("id", key)) != key:
            ext["id"] = node.get("id")
        if text.startswith(base):
            content = text[len(base):]
        else:
            content = text
            ext["rewrite"] = True
            rewrites += 1
        kind = node.get("type")
        role = "model" if kind == "gen" else "human"
        rating = node.get("rating")
        if isinstance(rating, bool):
            rating = 1 if rating else -1
        elif not (isinstance(rating, int) and not isinstance(rating, bool)):
            rating = None
        created = parse_epoch(node.get("timestamp"), millis=True)
        nid = key_of[key]
        model = node.get("model") if isinstance(node.get("model"), str) else None
        made_by = model if role == "model" and model else None
        if made_by is None and "model" in node:
            ext["model"] = node["model"]  # (on a user's node, or not a name: kept as it was)
        nodes[nid] = text_node(
            nid, content, role, name=made_by,
            generation={"model": made_by} if made_by else None,
            created=format_time(created) if created is not None else None,
            meta={"rating": rating, "note": node.get("summary")
                  if isinstance(node.get("summary"), str) else None},
            namespace=NS, ext=ext)
        if parent is not None:
            edges.append(edge(key_of[parent], nid))
    tree: dict[str, Any] = {"id": new_ulid(), "title": name or "MiniLoom", "mode": "buffer",
                            "rootNodeIds": [key_of[r] for r in roots], "nodes": nodes,
                            "edges": edges}
    focus = data.get("focus")
    focus_id = focus.get("id") if isinstance(focus, dict) else focus
    if focus_id is not None and str(focus_id) in key_of:
        tree["currentNodeId"] = key_of[str(focus_id)]
    rest = {k: v for k, v in data.items() if k not in ("loomTree", "focus", "nodeStore")}
    tree_rest = {k: v for k, v in tree_raw.items() if k not in ("root", "nodeStore")} \
        if tree_raw is not data else {}
    if rest or tree_rest:
        tree["extensions"] = {NS: {**rest, **({"loomTree": tree_rest} if tree_rest else {})}}
    if rewrites:
        notes.append(f"{rewrites} MiniLoom node(s) rewrite their parent's text: each holds "
                     "its whole text")
    if failed:
        notes.append(f"{failed} MiniLoom patch(es) did not apply cleanly: the text is "
                     "diff-match-patch's best match")
    return document([tree]), notes
