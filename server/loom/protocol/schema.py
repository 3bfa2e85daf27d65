"""Schema hints: the one thing Loom Protocol text cannot say by itself.

Seed 004 writes the one-element list ``["send"]`` as ``actions: send``, which the codec
reads as the string ``"send"`` (its own encoding of ``["send"]`` is ``actions: [send]``,
so ``loads(dumps(v)) == v`` for every value). When the reader knows the shape of the data
(a JSON Schema, or a pydantic model), a bare scalar where the schema expects an array is
that array's single item: ``loads(text, schema=…)`` reads ``actions: send`` as
``["send"]``, and ``dumps(value, schema=…)`` writes a one-item array at such a place as
the bare item, so ``loads(dumps(v, schema=s), schema=s) == v`` for every ``v`` that
matches ``s``.

The part of JSON Schema understood here: ``type`` (a name or a list of names),
``properties``, ``additionalProperties``, ``items``, ``prefixItems``, ``anyOf``/``oneOf``/
``allOf``, and ``$ref`` into ``$defs``/``definitions`` (what pydantic's
``model_json_schema()`` writes). Anything else is ignored: a hint never rejects data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SchemaLike = Mapping[str, Any] | type | None

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}


def _root(schema: SchemaLike) -> Mapping[str, Any] | None:
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        return schema
    dump = getattr(schema, "model_json_schema", None)  # a pydantic model class
    if callable(dump):
        return dump()
    raise TypeError(f"a schema is a JSON Schema mapping or a pydantic model, not {schema!r}")


class Shape:
    """A position in a schema: what the value there is expected to be."""

    __slots__ = ("node", "root")

    def __init__(self, node: Mapping[str, Any] | None, root: Mapping[str, Any] | None) -> None:
        self.root = root
        self.node = self._deref(node)

    @classmethod
    def of(cls, schema: SchemaLike) -> Shape | None:
        """The shape of a whole document, or None without a schema."""
        root = _root(schema)
        return None if root is None else cls(root, root)

    def _deref(self, node: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        seen = 0
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and seen < 32:
            ref: str = node["$ref"]
            target: Any = None
            if ref.startswith("#/") and self.root is not None:
                target = self.root
                for part in ref[2:].split("/"):
                    target = target.get(part) if isinstance(target, Mapping) else None
            elif ref == "#":
                target = self.root
            node = target if isinstance(target, Mapping) else None
            seen += 1
        return node if isinstance(node, Mapping) else None

    def _branches(self) -> list[Mapping[str, Any]]:
        """The schema at this position and, for ``anyOf``/``oneOf``/``allOf``, each branch."""
        if self.node is None:
            return []
        out = [self.node]
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in self.node.get(key) or ():
                node = self._deref(branch)
                if node is not None:
                    out += Shape(node, self.root)._branches()
        return out

    def _types(self) -> set[str]:
        found: set[str] = set()
        for b in self._branches():
            t = b.get("type")
            if isinstance(t, str):
                found.add(t)
            elif isinstance(t, list):
                found.update(x for x in t if isinstance(x, str))
            elif "items" in b or "prefixItems" in b:
                found.add("array")
            elif "properties" in b:
                found.add("object")
        return found

    def wants_array_for(self, scalar: Any) -> bool:
        """Whether a bare ``scalar`` here stands for a one-item array: the schema expects an
        array and does not also accept the scalar itself (``null`` is never an item)."""
        if scalar is None or isinstance(scalar, dict | list):
            return False
        types = self._types()
        if "array" not in types:
            return False
        kind = _JSON_TYPES.get(type(scalar), "string")
        accepted = {kind, "number"} if kind == "integer" else {kind}
        return not (types & accepted)

    def prop(self, key: str) -> Shape:
        """The shape of an object's member ``key``."""
        for b in self._branches():
            props = b.get("properties")
            if isinstance(props, Mapping) and key in props:
                return Shape(props[key], self.root)
        for b in self._branches():
            extra = b.get("additionalProperties")
            if isinstance(extra, Mapping):
                return Shape(extra, self.root)
        return Shape(None, self.root)

    def item(self, index: int) -> Shape:
        """The shape of an array's item ``index``."""
        for b in self._branches():
            prefix = b.get("prefixItems")
            if isinstance(prefix, list) and index < len(prefix):
                return Shape(prefix[index], self.root)
            items = b.get("items")
            if isinstance(items, Mapping):
                return Shape(items, self.root)
        return Shape(None, self.root)


def conform(value: Any, shape: Shape | None) -> Any:
    """``value`` as decoded, with each bare scalar the schema expects an array of read as
    that one-item array."""
    if shape is None or shape.node is None:
        return value
    if isinstance(value, dict):
        return {k: conform(v, shape.prop(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [conform(v, shape.item(i)) for i, v in enumerate(value)]
    if shape.wants_array_for(value):
        return [conform(value, shape.item(0))]
    return value
