"""Moving a workspace between databases (``loom migrate --to …``): an SQLite file into
PostgreSQL for a team, or back. Every table is copied row for row in one transaction on
the target, then checked: the same row count and the same content hash per table, or the
copy is rolled back and nothing is left half-written."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loom.errors import LoomError
from loom.store import schema
from loom.store.backend import executemany, is_postgres
from loom.store.orm import pw

BATCH = 5_000


def models() -> list[type[schema.Base]]:
    """Every table of the current schema but ``meta``, each after the tables it references."""
    found: list[type[schema.Base]] = []
    pending = [m for m in schema.Base.__subclasses__() if m is not schema.Meta]
    while pending:
        ready = [m for m in pending
                 if all(ref in found or ref is m for ref in m._meta.refs.values())]
        if not ready:
            raise RuntimeError(f"cyclic references among {pending}")
        for m in ready:
            found.append(m)
            pending.remove(m)
    return found


@dataclass
class TableCheck:
    table: str
    rows: int
    sha256: str


@dataclass
class Transfer:
    tables: list[TableCheck] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)


def _columns(model: type[schema.Base]) -> list[pw.Field]:
    return list(model._meta.sorted_fields)


def _key(model: type[schema.Base]) -> str:
    pk = model._meta.primary_key
    fields = pk.field_names if isinstance(pk, pw.CompositeKey) else [pk.name]
    return ", ".join(f'"{model._meta.fields[f].column_name}"' for f in fields)


def _rows(db: pw.Database, model: type[schema.Base]) -> Iterator[tuple[Any, ...]]:
    """The table's rows in primary-key order (both backends compare strings byte-wise)."""
    cols = ", ".join(f'"{f.column_name}"' for f in _columns(model))
    cursor = db.execute_sql(
        f'SELECT {cols} FROM "{model._meta.table_name}" ORDER BY {_key(model)}')
    while batch := cursor.fetchmany(BATCH):
        yield from batch


def _normal(field: pw.Field, value: Any) -> Any:
    """A value as the target's driver takes it: SQLite keeps booleans as 0/1."""
    if value is None:
        return None
    if isinstance(field, pw.BooleanField):
        return bool(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _canonical(value: Any) -> str:
    if value is None:
        return "∅"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | memoryview):
        return "x" + bytes(value).hex()
    return f"{type(value).__name__[0]}{value}"


def table_hash(db: pw.Database, model: type[schema.Base]) -> TableCheck:
    """The row count and a SHA-256 of every row's values, in key order."""
    digest = hashlib.sha256()
    count = 0
    fields = _columns(model)
    for row in _rows(db, model):
        count += 1
        values = [_normal(f, v) for f, v in zip(fields, row, strict=True)]
        digest.update("\x1f".join(_canonical(v) for v in values).encode())
        digest.update(b"\x1e")
    return TableCheck(model._meta.table_name, count, digest.hexdigest())


def copy_workspace(source: pw.Database, target: pw.Database,
                   progress: Callable[[str, int], None] | None = None) -> Transfer:
    """Copy every row of ``source`` into the empty, migrated ``target`` and check it."""
    tables = models()
    occupied = [m._meta.table_name for m in tables
                if target.execute_sql(f'SELECT 1 FROM "{m._meta.table_name}" LIMIT 1')
                .fetchone() is not None]
    if occupied:
        raise LoomError("CONFLICT", f"the target workspace is not empty ({', '.join(occupied)})",
                        "copy into a new, empty database")
    report = Transfer()
    with target.atomic():
        for model in tables:
            fields = _columns(model)
            cols = ", ".join(f'"{f.column_name}"' for f in fields)
            marks = ", ".join("?" for _ in fields)
            sql = f'INSERT INTO "{model._meta.table_name}" ({cols}) VALUES ({marks})'
            batch: list[tuple[Any, ...]] = []
            copied = 0
            for row in _rows(source, model):
                batch.append(tuple(_normal(f, v) for f, v in zip(fields, row, strict=True)))
                if len(batch) >= BATCH:
                    executemany(target, sql, batch)
                    copied += len(batch)
                    batch = []
            if batch:
                executemany(target, sql, batch)
                copied += len(batch)
            if progress is not None:
                progress(model._meta.table_name, copied)
        if is_postgres(target):
            _advance_sequences(target, tables)
        for model in tables:
            want, got = table_hash(source, model), table_hash(target, model)
            if (want.rows, want.sha256) != (got.rows, got.sha256):
                raise LoomError("CONFLICT", f"the copy of {want.table} differs from the "
                                f"source ({got.rows} rows against {want.rows})",
                                "nothing was copied; retry when no one is writing")
            report.tables.append(got)
    return report


def _advance_sequences(db: pw.Database, tables: list[type[schema.Base]]) -> None:
    """Copied ids were given explicitly: the next id a sequence gives follows them."""
    for model in tables:
        pk = model._meta.primary_key
        if isinstance(pk, pw.AutoField):
            table, col = model._meta.table_name, pk.column_name
            db.execute_sql(
                f"SELECT setval(pg_get_serial_sequence('\"{table}\"', '{col}'), "
                f'coalesce((SELECT max("{col}") FROM "{table}"), 0) + 1, false)')
