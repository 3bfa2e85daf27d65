"""The store's doors for whole trees at once (``Workspace.bulk``): the interchange formats
read a tree as plain rows to export it and write the rows an import planned, in as few
statements as the backend takes (a 100,000-node import is a few seconds:
``bench/bench_import.py``).

Writes run in the caller's transaction (the importer's, ``Workspace.all_or_nothing``).
Rows come as dicts keyed by the schema's field names (the general plan's) or, for the
plain plan's nodes, edges and sources, as tuples in :data:`NODE_COLUMNS`,
:data:`EDGE_COLUMNS` and :data:`SOURCE_COLUMNS` order. Reads return dicts keyed by column
name, JSON columns parsed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

from loom.store.backend import insert_rows
from loom.store.dialect import upsert
from loom.store.orm import pw
from loom.store.repository import Repository, chunks
from loom.store.schema import (
    Document,
    Edge,
    EdgeSource,
    Generation,
    JSONField,
    Link,
    Media,
    Node,
    Position,
    RawResponse,
    Tree,
)

NODE_COLUMNS = tuple(f.column_name for f in Node._meta.sorted_fields)
EDGE_COLUMNS = ("target", "tree_id", "kind", "sibling_order")
SOURCE_COLUMNS = ("target", "node", "role", "position")

Dumps = Callable[[Any], str]
_BATCH = 5000


class Bulk(Repository):
    """A tree's rows, read and written in bulk."""

    def any_exists(self, model: type[pw.Model], column: pw.Field, values: Sequence[str]
                   ) -> bool:
        """Whether any of ``values`` is stored in ``model.column``: one prepared query per
        900 values (an importer checks a file's 100,000 ids before keeping them)."""
        sql = f'SELECT 1 FROM "{model._meta.table_name}" WHERE "{column.column_name}" IN ('
        for chunk in chunks([v for v in values if v]):
            if self.sql(sql + ",".join("?" * len(chunk)) + ") LIMIT 1",
                        chunk).fetchone() is not None:
                return True
        return False

    # ── reading a tree for export ─────────────────────────────────────────────
    def _rows(self, sql: str, params: tuple[Any, ...],
              json_columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        cursor = self.sql(sql, params)
        names = [c[0] for c in cursor.description]
        out = []
        for row in cursor.fetchall():
            item = dict(zip(names, row, strict=True))
            for col in json_columns:
                if item.get(col) is not None:
                    item[col] = json.loads(item[col])
            out.append(item)
        return out

    def tree_row(self, tree_id: str) -> dict[str, Any]:
        return self._rows('SELECT * FROM "tree" WHERE id = ?', (tree_id,),
                          ("themes", "extra"))[0]

    def node_rows(self, tree_id: str) -> list[dict[str, Any]]:
        """Every node of the tree, by id."""
        return self._rows("SELECT * FROM node WHERE tree_id = ? ORDER BY id", (tree_id,),
                          ("extra",))

    def edge_rows(self, tree_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT target, kind, sibling_order FROM edge WHERE tree_id = ?",
                          (tree_id,))

    def source_rows(self, tree_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT s.target, s.node, s.role, s.position FROM edge_source s "
                          "JOIN edge e ON e.target = s.target WHERE e.tree_id = ?", (tree_id,))

    def generation_rows(self, tree_id: str) -> list[dict[str, Any]]:
        """The tree's generation records, oldest first."""
        return self._rows("SELECT g.* FROM generation g JOIN node n ON n.id = g.node "
                          "WHERE n.tree_id = ? ORDER BY g.created, g.id", (tree_id,),
                          ("params", "usage", "logprobs"))

    def link_rows(self, tree_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM link WHERE tree_id = ? ORDER BY created, id",
                          (tree_id,))

    def raw_responses(self, ids: Iterable[str]) -> dict[str, str]:
        """Raw response id → body, for those of ``ids`` stored."""
        wanted = sorted(set(ids))
        out: dict[str, str] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            out.update((r.id, r.body) for r in RawResponse.select().where(
                RawResponse.id.in_(chunk)))
        return out

    def media(self, sha: str) -> tuple[str, bytes] | None:
        """A stored media file's (mime type, bytes)."""
        row = Media.get_or_none(Media.sha256 == sha)
        return (row.mime, bytes(row.data)) if row is not None else None

    def position_node(self, participant_id: str, tree_id: str) -> str | None:
        """The node a participant (by id) stands on in a tree, if placed there."""
        row = self.sql("SELECT node FROM position WHERE participant = ? AND tree = ?",
                       (participant_id, tree_id)).fetchone()
        return row[0] if row else None

    def titles_taken(self, title: str) -> set[str]:
        """The stored titles that are ``title`` or ``title (…``."""
        return {t for (t,) in Tree.select(Tree.title).where(
            (Tree.title == title) | Tree.title.startswith(f"{title} (")).tuples()}

    # ── writing an import's rows ──────────────────────────────────────────────
    def documents(self, rows: Sequence[dict[str, Any]]) -> None:
        for row in rows:
            Document.insert(**row).execute()

    def new_media(self, rows: Iterable[dict[str, Any]], dumps: Dumps | None = None) -> None:
        """Media rows, but for those whose content is stored already."""
        fresh = [r for r in rows if Media.get_or_none(Media.sha256 == r["sha256"]) is None]
        self._insert(Media, fresh, dumps)

    def tree(self, row: dict[str, Any]) -> None:
        Tree.insert(**row).execute()

    def nodes(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(Node, rows, dumps)

    def edges(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(Edge, rows, dumps)

    def sources(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(EdgeSource, rows, dumps)

    def raws(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(RawResponse, rows, dumps)

    def generations(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(Generation, rows, dumps)

    def links(self, rows: list[dict[str, Any]], dumps: Dumps | None = None) -> None:
        self._insert(Link, rows, dumps)

    def node_tuples(self, rows: Sequence[Sequence[Any]]) -> None:
        """Node rows as tuples in :data:`NODE_COLUMNS` order, values as stored."""
        insert_rows(self.db, "node", NODE_COLUMNS, rows)

    def edge_tuples(self, rows: Sequence[Sequence[Any]]) -> None:
        insert_rows(self.db, "edge", EDGE_COLUMNS, rows)

    def source_tuples(self, rows: Sequence[Sequence[Any]]) -> None:
        insert_rows(self.db, "edge_source", SOURCE_COLUMNS, rows)

    def place(self, participant_id: str, tree_id: str, node_id: str, updated: float) -> None:
        """Where the importer stands in an imported tree (its change-log row is the
        caller's)."""
        upsert(Position, ("participant", "tree"), participant=participant_id, tree=tree_id,
               node=node_id, tip=node_id, updated=updated).execute()

    def _insert(self, model: type[pw.Model], rows: list[dict[str, Any]],
                dumps: Dumps | None) -> None:
        """Multi-row INSERTs (peewee's insert_many spends most of an import building SQL
        text). The rows become tuples column by column, in C (``itemgetter``, ``zip``,
        ``map``): a 100,000-node import has millions of values, nearly all of them already
        what the column takes; a column converts through its field only when one of its
        values is not, and JSON columns are written by ``dumps`` (an importer's: what it
        stores is JSON read from a file), else by the field."""
        if not rows:
            return
        names = list(rows[0])
        fields = [model._meta.fields[name] for name in names]
        columns = [f.column_name for f in fields]
        get = itemgetter(*names)
        for i in range(0, len(rows), _BATCH):
            batch = list(map(get, rows[i:i + _BATCH]))
            if len(names) == 1:
                batch = [(v,) for v in batch]
            cols: list[Any] = list(zip(*batch, strict=True))
            for j, f in enumerate(fields):
                if isinstance(f, JSONField):
                    cols[j] = map(_json_of(dumps) if dumps else f.db_value, cols[j])
                elif not set(map(type, cols[j])) <= set(_passes(f)):
                    cols[j] = map(f.db_value, cols[j])
            insert_rows(self.db, model._meta.table_name, columns,
                        list(zip(*cols, strict=True)))


def _json_of(dumps: Dumps) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else dumps(value)


def _passes(f: pw.Field) -> tuple[type, ...]:
    """The value types a column's conversion returns unchanged (both backends take them as
    they are): none for blobs, which always convert."""
    if isinstance(f, pw.BlobField):
        return ()
    if isinstance(f, pw.ForeignKeyField):
        return _passes(f.rel_field)
    if isinstance(f, pw.CharField | pw.TextField):
        return (str, type(None))
    if isinstance(f, pw.BooleanField):
        return (bool, type(None))
    if isinstance(f, pw.IntegerField | pw.AutoField):
        return (int, bool, type(None))
    if isinstance(f, pw.FloatField):
        return (float, type(None))
    return ()
