"""What every repository of ``Workspace`` shares (the change log, trees, nodes, paths,
participants, sessions, positions and locks, the summary queue, documents and links…): the
database, the clock and raw SQL.

Each repository is one section of the store with its own queries; ``Workspace`` is their
façade, builds them and hands each the other pieces it needs (the change log, the tree
lock, a node read) explicitly, so a repository never reaches back into the façade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from loom.store.dialect import dialect_of
from loom.store.orm import pw

Clock = Callable[[], float]


def chunks(items: list[str], size: int = 900) -> list[list[str]]:
    """``items`` in lists of ``size``: SQLite takes at most 999 parameters a statement."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class LogChange(Protocol):
    """``ChangeLog.log_change``: one change-log row, in the caller's transaction."""

    def __call__(self, tree: str | None, kind: str, entity: str, actor: str | None,
                 payload: dict[str, Any] | None = None) -> None: ...


class Repository:
    """A section of the store over one database. ``clock`` is set again by the façade
    when a test or a bench replaces ``Workspace.clock``."""

    def __init__(self, db: pw.Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self.dialect = dialect_of(db)

    def sql(self, query: str, params: Sequence[Any] = ()) -> Any:
        """One statement with ``?`` placeholders (``Workspace.sql``); returns the cursor."""
        return self.db.execute_sql(query, tuple(params))
