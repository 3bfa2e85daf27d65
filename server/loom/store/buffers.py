"""Who may be typing in a tree: :meth:`Workspace.recent_buffers` under the name the
collaborator's loop and the store tests still import. The query itself lives with the
other buffer-state reads and writes in ``store/sessions.py``."""

from __future__ import annotations

from loom.store.schema import BufferState
from loom.store.workspace import Workspace


def recent(ws: Workspace, tree_id: str, since: float,
           exclude: str | None = None) -> list[BufferState]:
    """Buffers in ``tree_id`` saved at or after ``since``, except ``exclude``'s (a
    participant id): :meth:`Workspace.recent_buffers`."""
    return ws.recent_buffers(tree_id, since, exclude)
