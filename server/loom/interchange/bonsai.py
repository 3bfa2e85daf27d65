"""Bonsai → Open Loom 2.0.

Bonsai (a web loom) publishes no format description and no source; its files are known
from the two programs that write them: tel-0s/damask's ``to_bonsai_format``/
``from_bonsai_format`` (damask.py, commit dc37766a) and hunarbatra's
``bonsai_export_runner`` (bonsai_export.py in hunarbatra/model-written-evals, commit
c4208061, with the file it wrote, dataset/bonsai.json). A file is
``{nodes: [node], edges: [{from, to, relation: "parentId"}], name, pathNodes, focusedId}``
and a node ``{id, text, childrenIds, parentIds, group: "normal"|"path", visible, tags,
createdAt, lastVisited, lastUpdated, logprobs, generationSettings, label}`` (hunarbatra's
writes only id, text, parentIds, childrenIds, lastVisited as a string of seconds, and
``group: "path"`` on the focused path). Decisions:

- A node's parent is the first of its ``parentIds``, else the ``from`` of a ``parentId``
  edge to it, else the node whose ``childrenIds`` lists it; nodes with none are roots
  (damask takes ``nodes[0]``; several make a multi-root tree). Sibling order is the
  parent's ``childrenIds``, then the order of ``nodes``. What says otherwise (a second
  parent, a ``childrenIds`` or ``pathNodes`` that disagrees with the tree, an edge of another
  relation or naming no node) is kept verbatim under ``extensions.bonsai``.
- Bonsai records no author: a node with ``logprobs`` or ``generationSettings`` was
  generated (``model``, named by the settings' ``model``/``engine`` if any); otherwise roots
  are the human's and the rest ``mixed``, as for loomsidian. The settings →
  ``generation.parameters`` (credentials never kept); ``logprobs`` (shape undocumented,
  always null in the known writers) are kept verbatim in the extension, not as token data.
- ``visible: false`` → pruned; ``tags`` (strings) → ``meta.tags``; ``createdAt`` (ms) →
  createdAt; ``focusedId`` (else the end of ``pathNodes``) → the current node; ``name`` →
  the title; buffer mode (a completion loom). ``group``, ``label``, ``lastVisited``,
  ``lastUpdated`` and whatever else a node or the file holds → ``extensions.bonsai``.
"""

from __future__ import annotations

from typing import Any

from loom.interchange.adapters import Ids, document, drop_secrets, edge, invalid, text_node
from loom.interchange.times import format_time, parse_any
from loom.model.ids import new_ulid

NAME = "Bonsai"
NS = "bonsai"
_PARENT_RELATION = (None, "parentId")
_TREE_MAPPED = ("nodes", "edges", "name", "focusedId", "pathNodes")
_MODEL_KEYS = ("model", "engine")


def detect(data: Any) -> bool:
    if not isinstance(data, dict) or "format" in data or not isinstance(data.get("nodes"), list):
        return False
    if "pathNodes" in data or "focusedId" in data:
        return True
    return any(isinstance(n, dict) and ("childrenIds" in n or "parentIds" in n)
               for n in data["nodes"])


def _ids_list(node: dict[str, Any], key: str, at: str) -> list[str] | None:
    value = node.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str | int) and
                                              not isinstance(v, bool) for v in value):
        raise invalid(f"{at}.{key}: a list of node ids")
    return [str(v) for v in value]


