"""Interchange: files in, files out.

``import_file`` reads a JSON file, recognises it by content (Open Loom 2.0, socketteer/loom,
loomsidian) and imports it; every format module validates the whole file before it writes,
and writes in one transaction, so a damaged file leaves the database as it was.

The small helpers below (errors, times, titles) are shared by the format modules; the
format modules are imported lazily so that each can import this package.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loom.errors import LoomError
from loom.store.schema import Participant, Position, Tree
from loom.store.workspace import Workspace

OPEN_LOOM = "open-loom"
SOCKETTEER = "socketteer"
LOOMSIDIAN = "loomsidian"


def invalid(message: str, hint: str | None = None) -> LoomError:
    """A malformed file: the message says where (the path of the bad field) and what."""
    return LoomError("INVALID_SYNTAX", message, hint)


def iso_time(ts: float) -> str:
    """Unix seconds as ISO-8601 UTC with a ``Z`` (microsecond precision, so it round-trips)."""
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def unique_title(title: str, reserved: Iterable[str] = ()) -> str:
    """``title``, or ``title (2)``, ``title (3)``… when a tree (or ``reserved``) has it."""
    title = " ".join(title.split()) or "Imported tree"
    taken = {t for (t,) in Tree.select(Tree.title).where(
        (Tree.title == title) | Tree.title.startswith(f"{title} (")).tuples()}
    taken.update(reserved)
    if title not in taken:
        return title
    n = 2
    while f"{title} ({n})" in taken:
        n += 1
    return f"{title} ({n})"


_SECRET_KEY = re.compile(r"(?i)api[_-]?key|secret|password|passwd|authorization|"
                         r"access[_-]?token|refresh[_-]?token|^token$|^key$")


def drop_secrets(value: Any) -> Any:
    """``value`` without entries whose key names a credential: imported settings are kept
    for reference, API keys never."""
    if isinstance(value, dict):
        return {k: drop_secrets(v) for k, v in value.items()
                if not (isinstance(k, str) and _SECRET_KEY.search(k))}
    if isinstance(value, list):
        return [drop_secrets(v) for v in value]
    return value


def place(ws: Workspace, participant: Participant, tree: Tree, node_id: str) -> None:
    """Put ``participant`` at ``node_id`` in ``tree`` (the node selected in the imported file)
    without making it their current tree."""
    Position.replace(participant=participant.id, tree=tree.id, node=node_id, tip=node_id,
                     updated=ws.clock()).execute()
    ws.log_change(tree.id, "position", node_id, participant.id, {"tip": node_id})


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
        from loom.interchange.openloom import import_openloom

        return import_openloom(ws, data)
    if kind == SOCKETTEER:
        from loom.interchange.socketteer import import_socketteer

        return import_socketteer(ws, data, title=name)
    from loom.interchange.loomsidian import import_loomsidian

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

