"""Open buffers' uncommitted work as the store keeps it (``buffer_state``, written by the
language server so nothing typed is lost): what other participants may read of it."""

from __future__ import annotations

from loom.store.schema import BufferState
from loom.store.workspace import Workspace


def recent(ws: Workspace, tree_id: str, since: float,
           exclude: str | None = None) -> list[BufferState]:
    """Buffers in ``tree_id`` saved at or after ``since``, except ``exclude``'s (a
    participant id): who may be typing there now."""
    q = BufferState.select().where((BufferState.tree == tree_id) &
                                   (BufferState.updated >= since))
    if exclude is not None:
        q = q.where(BufferState.participant != exclude)
    return list(q)
