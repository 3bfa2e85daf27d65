"""An MCP tool's input schema, as the model reads it and as its arguments are checked.

The model reads a signature (``path:string max_lines:integer=100?``: required arguments
first, optional ones with ``?`` and their default) beside the tool's description; ``→ help
NAME.TOOL`` shows each argument with its own description. Arguments are checked against
the schema (JSON Schema, with ``jsonschema``, which the MCP SDK depends on) before the
call: a wrong call is ``✗ INVALID_SYNTAX`` with a hint naming the arguments, and the
server is never asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from loom.render.text import preview

DESCRIPTION_CHARS = 200  # of a tool's description in the context (→ help shows it all)


@dataclass
class ToolSpec:
    """One tool of one server, as listed."""

    server: str
    name: str
    description: str = ""
    schema: dict[str, Any] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.server}.{self.name}"

    @property
    def properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        req = self.schema.get("required")
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

    @property
    def open(self) -> bool:
        """Whether it takes arguments its schema does not name."""
        extra = self.schema.get("additionalProperties")
        return not self.properties or bool(extra)


def type_of(prop: Mapping[str, Any]) -> str:
    """A property's type in a word or two: ``string``, ``integer``, ``"a"|"b"``,
    ``array of string``, ``string|null``."""
    if "enum" in prop and isinstance(prop["enum"], list):
        return "|".join(json.dumps(v) for v in prop["enum"][:8])
    kind = prop.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return "|".join(type_of(p) for p in prop[key] if isinstance(p, dict))
    if kind == "array" and isinstance(prop.get("items"), dict):
        return f"array of {type_of(prop['items'])}"
    return str(kind) if kind else "any"


def signature(spec: ToolSpec) -> str:
    """``path:string max_lines:integer=100?``: required arguments first."""
    props = spec.properties
    req = [k for k in spec.required if k in props] + \
        [k for k in spec.required if k not in props]
    parts = [f"{k}:{type_of(props.get(k, {}))}" for k in req]
    for key, prop in props.items():
        if key in req:
            continue
        default = f"={json.dumps(prop['default'])}" if isinstance(prop, dict) and \
            "default" in prop else ""
        parts.append(f"{key}:{type_of(prop) if isinstance(prop, dict) else 'any'}"
                     f"{default}?")
    return " ".join(parts)


def summary_line(spec: ToolSpec) -> str:
    """The tool in the model's context: ``→ files.read_file path:string — Read a file.``"""
    sig = signature(spec)
    desc = " ".join(spec.description.split())
    desc = preview(desc, DESCRIPTION_CHARS) if desc else ""
    head = f"→ {spec.full_name}" + (f" {sig}" if sig else "")
    return f"{head} — {desc}" if desc else head


def help_text(spec: ToolSpec) -> str:
    """``→ help NAME.TOOL``: the description in full and each argument."""
    lines = [f"→ {spec.full_name}" + (f" {signature(spec)}" if spec.properties else ""),
             spec.description.strip() or "(no description)"]
    if spec.properties:
        lines.append("arguments:")
        for key, prop in spec.properties.items():
            prop = prop if isinstance(prop, dict) else {}
            bits = [type_of(prop), "required" if key in spec.required else "optional"]
            if "default" in prop:
                bits.append(f"default {json.dumps(prop['default'])}")
            about = " ".join(str(prop.get("description", "")).split())
            lines.append(f"  {key} ({', '.join(bits)})" + (f": {about}" if about else ""))
    else:
        lines.append("arguments: none")
    lines.append('write values as key:value; quote text with spaces ("…"); or pass one '
                 'JSON object')
    return "\n".join(lines)


def _wants(prop: Mapping[str, Any], kind: str) -> bool:
    declared = prop.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            kinds += [p.get("type") for p in prop[key] if isinstance(p, dict)]
    return kind in kinds


def coerce(spec: ToolSpec, args: dict[str, Any], bare: Mapping[str, str]) -> dict[str, Any]:
    """A bare word read as a number or a boolean stays text where the schema wants text
    (``code:0042`` is ``"0042"``, ``name:true`` is ``"true"``)."""
    out = dict(args)
    for key, word in bare.items():
        prop = spec.properties.get(key)
        if isinstance(prop, dict) and _wants(prop, "string") and not isinstance(out[key], str)\
                and not any(_wants(prop, k) for k in ("integer", "number", "boolean")):
            out[key] = word
    return out


def check(spec: ToolSpec, args: Mapping[str, Any]) -> str | None:
    """What is wrong with ``args`` for ``spec`` (one problem, in words), or None."""
    props = spec.properties
    if not spec.open:
        for key in args:
            if key not in props:
                near = process.extractOne(key, list(props), score_cutoff=0.5,
                                          scorer=Levenshtein.normalized_similarity)
                guess = f" (did you mean {near[0]}?)" if near else ""
                return f"{spec.full_name} takes no argument {key!r}{guess}"
    missing = [k for k in spec.required if k not in args]
    if missing:
        return f"{spec.full_name} needs {', '.join(missing)}"
    try:
        from jsonschema import exceptions as js_exceptions
        from jsonschema import validators
    except ImportError:  # (the SDK depends on it: an install without it checks names only)
        return None
    try:
        validator = validators.validator_for(spec.schema)(spec.schema)
        error = js_exceptions.best_match(validator.iter_errors(dict(args)))
    except js_exceptions.SchemaError:
        return None  # the server's schema is broken: let the server judge
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{spec.full_name}: {where + ': ' if where else ''}{preview(error.message, 160)}"
