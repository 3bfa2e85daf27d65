"""The few places SQLite and PostgreSQL differ, as fragments and helpers every query uses.

Write SQL once, with ``?`` placeholders (the PostgreSQL backend rewrites them), and take
what differs from here:

- a JSON array parameter as rows: ``IN ({d.json_values()})`` (``json_each`` is SQLite's);
- the smaller of two values: ``d.least(a, b)`` (``min(a, b)`` is an aggregate in PostgreSQL);
- "insert this row, or update it": :func:`upsert` (peewee's ``replace`` is SQLite's
  ``INSERT OR REPLACE``); "insert unless it exists": ``INSERT … ON CONFLICT DO NOTHING``,
  which both speak (never ``INSERT OR IGNORE``);
- booleans: ``NOT n.pruned`` / ``n.pruned``, never ``= 0`` (PostgreSQL has a real boolean);
- a recursive CTE seeds from a table (``SELECT id, 0 FROM node WHERE id = ?``), not from a
  bare parameter, whose type and collation PostgreSQL cannot infer; a subquery in ``FROM``
  always gets an alias;
- case-insensitive matching: ``lower(x) = lower(?)`` (``COLLATE NOCASE`` is SQLite's).

``tests/unit/test_sql_portability.py`` greps the package for the SQLite-only forms and runs
the store and executor tests on both backends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from loom.store.backend import is_postgres
from loom.store.orm import pw


@dataclass(frozen=True)
class Dialect:
    name: str  # sqlite | postgresql

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    def json_values(self, param: str = "?") -> str:
        """A subquery of the elements of a JSON array parameter, as a column ``value``."""
        if self.postgres:
            return (f"SELECT value FROM jsonb_array_elements_text(CAST({param} AS jsonb)) "
                    "AS j(value)")
        return f"SELECT value FROM json_each({param})"

    def least(self, a: str, b: str) -> str:
        return f"LEAST({a}, {b})" if self.postgres else f"min({a}, {b})"

    @property
    def skip_locked(self) -> str:
        """Appended to a SELECT that locks its rows until the transaction ends, skipping rows
        another transaction holds (job queues; SQLite's write transactions already exclude
        every other writer)."""
        return " FOR UPDATE SKIP LOCKED" if self.postgres else ""


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgresql")


def dialect_of(db: pw.Database) -> Dialect:
    return POSTGRES if is_postgres(db) else SQLITE


def upsert(model: type[pw.Model], conflict: Iterable[str], **values: Any) -> pw.Insert:
    """``INSERT … ON CONFLICT (conflict) DO UPDATE`` the other given columns: what
    ``Model.replace`` means, on both backends."""
    keys = set(conflict)
    fields = model._meta.fields
    return model.insert(**values).on_conflict(
        conflict_target=[fields[k] for k in conflict],
        preserve=[fields[k] for k in values if k not in keys])
