"""Step 2 of parsing, the readers of two sampling options' values: ``banned:`` (strings,
comma-separated) and ``extra:`` (request keys the backend takes, ``key:value`` pairs or a
JSON object), refused where they would set what Loom sets itself."""

from __future__ import annotations

import json
from typing import Any

from loom.commands.grammar.results import Fail
from loom.model.sampling import extra_problem

_EXTRA_HINT = 'use extra:"key:value,…" (values as JSON: 1.5, true, "text", [1,2])'


def as_strings(value: str, name: str) -> list[str] | Fail:
    """``"very, suddenly"`` → ``["very", "suddenly"]`` (each stripped, none empty)."""
    strings = [s.strip() for s in value.split(",")]
    strings = [s for s in strings if s]
    if not strings:
        return Fail(f"{name}: needs the strings to ban", hint=f'use {name}:"very, suddenly"')
    return list(dict.fromkeys(strings))


def as_extra(value: str, name: str) -> dict[str, Any] | Fail:
    """``"top_n_sigma:1.5, samplers:[\\"top_k\\"]"`` (or the same as a JSON object) →
    ``{"top_n_sigma": 1.5, "samplers": ["top_k"]}``; a value that is no JSON is text."""
    text = value.strip()
    if not text:
        return Fail(f"{name}: needs key:value pairs", hint=_EXTRA_HINT)
    if text.startswith("{"):
        try:
            got = json.loads(text)
        except ValueError as exc:
            return Fail(f"{name}: is not a JSON object ({exc.msg})", hint=_EXTRA_HINT)
        if not isinstance(got, dict):
            return Fail(f"{name}: is not a JSON object", hint=_EXTRA_HINT)
        keys: dict[str, Any] = got
    else:
        keys = {}
        for pair in _top_level(text):
            key, colon, raw = pair.partition(":")
            key = key.strip()
            if not colon or not key:
                return Fail(f"{name}: {pair.strip()!r} is not key:value", hint=_EXTRA_HINT)
            if key in keys:
                return Fail(f"{name}: {key} given twice", hint=_EXTRA_HINT)
            keys[key] = _json_or_text(raw.strip())
    problem = extra_problem(keys)
    if problem is not None:
        return Fail(problem[0], hint=problem[1])
    return keys


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _top_level(text: str) -> list[str]:
    """``text`` cut at the commas outside brackets and JSON strings."""
    parts, depth, start, in_string, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]