class _Reader:
    """One file's nodes keyed, then their parents, children and what disagrees."""

    def __init__(self, data: dict[str, Any]) -> None:
        raw = data.get("nodes")
        if not isinstance(raw, list):
            raise invalid("nodes: a Bonsai file has a list of nodes")
        if not raw:
            raise invalid("nodes: the Bonsai file has no nodes")
        self.ids = Ids()
        self.rows: list[tuple[str, str | None, dict[str, Any], dict[str, Any]]] = []
        self.key_of: dict[str, str] = {}
        for i, node in enumerate(raw):
            at = f"nodes[{i}]"
            if not isinstance(node, dict):
                raise invalid(f"{at}: a node is a JSON object")
            if not isinstance(node.get("text", ""), str | None):
                raise invalid(f"{at}.text: the text is not a string")
            for key in ("parentIds", "childrenIds"):
                _ids_list(node, key, at)
            ext: dict[str, Any] = {}
            original = node.get("id")
            nid = self.ids.take(original, ext)
            key = str(original) if isinstance(original, str | int) and \
                not isinstance(original, bool) else None
            if key is not None:
                self.key_of.setdefault(key, nid)
            self.rows.append((nid, key, node, ext))
        self.dangling = 0
        self.edges = data.get("edges", [])
        if not isinstance(self.edges, list):
            raise invalid("edges: a list of {from, to, relation}")
        for i, e in enumerate(self.edges):
            if not isinstance(e, dict):
                raise invalid(f"edges[{i}]: an edge is a JSON object {{from, to, relation}}")

    def resolve(self, ref: Any) -> str | None:
        return self.key_of.get(str(ref)) if isinstance(ref, str | int) and \
            not isinstance(ref, bool) else None

    def parents(self) -> dict[str, str | None]:
        by_edge: dict[str, str] = {}
        for e in self.edges:
            src, dst = self.resolve(e.get("from")), self.resolve(e.get("to"))
            if src is None or dst is None:
                self.dangling += 1
            elif e.get("relation") in _PARENT_RELATION:
                by_edge.setdefault(dst, src)
        by_list: dict[str, str] = {}
        for nid, _, node, _ in self.rows:
            for child in _ids_list(node, "childrenIds", "") or []:
                cid = self.key_of.get(child)
                if cid is None:
                    self.dangling += 1
                else:
                    by_list.setdefault(cid, nid)
        parent_of: dict[str, str | None] = {}
        for i, (nid, _, node, _) in enumerate(self.rows):
            listed = _ids_list(node, "parentIds", "") or []
            for p in listed:
                if p not in self.key_of:
                    raise invalid(f'nodes[{i}].parentIds: node "{node.get("id")}" has parent '
                                  f'"{p}" which is not a node')
            parent_of[nid] = self.key_of[listed[0]] if listed else \
                by_edge.get(nid) or by_list.get(nid)
        return parent_of

    def children(self, parent_of: dict[str, str | None]) -> dict[str, list[str]]:
        """Each node's children in sibling order: its ``childrenIds``, then ``nodes`` order."""
        out: dict[str, list[str]] = {nid: [] for nid, _, _, _ in self.rows}
        placed: set[str] = set()
        for nid, _, node, _ in self.rows:
            for child in _ids_list(node, "childrenIds", "") or []:
                cid = self.key_of.get(child)
                if cid is not None and parent_of.get(cid) == nid and cid not in placed:
                    out[nid].append(cid)
                    placed.add(cid)
        for nid, _, _, _ in self.rows:
            parent = parent_of[nid]
            if parent is not None and nid not in placed:
                out[parent].append(nid)
                placed.add(nid)
        return out


