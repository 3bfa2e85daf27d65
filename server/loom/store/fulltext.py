"""Full-text search over node text, on each backend's own engine: SQLite's FTS5 (an
external-content index over ``node``, kept by triggers) or PostgreSQL's text search (a GIN
index over ``to_tsvector('simple', content)``). Both take what a person typed the same way:
every word must occur, the last may be the start of a word, quotes keep a phrase; both
tokenise without stemming or stop words (FTS5's ``unicode61``, PostgreSQL's ``simple``), so
a query finds the same nodes on either.

The one module that speaks FTS5 (its ``rowid`` join is SQLite's own):
``tests/unit/test_sql_portability.py`` allows it here only."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from loom.store.backend import is_postgres
from loom.store.orm import pw

_WORD = re.compile(r"[\w'’]+", re.UNICODE)
_PG_WORD = re.compile(r"\w+", re.UNICODE)  # what the ``simple`` parser keeps of a word

#: SQLite: the FTS5 index, an external-content table over ``node``. A node written waits in
#: ``node_fts_pending`` (one rowid, kept by a trigger in the writer's own transaction) and
#: is indexed when someone next searches (:func:`catch_up`): FTS5's work on every commit
#: was a sixth of adding a node, and search is rare beside typing. A node still waiting
#: has nothing in the index to take out when it changes or goes.
_FTS5_TABLE = (
    'CREATE VIRTUAL TABLE IF NOT EXISTS "node_fts" USING fts5(content, content="node", '
    "content_rowid=\"rowid\", tokenize='unicode61 remove_diacritics 2')")
_PENDING_TABLE = 'CREATE TABLE IF NOT EXISTS "node_fts_pending" ("node" INTEGER PRIMARY KEY)'
_INDEXED = "NOT EXISTS (SELECT 1 FROM node_fts_pending WHERE node = old.rowid)"
_ON_INSERT = (
    'CREATE TRIGGER IF NOT EXISTS "node_fts_ai" AFTER INSERT ON "node" BEGIN '
    "INSERT INTO node_fts_pending(node) VALUES (new.rowid); END")
_ON_DELETE = (
    'CREATE TRIGGER IF NOT EXISTS "node_fts_ad" AFTER DELETE ON "node" BEGIN '
    "INSERT INTO node_fts(node_fts, rowid, content) SELECT 'delete', old.rowid, "
    f"old.content WHERE {_INDEXED}; "
    "DELETE FROM node_fts_pending WHERE node = old.rowid; END")
_ON_UPDATE = (
    'CREATE TRIGGER IF NOT EXISTS "node_fts_au" AFTER UPDATE OF content ON "node" BEGIN '
    "INSERT INTO node_fts(node_fts, rowid, content) SELECT 'delete', old.rowid, "
    f"old.content WHERE {_INDEXED}; "
    "INSERT INTO node_fts_pending(node) SELECT new.rowid WHERE NOT EXISTS "
    "(SELECT 1 FROM node_fts_pending WHERE node = new.rowid); END")
FTS5_SQL = (_FTS5_TABLE, _PENDING_TABLE, _ON_INSERT, _ON_DELETE, _ON_UPDATE)
_TRIGGERS = ("node_fts_ai", "node_fts_ad", "node_fts_au")

#: PostgreSQL: an expression index the search's ``@@`` condition uses as written.
PG_SQL = (
    'CREATE INDEX IF NOT EXISTS "node_fts" ON "node" '
    "USING gin (to_tsvector('simple', content))",
)


def create_index(db: pw.Database) -> None:
    """The full-text index of node text, filled from the nodes already there."""
    if is_postgres(db):
        for statement in PG_SQL:
            db.execute_sql(statement)
        return
    for statement in FTS5_SQL:
        db.execute_sql(statement)
    db.execute_sql("INSERT INTO node_fts(node_fts) VALUES ('rebuild')")


def queue_writes(db: pw.Database) -> None:
    """SQLite: the index's triggers queue written nodes (schema v11) instead of indexing
    them on the spot (v10); what is indexed stays indexed."""
    if is_postgres(db):
        return
    for name in _TRIGGERS:
        db.execute_sql(f'DROP TRIGGER IF EXISTS "{name}"')
    for statement in FTS5_SQL:
        db.execute_sql(statement)


def catch_up(db: pw.Database) -> None:
    """SQLite: index the nodes written since the last search, in one statement (a write
    transaction of its own unless one is open; writers queue on SQLite's lock)."""
    if is_postgres(db) or db.execute_sql(
            "SELECT 1 FROM node_fts_pending LIMIT 1").fetchone() is None:
        return
    with db.atomic():
        db.execute_sql("INSERT INTO node_fts(rowid, content) SELECT n.rowid, n.content "
                       "FROM node_fts_pending p JOIN node n ON n.rowid = p.node")
        db.execute_sql("DELETE FROM node_fts_pending")


@contextmanager
def deferred(db: pw.Database, trees: Sequence[str]) -> Iterator[None]:
    """Inside a write transaction: nodes inserted in the block are queued for the index at
    its end, all at once, instead of row by row by the insert trigger; the next search
    indexes them (``catch_up``), as it does every written node (schema v11). Indexing a
    100,000-node import on the spot was a sixteenth of the import; the first search after
    it takes that time instead. The trigger is dropped for the block and created again,
    in the same transaction: a failure rolls both back, and no other writer can insert a
    node meanwhile (SQLite has one writer). Nodes of other trees must not be inserted in
    the block. PostgreSQL's index is left as it is (rebuilding it would read every
    tree)."""
    if is_postgres(db) or not trees:
        yield
        return
    if not db.in_transaction():
        raise RuntimeError("fulltext.deferred needs a write transaction")
    db.execute_sql('DROP TRIGGER IF EXISTS "node_fts_ai"')
    try:
        yield
        for i in range(0, len(trees), 500):  # (an SQLite statement takes 999 parameters)
            chunk = tuple(trees[i:i + 500])
            db.execute_sql("INSERT INTO node_fts_pending(node) SELECT rowid FROM node "
                           f"WHERE tree_id IN ({', '.join('?' for _ in chunk)})", chunk)
    finally:  # (after a failure the rollback brings the trigger back: IF NOT EXISTS)
        db.execute_sql(_ON_INSERT)


def _terms(text: str, word: re.Pattern[str]) -> tuple[list[list[str]], list[str]]:
    """(quoted phrases as word lists, the other words) of what a person typed."""
    phrases = [word.findall(p) for p in re.findall(r'"([^"]+)"', text)]
    rest = re.sub(r'"[^"]*"', " ", text)
    return [p for p in phrases if p], word.findall(rest)


def fts_query(text: str) -> str | None:
    """What a person typed as an FTS5 query; None when there is no word."""
    phrases, words = _terms(text, _WORD)
    parts = ['"' + " ".join(w.replace('"', "") for w in p) + '"' for p in phrases]
    for i, w in enumerate(words):
        w = w.replace('"', "")
        parts.append(f'"{w}"' + ("*" if i == len(words) - 1 and len(w) >= 2 else ""))
    return " AND ".join(parts) if parts else None


def ts_query(text: str) -> str | None:
    """What a person typed as a PostgreSQL ``to_tsquery`` text (words are ``\\w`` runs, so
    nothing in it needs quoting); None when there is no word."""
    phrases, words = _terms(text, _PG_WORD)
    parts = [" <-> ".join(p) for p in phrases]
    for i, w in enumerate(words):
        parts.append(w + (":*" if i == len(words) - 1 and len(w) >= 2 else ""))
    return " & ".join(f"({p})" for p in parts) if parts else None


def has_words(text: str) -> bool:
    return bool(_WORD.search(text))


def matches(db: pw.Database, text: str, where: list[str], params: list[Any],
            limit: int) -> list[tuple[str, str, str, Any]]:
    """``(node id, tree title, snippet marked «…», pruned)`` of the nodes matching
    ``text``, best first, that also meet ``where`` (conditions on ``node n`` and
    ``tree t`` with ``?`` placeholders and their ``params``). Empty when nothing in
    ``text`` is a word."""
    if is_postgres(db):
        query = ts_query(text)
        if query is None:
            return []
        q = "to_tsquery('simple', ?)"
        conditions = [f"to_tsvector('simple', n.content) @@ {q}", *where]
        sql = ("SELECT n.id, t.title, ts_headline('simple', n.content, " + q + ", "
               "'StartSel=«, StopSel=», MaxWords=14, MinWords=6, MaxFragments=1, "
               "FragmentDelimiter=…'), n.pruned FROM node n JOIN tree t ON t.id = n.tree_id "
               f"WHERE {' AND '.join(conditions)} "
               f"ORDER BY ts_rank(to_tsvector('simple', n.content), {q}) DESC, n.id LIMIT ?")
        args = [query, query, *params, query, limit]
    else:
        query = fts_query(text)
        if query is None:
            return []
        catch_up(db)
        conditions = ["node_fts MATCH ?", *where]
        sql = ("SELECT n.id, t.title, snippet(node_fts, 0, '«', '»', '…', 12), n.pruned "
               "FROM node_fts JOIN node n ON n.rowid = node_fts.rowid JOIN tree t ON "
               f"t.id = n.tree_id WHERE {' AND '.join(conditions)} ORDER BY rank LIMIT ?")
        args = [query, *params, limit]
    return [tuple(r) for r in db.execute_sql(sql, tuple(args)).fetchall()]  # type: ignore[misc]
