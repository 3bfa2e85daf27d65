"""socketteer/loom (the original Python loom) → Open Loom 2.0 (§ 8.2).

The file nests nodes under ``root.children`` (a bare node, or an array of nodes, is read
too, as socketteer's own loader does); each node has ``id``, ``text`` (what it appends to
its parent), ``children`` and ``meta.source`` ``AI``/``prompt``/``mixed``. Decisions:

- One buffer-mode tree (these are base-model prose trees); children order is edge order.
- ``meta.source`` → ``model``/``human``/``mixed``; a node with ``generation`` (or a 2021
  save's ``meta.generation``) and no source is the model's. A model node is named after
  the model the file records for it (``model_responses[generation.id]``, else
  ``generation.model``, else ``meta.generation.model``), else after
  ``generation_settings.model``, the model the file was set to when saved: a guess,
  marked ``modelGuessedFrom`` in the node's extension and counted in the report.
- ``generation`` → ``requestId``/``completionIndex`` (and the model when the file says
  which); nothing else is invented. ``createdAt`` is the time inside the node's
  version-1 UUID id (true UTC); ``meta.creation_timestamp`` is the author's local time
  without a zone (kept in the extension), so a node with no such id gets that wall time
  written as UTC, marked ``createdAtIsLocalTime`` and counted in the report.
- Tags → ``meta.tags``; ``bookmark`` → bookmarked; ``archived`` → pruned (socketteer
  hides archived nodes, as Loom hides pruned ones). ``selected_node_id`` → current node.
- A compound node (``masked_head`` + ``tail_id``: socketteer's hoist, or a zipped chain)
  is a view: it is read as the nodes it stands for, the chain in its place and its
  children under the tail (socketteer's unzip), its own fields kept as ``maskedBy`` on the
  chain's first node. A selected node inside it is the current node; a selected mask
  places the importer at its tail (the mask's text is the tail's path).
- Everything else (chapters, summaries, canonical, memories, settings minus credentials,
  each node's other fields) → ``extensions["socketteer-loom"]``. The title: the chapter
  that starts at the root, else the file name.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from loom.interchange.adapters import Ids, document, drop_secrets, edge, invalid, text_node
from loom.interchange.jsontext import json_kind, render_path
from loom.interchange.socketteer_tokens import from_socketteer
from loom.interchange.times import format_time, parse_epoch
from loom.model.ids import new_ulid

NAME = "socketteer/loom"
NS = "socketteer-loom"
_UUID_EPOCH = 0x01B21DD213814000  # 1582-10-15 → 1970-01-01 in 100 ns steps
_TIME_FORMAT = "%Y-%m-%d-%H.%M.%S"
_MAPPED = ("text", "children", "id", "parent_id", "tags", "bookmark", "generation", "meta")


def _is_node(value: Any) -> bool:
    return isinstance(value, dict) and ("children" in value or "text" in value) and \
        "nodes" not in value


def detect(data: Any) -> bool:
    if isinstance(data, dict):
        return (isinstance(data.get("root"), dict) and _is_node(data["root"])) or \
            ("root" not in data and _is_node(data) and "nodeStore" not in data)
    return isinstance(data, list) and bool(data) and all(_is_node(n) for n in data)


def _uuid_time(nid: Any) -> float | None:
    """The time inside a version-1 UUID id (true UTC), if the id is one."""
    try:
        u = uuid.UUID(str(nid))
    except ValueError:
        return None
    if u.version != 1:
        return None
    ts = (u.time - _UUID_EPOCH) / 1e7
    return ts if 946_684_800 < ts < 4_102_444_800 else None  # 2000–2100, else not a time


def _created(node: dict[str, Any]) -> tuple[float | None, bool]:
    """(Unix time, whether it is only the author's local wall time). The id's time comes
    first: ``creation_timestamp`` is local time without a zone (in the demo file 7 hours
    behind the id's), so only a node without a UUIDv1 id falls back to it, read as UTC."""
    when = _uuid_time(node.get("id"))
    if when is not None:
        return when, False
    meta = node.get("meta") if isinstance(node.get("meta"), dict) else {}
    stamp = meta.get("creation_timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.strptime(stamp, _TIME_FORMAT).replace(tzinfo=UTC).timestamp(), True
        except ValueError:
            return None, False
    return (parse_epoch(stamp) if stamp is not None else None), False


class _Models:
    """The model that wrote a node, from what the file records."""

    def __init__(self, data: dict[str, Any]) -> None:
        responses = data.get("model_responses")
        self.responses = responses if isinstance(responses, dict) else {}
        settings = data.get("generation_settings")
        model = settings.get("model") if isinstance(settings, dict) else None
        self.default = str(model) if model else None

    def recorded(self, node: dict[str, Any]) -> str | None:
        """The model the file names for this node's own generation: its response in
        ``model_responses`` (2023 saves), ``generation.model``, or ``meta.generation.model``
        (2021 saves: ``davinci:2020-05-03``)."""
        gen = node.get("generation")
        if isinstance(gen, dict):
            response = self.responses.get(str(gen.get("id")))
            if isinstance(response, dict):
                inner = response.get("response")
                model = response.get("model") or (inner.get("model") if isinstance(inner, dict)
                                                  else None)
                if model:
                    return str(model)
            if gen.get("model"):
                return str(gen["model"])
        old = _meta_generation(node)
        return str(old["model"]) if old and old.get("model") else None


def _meta_generation(node: dict[str, Any]) -> dict[str, Any] | None:
    """``meta.generation``: where 2021 saves record a node's generation (model, index,
    prompt, logprobs…)."""
    meta = node.get("meta")
    gen = meta.get("generation") if isinstance(meta, dict) else None
    return gen if isinstance(gen, dict) else None


def _tags(node: dict[str, Any]) -> list[str]:
    tags = node.get("tags")
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _check(node: Any, at: Any) -> None:
    if not isinstance(node, dict):
        raise invalid(f"{render_path(at)}: a node is a JSON object, not {json_kind(node)}")
    if not isinstance(node.get("text", ""), str | None):
        raise invalid(f"{render_path(('text', at))}: the text is not a string")
    if not isinstance(node.get("children", []), list | None):
        raise invalid(f"{render_path(('children', at))}: children is not a list")


def _node(node: dict[str, Any], nid: str, ext: dict[str, Any], models: _Models
          ) -> dict[str, Any]:
    meta = node.get("meta") if isinstance(node.get("meta"), dict) else {}
    source = meta.get("source")
    gen = node.get("generation") if isinstance(node.get("generation"), dict) else None
    old_gen = _meta_generation(node) if gen is None else None
    recorded = models.recorded(node)
    role, name = "human", None
    if source == "AI" or (source is None and (gen is not None or old_gen is not None)):
        role, name = "model", recorded or models.default
        if not recorded and models.default:
            # The setting at save time, not this node's record: say so wherever it goes.
            ext["modelGuessedFrom"] = "generation_settings.model"
    elif source == "mixed":
        role = "mixed"
    generation: dict[str, Any] = {}
    if gen is not None:
        if recorded:
            generation["model"] = recorded
        if isinstance(gen.get("id"), str) and gen["id"]:
            generation["requestId"] = gen["id"]
        if isinstance(gen.get("index"), int) and not isinstance(gen["index"], bool):
            generation["completionIndex"] = gen["index"]
        rest = {k: v for k, v in gen.items() if k not in ("id", "index", "model")}
        if rest:
            ext["generation"] = rest
    elif old_gen is not None:  # kept whole in the extension's meta
        if recorded:
            generation["model"] = recorded
        index = old_gen.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            generation["completionIndex"] = index
    ext.update({k: v for k, v in node.items() if k not in _MAPPED})
    meta_rest = {k: v for k, v in meta.items() if k not in ("source", "creation_timestamp")}
    if meta_rest:
        ext["meta"] = meta_rest
    created, local = _created(node)
    stamp = meta.get("creation_timestamp")
    if stamp is not None and (created is None or isinstance(stamp, str)):
        ext["creation_timestamp"] = stamp  # the author's wall time: no zone to convert it
    if local:
        ext["createdAtIsLocalTime"] = True
    tags = _tags(node)
    out = text_node(
        nid, node.get("text") or "", role, name=name,
        created=format_time(created) if created is not None else None,
        meta={"bookmarked": node.get("bookmark") is True or "bookmark" in tags,
              "pruned": "archived" in tags, "tags": tags},
        generation=generation or None, namespace=NS, ext=ext)
    entries = from_socketteer(models.responses.get(str(gen.get("id"))), gen.get("index")) \
        if gen is not None else None
    if entries:  # the tokens of its completion: Loom's token data (the record stays there)
        out.setdefault("extensions", {})["loom"] = {"generations": [{
            "model": generation.get("model") or "", "provider": "socketteer-loom",
            "completionIndex": generation.get("completionIndex", 0),
            "created": out.get("createdAt"), "logprobs": entries}]}
    return out


def convert(data: Any, name: str | None) -> tuple[dict[str, Any], list[str]]:
    """One buffer-mode tree, validated whole before anything is written."""
    # Where each node is, as linked steps ((step, parent's steps)): a path is spelled out
    # only for an error, so a deep tree costs no copying.
    if isinstance(data, list):
        roots, file, wheres = data, {}, [(i, None) for i in range(len(data))]
    elif isinstance(data.get("root"), dict):
        roots, file, wheres = [data["root"]], data, [("root", None)]
    else:
        roots, file, wheres = [data], {}, [None]
    models = _Models(file)
    ids = Ids()
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    by_source: dict[str, str] = {}
    root_ids: list[str] = []
    media = local = guessed = 0
    # A compound node (socketteer's hoist and zip) stands for the chain masked_head … tail
    # and holds the tail's children: it is a view, the chain is the tree. Each is read as
    # socketteer's unzip would: the chain in its place, its children under the tail.
    grafts: dict[str, list[tuple[Any, Any]]] = {}  # a tail's id → the mask's children
    aliases: dict[str, str] = {}  # a mask's id → its tail's
    masks = 0
    stack: list[tuple[Any, str | None, Any, dict[str, Any] | None]] = [
        (n, None, wheres[i], None) for i, n in reversed(list(enumerate(roots)))]
    while stack:  # iterative: socketteer trees can be deep
        node, parent, at, mask = stack.pop()
        _check(node, at)
        head = _masked_head(node)
        if head is not None:
            masks += 1
            tail = str(node["tail_id"])
            graft = grafts.setdefault(tail, [])
            graft.extend((child, (i, ("children", at))) for i, child in
                         enumerate(node.get("children") or []))
            if node.get("id") is not None:  # the tail of an outer mask: this one's tail
                aliases[str(node["id"])] = tail
                graft.extend(grafts.pop(str(node["id"]), []))
            stack.append((head, parent, ("masked_head", at), {
                k: v for k, v in node.items() if k not in ("masked_head", "children")}))
            continue
        ext: dict[str, Any] = {"maskedBy": mask} if mask is not None else {}
        nid = ids.take(node.get("id"), ext)
        if node.get("id") is not None:
            by_source.setdefault(str(node["id"]), nid)
        nodes[nid] = _node(node, nid, ext, models)
        local += bool(ext.get("createdAtIsLocalTime"))
        guessed += "modelGuessedFrom" in ext
        media += isinstance(node.get("multimedia"), list) and bool(node["multimedia"])
        if parent is None:
            root_ids.append(nid)
        else:
            edges.append(edge(parent, nid))
        children = [(child, (i, ("children", at))) for i, child in
                    enumerate(node.get("children") or [])]
        if node.get("id") is not None:
            children += grafts.pop(str(node["id"]), [])
        stack.extend((child, nid, where, None) for child, where in reversed(children))
    tree: dict[str, Any] = {"id": new_ulid(), "title": _title(file, roots, name),
                            "mode": "buffer", "rootNodeIds": root_ids, "nodes": nodes,
                            "edges": edges}
    selected = file.get("selected_node_id")
    current = str(selected) if selected is not None else None
    for _ in range(len(aliases)):  # a selected mask: its tail, whose path is its text
        if current not in aliases:
            break
        current = aliases[current]
    if current in by_source:
        tree["currentNodeId"] = by_source[current]
    tag_defs = file.get("tags")
    if isinstance(tag_defs, dict) and tag_defs:
        tree["tags"] = [{"name": str(k)} for k in tag_defs]
    rest = drop_secrets({k: v for k, v in file.items() if k not in ("root", "selected_node_id")})
    if rest:
        tree["extensions"] = {NS: rest}
    notes = ids.note(NAME)
    if masks:
        notes.append(f"{masks} hoisted or zipped node(s) read as the nodes they stand for "
                     "(socketteer's unhoist/unzip; each kept as maskedBy on its first node)")
    if selected is not None and current not in by_source:
        notes.append(f'the selected node "{selected}" is not a node of the file: left '
                     "out (the importer gets no position)")
    if guessed:
        notes.append(f"{guessed} model node(s) name no model of their own: credited to "
                     f'"{models.default}", the model the file was set to when saved '
                     "(generation_settings.model), a guess: marked modelGuessedFrom")
    if local:
        notes.append(f"{local} node(s) have only a local time without a zone "
                     "(creation_timestamp): written as if UTC, marked createdAtIsLocalTime")
    if media:
        notes.append(f"{media} node(s) list media files on the author's disk "
                     "(multimedia): kept as references, not read")
    return document([tree]), notes


def _masked_head(node: dict[str, Any]) -> dict[str, Any] | None:
    """The first node of the chain a compound node stands for, when its ``tail_id`` is in
    that chain's subtree (else the node is read as it is, its mask kept in the extension)."""
    head, tail = node.get("masked_head"), node.get("tail_id")
    if not isinstance(head, dict) or tail is None:
        return None
    stack = [head]
    while stack:
        at = stack.pop()
        if not isinstance(at, dict):
            continue
        if str(at.get("id")) == str(tail):
            return head
        stack.extend(c for c in at.get("children") or [] if isinstance(c, dict))
        if isinstance(at.get("masked_head"), dict):
            stack.append(at["masked_head"])
    return None


def _title(file: dict[str, Any], roots: list[Any], given: str | None) -> str:
    chapters = file.get("chapters")
    root = roots[0] if roots and isinstance(roots[0], dict) else None
    while root is not None and _masked_head(root) is not None:
        root = _masked_head(root)
    root_id = root.get("id") if root is not None else None
    if isinstance(chapters, dict):
        for chapter in chapters.values():
            if isinstance(chapter, dict) and chapter.get("root_id") == root_id \
                    and chapter.get("title"):
                return str(chapter["title"])
    return given or "socketteer loom"
