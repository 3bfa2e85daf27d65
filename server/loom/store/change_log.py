"""The change log as the store keeps it: a ``change`` row for every write, in the write's
own transaction, so a process killed mid-write leaves the row and the write together or
neither, and read in order from a sequence number, by which other processes catch up.
Following it from another process without missing a row, and being woken on PostgreSQL,
is :mod:`loom.store.feed`'s."""

from __future__ import annotations

from typing import Any

from loom.store.repository import Repository
from loom.store.schema import Change

_PAYLOAD = Change._meta.fields["payload"]


class ChangeLog(Repository):
    """Writes and reads of ``change`` (``Workspace``'s change-log methods)."""

    def log_change(self, tree: str | None, kind: str, entity: str, actor: str | None,
                   payload: dict[str, Any] | None = None) -> None:
        """One change-log row, in the caller's transaction."""
        self.db.execute_sql(
            "INSERT INTO change (tree, kind, entity, actor, payload, created) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (tree, kind, entity, actor, _PAYLOAD.db_value(payload), self.clock()))

    def last_change(self) -> int:
        """The newest change's sequence number (0: none yet)."""
        row = self.sql("SELECT max(seq) FROM change").fetchone()
        return int(row[0] or 0)

    def changes_since(self, seq: int, tree: str | None = None) -> list[Change]:
        """The changes after ``seq`` (of ``tree``), in log order."""
        q = Change.select().where(Change.seq > seq)
        if tree is not None:
            q = q.where(Change.tree == tree)
        return list(q.order_by(Change.seq))
