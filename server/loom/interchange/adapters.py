"""Every loom's file → an Open Loom 2.0 document (Open Loom § 8), recognised by content.

Each adapter is ``convert(data, name) -> (document, notes)``: it maps what the loom
records into the core fields, puts everything else it parsed under the loom's own
extension namespace, never invents provenance, mints ULIDs for missing or repeated ids
(the original kept as ``extensions.<loom>.originalId``), and drops times it cannot read.
Then one importer writes the document, so every loom's trees get the same repairs,
report and lossless re-export.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from loom.errors import LoomError
from loom.model.ids import new_ulid

Converter = Callable[[Any, str | None], tuple[dict[str, Any], list[str]]]

_SECRET_KEY = re.compile(r"(?i)api[_-]?key|secret|password|passwd|authorization|"
                         r"access[_-]?token|refresh[_-]?token|^token$|^key$")


def invalid(message: str, hint: str | None = None) -> LoomError:
    return LoomError("INVALID_SYNTAX", message, hint)


def drop_secrets(value: Any) -> Any:
    """``value`` without entries whose key names a credential: imported settings are kept
    for reference, API keys never. A copy, made with an explicit stack (a file's settings
    can nest as deep as its author liked)."""
    if not isinstance(value, dict | list):
        return value
    top: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, top)]  # (original container, its copy)
    while stack:
        original, copy = stack.pop()
        items = original.items() if isinstance(original, dict) else enumerate(original)
        for k, v in items:
            if isinstance(original, dict) and isinstance(k, str) and _SECRET_KEY.search(k):
                continue
            if isinstance(v, dict | list):
                child: Any = {} if isinstance(v, dict) else []
                stack.append((v, child))
                v = child
            if isinstance(copy, dict):
                copy[k] = v
            else:
                copy.append(v)
    return top


def document(trees: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"format": "open-loom", "version": "2.0", "trees": trees,
            **{k: v for k, v in fields.items() if v}}


def text_node(nid: str, text: str, role: str, *, name: str | None = None,
              created: str | None = None, meta: dict[str, Any] | None = None,
              generation: dict[str, Any] | None = None, namespace: str | None = None,
              ext: dict[str, Any] | None = None, edited_from: str | None = None
              ) -> dict[str, Any]:
    """A node in the published shape; empty optional parts are left out."""
    node: dict[str, Any] = {"id": nid, "content": [{"type": "text", "text": text}],
                            "author": {"role": role, **({"name": name} if name else {})}}
    if created:
        node["createdAt"] = created
    if edited_from:
        node["editedFrom"] = edited_from
    meta = {k: v for k, v in (meta or {}).items() if v not in (None, False, [], "")}
    if meta:
        node["meta"] = meta
    if generation:
        node["generation"] = generation
    if namespace and ext:
        node["extensions"] = {namespace: ext}
    return node


def edge(source: str, target: str) -> dict[str, Any]:
    return {"type": "continuation", "sources": [{"nodeId": source, "role": "primary"}],
            "targetNodeId": target}


class Ids:
    """Opaque ids as strings; a missing or repeated one gets a fresh ULID, and the node's
    extension records the original (``originalId``)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.minted = 0

    def take(self, original: Any, ext: dict[str, Any]) -> str:
        if isinstance(original, str | int) and not isinstance(original, bool) and \
                str(original) and str(original) not in self.seen:
            self.seen.add(str(original))
            return str(original)
        nid = new_ulid()
        while nid in self.seen:
            nid = new_ulid()
        self.seen.add(nid)
        self.minted += 1
        if original is not None:
            ext["originalId"] = original
        return nid

    def note(self, loom: str) -> list[str]:
        return [f"{self.minted} {loom} node(s) had a missing or repeated id: given a new one "
                "(the original is kept)"] if self.minted else []
