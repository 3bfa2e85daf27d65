"""socketteer/loom JSON import: the original Python loom's saved trees.

The file nests nodes under ``root.children``; each node has ``id``, ``text`` (the prose it
appends to its parent), ``children`` and ``meta.source`` (``AI``, ``prompt`` or ``mixed``).
Decisions:

- One buffer-mode tree (these are base-model prose trees). socketteer's root becomes the
  Loom root, so the tree has exactly as many nodes as the file; depth counts from the root.
- Authorship: ``AI`` (or a node with ``generation`` and no source) is model-authored by a
  participant named after the model: ``model_responses[generation.id]``, then the node's
  ``generation.model``, then ``generation_settings.model``, else ``model``. ``prompt``, no
  source, and ``mixed`` are human; a mixed node's extra says ``"authorship": "mixed"`` and
  names the model its text started from.
- Times: ``meta.creation_timestamp`` (socketteer writes local time without a zone; read as
  UTC), else the time inside a version-1 UUID id, else the import time.
- Tags: ``bookmark`` (or ``bookmark: true``) → bookmarked; ``archived`` → pruned (socketteer
  hides archived nodes, as Loom hides pruned ones).
- Everything else is kept: each node's other fields in ``extra["socketteer"]``, the file's
  other top-level keys (chapters, settings, tags…, minus anything credential-like) in the
  root's ``extra["socketteer_file"]``. The human is placed at ``selected_node_id``.
- A title: the chapter that starts at the root, else the file name, else "socketteer loom".
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from loom.interchange.common import drop_secrets, invalid, place, unique_title
from loom.store.schema import Node, Tree
from loom.store.workspace import HUMAN, SUBJECT, NewNode, Workspace

_UUID_EPOCH = 0x01B21DD213814000  # 1582-10-15 → 1970-01-01 in 100 ns steps
_TIME_FORMAT = "%Y-%m-%d-%H.%M.%S"
_STRUCTURE = ("text", "children")


def import_socketteer(ws: Workspace, data: Any, *, title: str | None = None,
                      human: str = HUMAN) -> list[Tree]:
    """Import the whole file as one tree (validated completely before anything is written)."""
    if not isinstance(data, dict) or not isinstance(data.get("root"), dict):
        raise invalid('root: a socketteer/loom file has a "root" object')
    root = data["root"]
    _check(root, "root")
    models = _ModelNames(data)
    specs: list[NewNode] = []
    paths: dict[str, str] = {}  # spec key → socketteer id, for the selected node
    pruned: list[str] = []
    stack: list[tuple[dict[str, Any], str | None, str]] = [
        (child, None, f"root.children[{i}]") for i, child in reversed(list(enumerate(
            root.get("children") or [])))]
    while stack:  # iterative: socketteer trees can be deep
        node, parent, where = stack.pop()
        _check(node, where)
        key = str(len(specs))
        author, author_type, extra = _authorship(node, models, human)
        specs.append(NewNode(
            key=key, parent=parent, content=node.get("text") or "", author=author,
            author_type=author_type, created=_created(node), bookmarked=_bookmarked(node),
            extra=extra,
        ))
        paths[key] = str(node.get("id"))
        if "archived" in _tags(node):
            pruned.append(key)
        stack.extend((child, key, f"{where}.children[{i}]") for i, child in
                     reversed(list(enumerate(node.get("children") or []))))

    file_extra = drop_secrets({k: v for k, v in data.items() if k != "root"})
    root_author, root_type, root_extra = _authorship(root, models, human)
    with ws.db.atomic():
        author = (ws.human(root_author) if root_type == "human" else
                  ws.ensure_participant(root_author, "model", "subject", ()))
        tree = ws.create_tree(unique_title(_title(data, root, title)), "buffer",
                              root_content=root.get("text") or "", author=author)
        root_node = Node.get_by_id(tree.root)
        created = _created(root)
        Node.update(extra={**root_extra, "socketteer_file": file_extra},
                    bookmarked=_bookmarked(root), pruned="archived" in _tags(root),
                    created=created if created is not None else root_node.created,
                    ).where(Node.id == root_node.id).execute()
        added = ws.bulk_add(tree, root_node, specs)
        if pruned:
            Node.update(pruned=True).where(Node.id.in_([added[k].id for k in pruned])).execute()
        selected = data.get("selected_node_id")
        by_source = {sid: added[key].id for key, sid in paths.items()}
        by_source[str(root.get("id"))] = root_node.id
        if selected is not None and str(selected) in by_source:
            place(ws, ws.human(human), tree, by_source[str(selected)])
    return [Tree.get_by_id(tree.id)]


def _check(node: Any, where: str) -> None:
    if not isinstance(node, dict):
        raise invalid(f"{where}: a node is a JSON object, not {type(node).__name__}")
    if not isinstance(node.get("text", ""), str | None):
        raise invalid(f"{where}.text: the text is not a string")
    if not isinstance(node.get("children", []), list | None):
        raise invalid(f"{where}.children: children is not a list")


class _ModelNames:
    """The name of the model that wrote a node, from what the file records."""

    def __init__(self, data: dict[str, Any]) -> None:
        responses = data.get("model_responses")
        self.responses = responses if isinstance(responses, dict) else {}
        settings = data.get("generation_settings")
        model = settings.get("model") if isinstance(settings, dict) else None
        self.default = str(model) if model else SUBJECT

    def for_node(self, node: dict[str, Any]) -> str:
        gen = node.get("generation")
        if isinstance(gen, dict):
            response = self.responses.get(str(gen.get("id")))
            if isinstance(response, dict):
                inner = response.get("response")
                model = response.get("model") or (inner.get("model")
                                                  if isinstance(inner, dict) else None)
                if model:
                    return str(model)
            if gen.get("model"):
                return str(gen["model"])
        return self.default


def _authorship(node: dict[str, Any], models: _ModelNames,
                human: str) -> tuple[str, str, dict[str, Any]]:
    """(participant name, human|model, extra) for one node."""
    meta = node.get("meta") if isinstance(node.get("meta"), dict) else {}
    source = meta.get("source")
    kept = {k: v for k, v in node.items() if k not in _STRUCTURE}
    extra: dict[str, Any] = {"socketteer": kept}
    if source == "AI" or (source is None and isinstance(node.get("generation"), dict)):
        return models.for_node(node), "model", extra
    if source == "mixed":
        extra["authorship"] = "mixed"
        extra["model"] = models.for_node(node)
    return human, "human", extra


def _tags(node: dict[str, Any]) -> list[str]:
    tags = node.get("tags")
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _bookmarked(node: dict[str, Any]) -> bool:
    return node.get("bookmark") is True or "bookmark" in _tags(node)


def _created(node: dict[str, Any]) -> float | None:
    meta = node.get("meta") if isinstance(node.get("meta"), dict) else {}
    stamp = meta.get("creation_timestamp")
    if isinstance(stamp, str):
        try:
            return datetime.strptime(stamp, _TIME_FORMAT).replace(tzinfo=UTC).timestamp()
        except ValueError:
            pass
    elif isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > 0:
        return stamp / 1000 if stamp > 1e11 else float(stamp)
    try:
        u = uuid.UUID(str(node.get("id")))
    except ValueError:
        return None
    if u.version != 1:
        return None
    ts = (u.time - _UUID_EPOCH) / 1e7
    return ts if 946_684_800 < ts < 4_102_444_800 else None  # 2000–2100, else not a time


def _title(data: dict[str, Any], root: dict[str, Any], given: str | None) -> str:
    chapters = data.get("chapters")
    if isinstance(chapters, dict):
        for chapter in chapters.values():
            if isinstance(chapter, dict) and chapter.get("root_id") == root.get("id") \
                    and chapter.get("title"):
                return str(chapter["title"])
    return given or "socketteer loom"
