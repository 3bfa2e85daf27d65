"""Interchange: files in, files out.

``import_file`` reads a JSON file, recognises it by content (Open Loom 2.0, socketteer/loom,
loomsidian) and imports it; every format module validates the whole file before it writes,
and writes in one transaction, so a damaged file leaves the database as it was.

What the format modules share (errors, times, titles) is in :mod:`loom.interchange.common`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loom.errors import LoomError
from loom.interchange.common import LOOMSIDIAN, OPEN_LOOM, SOCKETTEER, invalid
from loom.interchange.loomsidian import import_loomsidian
from loom.interchange.openloom import import_openloom
from loom.interchange.socketteer import import_socketteer
from loom.store.schema import Tree
from loom.store.workspace import Workspace


def detect_format(data: Any) -> str:
    """``open-loom``, ``socketteer`` or ``loomsidian``, from the shape of parsed JSON."""
    if not isinstance(data, dict):
        raise invalid(f"the file's top level is a JSON {_json_type(data)}, not an object",
                      "Loom imports Open Loom, socketteer/loom and loomsidian JSON files")
    if "format" in data:
        if data["format"] == OPEN_LOOM:
            return OPEN_LOOM
        raise invalid(f'format: "{data["format"]}" is not a format Loom reads',
                      'an Open Loom file has "format": "open-loom"')
    root = data.get("root")
    if isinstance(root, dict) and ("children" in root or "text" in root):
        return SOCKETTEER
    if isinstance(data.get("nodes"), dict) or isinstance(data.get("state"), dict):
        return LOOMSIDIAN
    keys = ", ".join(sorted(map(str, data))[:8]) or "none"
    raise invalid(
        f"unrecognised file: top-level keys are {keys}",
        'expected Open Loom ("format": "open-loom"), socketteer/loom (a "root" with '
        '"children") or loomsidian ("nodes" with "parentId", or a "state" per note)',
    )


def import_data(ws: Workspace, data: Any, *, name: str | None = None) -> list[Tree]:
    """Import parsed JSON of any supported format; ``name`` titles trees that have none."""
    kind = detect_format(data)
    if kind == OPEN_LOOM:
        return import_openloom(ws, data)
    if kind == SOCKETTEER:
        return import_socketteer(ws, data, title=name)
    return import_loomsidian(ws, data, title=name)


def import_file(ws: Workspace, path: str | Path) -> list[Tree]:
    """Read ``path`` and import it, choosing the format by content."""
    return import_data(ws, read_json(path), name=Path(path).stem)


def read_json(path: str | Path) -> Any:
    """Parsed JSON, or a LoomError saying what is wrong with the file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise LoomError("NOT_FOUND", f"file {p} does not exist") from None
    except IsADirectoryError:
        raise LoomError("INVALID_SYNTAX", f"{p} is a directory, not a file") from None
    except OSError as err:
        raise LoomError("NOT_FOUND", f"cannot read {p}: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise invalid(f"{p.name} is not UTF-8 text (bad byte at offset {err.start})",
                      "export the file as JSON again") from None
    if not text.strip():
        raise invalid(f"{p.name} is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise invalid(f"{p.name} is truncated: the JSON stops in the middle of a value "
                          f"(after {len(text):,} characters)",
                          "the file was cut short; export or copy it again") from None
        raise invalid(f"{p.name} is not valid JSON: {err.msg} at line {err.lineno} "
                      f"column {err.colno}") from None


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
            type(None): "null"}.get(type(value), type(value).__name__)

