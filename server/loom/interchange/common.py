"""What the format modules share: format names, the malformed-file error, times, titles,
secret scrubbing and placing the importer in the imported tree."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from loom.errors import LoomError
from loom.store.dialect import upsert
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
    upsert(Position, ("participant", "tree"), participant=participant.id, tree=tree.id,
           node=node_id, tip=node_id, updated=ws.clock()).execute()
    ws.log_change(tree.id, "position", node_id, participant.id, {"tip": node_id})