def _generation(node: dict[str, Any], ext: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """(generated?, the generation record) from ``generationSettings`` and ``logprobs``."""
    settings = node.get("generationSettings")
    generated = settings is not None or node.get("logprobs") is not None
    if settings is None:
        return generated, None
    if not isinstance(settings, dict):
        ext["generationSettings"] = settings
        return generated, None
    gen: dict[str, Any] = {"parameters": drop_secrets(settings)}
    model = next((settings[k] for k in _MODEL_KEYS if isinstance(settings.get(k), str)
                  and settings[k]), None)
    if model:
        gen["model"] = model
    return generated, gen


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(data, dict):
        raise invalid("a Bonsai file is a JSON object with nodes and edges")
    reader = _Reader(data)
    parent_of = reader.parents()
    children = reader.children(parent_of)
    original = {nid: key for nid, key, _, _ in reader.rows}
    nodes: dict[str, dict[str, Any]] = {}
    several, with_logprobs = 0, 0
    for nid, _, node, ext in reader.rows:
        parent = parent_of[nid]
        listed = _ids_list(node, "parentIds", "")
        if listed is not None and listed != ([original[parent]] if parent else []):
            ext["parentIds"] = node["parentIds"]
            several += len(listed) > 1
        kids = _ids_list(node, "childrenIds", "")
        if kids is not None and kids != [original[c] for c in children[nid]]:
            ext["childrenIds"] = node["childrenIds"]
        generated, gen = _generation(node, ext)
        if node.get("logprobs") is not None:
            ext["logprobs"] = node["logprobs"]
            with_logprobs += 1
        created = parse_any(node.get("createdAt"))
        if node.get("createdAt") is not None and created is None:
            ext["createdAt"] = node["createdAt"]
        visible, tags = node.get("visible"), node.get("tags")
        if visible is not None and not isinstance(visible, bool):
            ext["visible"] = visible
        good_tags = isinstance(tags, list) and all(isinstance(t, str) for t in tags)
        if tags is not None and not good_tags:
            ext["tags"] = tags
        ext.update({k: v for k, v in node.items() if k not in (
            "id", "text", "parentIds", "childrenIds", "generationSettings", "logprobs",
            "createdAt", "visible", "tags")})
        role = "model" if generated else "human" if parent is None else "mixed"
        model = gen.get("model") if gen else None
        nodes[nid] = text_node(
            nid, node.get("text") or "", role, name=model,
            created=format_time(created) if created is not None else None,
            meta={"pruned": visible is False, "tags": tags if good_tags else None},
            generation=gen, namespace=NS, ext=ext)
    edges = [edge(nid, c) for nid, _, _, _ in reader.rows for c in children[nid]]
    tree: dict[str, Any] = {
        "id": new_ulid(), "title": str(data.get("name") or name or "bonsai"), "mode": "buffer",
        "rootNodeIds": [nid for nid, _, _, _ in reader.rows if parent_of[nid] is None],
        "nodes": nodes, "edges": edges}
    notes = reader.ids.note(NAME)
    current = reader.resolve(data.get("focusedId"))
    path = data.get("pathNodes")
    lost = data.get("focusedId") is not None and current is None
    if current is None and isinstance(path, list):
        current = next((c for c in map(reader.resolve, reversed(path)) if c), None)
    if lost:
        notes.append(f'focusedId "{data["focusedId"]}" names no node: the current node is '
                     + ("the end of pathNodes" if current else "not set"))
    rest = {k: v for k, v in data.items() if k not in _TREE_MAPPED}
    if current is not None:
        tree["currentNodeId"] = current
    if path is not None and path != _path(current, parent_of, original):
        rest["pathNodes"] = path
    if data.get("focusedId") is not None and reader.resolve(data["focusedId"]) is None:
        rest["focusedId"] = data["focusedId"]
    kept = [e for e in reader.edges if not _is_tree_edge(e, reader, parent_of)]
    if kept:
        rest["edges"] = kept
    if rest:
        tree["extensions"] = {NS: rest}
    if several:
        notes.append(f"{several} Bonsai node(s) have several parents: the first is the parent, "
                     "the list is kept (extensions.bonsai.parentIds)")
    if reader.dangling:
        notes.append(f"{reader.dangling} Bonsai reference(s) in childrenIds or edges name no "
                     "node: kept in extensions.bonsai, not in the tree")
    if with_logprobs:
        notes.append(f"{with_logprobs} Bonsai node(s) carry logprobs: kept verbatim "
                     "(extensions.bonsai.logprobs), not as Loom token data")
    return document([tree]), notes


def _path(current: str | None, parent_of: dict[str, str | None],
          original: dict[str, str | None]) -> list[str] | None:
    """The original ids from the root to ``current``, as ``pathNodes`` lists them."""
    out: list[str | None] = []
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        out.append(original[current])
        current = parent_of[current]
    return [o for o in reversed(out) if o is not None] if out else None


def _is_tree_edge(e: dict[str, Any], reader: _Reader, parent_of: dict[str, str | None]) -> bool:
    """An edge the tree's own edges already say (its parent relation, resolved as chosen)."""
    src, dst = reader.resolve(e.get("from")), reader.resolve(e.get("to"))
    return e.get("relation") in _PARENT_RELATION and src is not None and dst is not None \
        and parent_of.get(dst) == src
