"""Migrations keep every row: a database from an older Loom opens with its trees intact —
one migration history, run on SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loom.store import db as dbmod
from loom.store.backend import is_url
from loom.store.db import SCHEMA_VERSION, SchemaTooNew, open_database
from loom.store.workspace import Workspace


class _Raw:
    """A plain driver connection to either backend, beside Loom's own."""

    def __init__(self, target: str | Path) -> None:
        if is_url(target):
            import psycopg

            self.con: Any = psycopg.connect(str(target))
        else:
            self.con = sqlite3.connect(target)

    def execute(self, sql: str) -> Any:
        return self.con.execute(sql)

    def commit(self) -> None:
        self.con.commit()

    def close(self) -> None:
        self.con.close()


def _make(path: str | Path) -> tuple[int, int]:
    ws = Workspace(open_database(path))
    tree = ws.create_tree("kept", "buffer", root_content="Root.")
    parent = ws.node(tree.root)
    for i in range(20):
        parent = ws.add_node(tree, parent, f" step {i}.", ws.human())
    ws.db.close()
    con = _Raw(path)
    counts = (con.execute("SELECT count(*) FROM node").fetchone()[0],
              con.execute("SELECT count(*) FROM edge").fetchone()[0])
    con.close()
    return counts


def _downgrade_to_v2(path: str | Path) -> None:
    con = _Raw(path)
    if is_url(path):  # v7's trigger is PostgreSQL's own
        con.execute('DROP TRIGGER loom_change_notify ON "change"')
    con.execute("DROP TABLE media")
    con.execute("ALTER TABLE tree DROP COLUMN extra")
    con.execute("DROP TABLE agent_turn")
    con.execute("DROP TABLE summary_job")
    con.execute("ALTER TABLE tree DROP COLUMN summary_counter")
    con.execute("ALTER TABLE tree DROP COLUMN themes")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def test_v2_to_current_keeps_every_node(own_db_target: str | Path) -> None:
    path = own_db_target
    nodes, edges = _make(path)
    _downgrade_to_v2(path)
    db = open_database(path)
    assert dbmod.current_version(db) == SCHEMA_VERSION
    assert db.execute_sql("SELECT count(*) FROM node").fetchone()[0] == nodes
    assert db.execute_sql("SELECT count(*) FROM edge").fetchone()[0] == edges
    assert {c.name for c in db.get_columns("tree")} >= {"summary_counter", "themes"}
    if not is_url(path):
        assert db.execute_sql("PRAGMA foreign_keys").fetchone()[0] == 1
    ws = Workspace(db)
    tree = ws.find_tree("kept")
    assert [n.content for n in ws.path(ws.descend(ws.node(tree.root)))][-1] == " step 19."


def test_newer_schema_is_refused(own_db_target: str | Path) -> None:
    path = own_db_target
    _make(path)
    con = _Raw(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(SchemaTooNew):
        open_database(path)


def test_v5_to_v6_places_stashes_and_pins_in_trees(tmp_path: Path) -> None:
    """v6: pins and stashes are per participant and per tree. An old stash goes to the tree
    its participant was last in; the label is unique per participant and tree."""
    path = tmp_path / "v5.db"
    ws = Workspace(open_database(path))
    human = ws.human()
    tree = ws.create_tree("kept", "dialogue", root_content="Root.")
    other = ws.create_tree("other", "dialogue", root_content="Elsewhere.")
    node = ws.add_node(tree, ws.node(tree.root), "a", human)
    ws.set_position(human, tree, node)
    ws.db.close()
    con = sqlite3.connect(path)  # back to v6: stashes had no tree, one label per participant
    con.execute("DROP INDEX stash_participant_tree_label")
    con.execute("ALTER TABLE stash DROP COLUMN tree")
    con.execute("CREATE UNIQUE INDEX stash_participant_label ON stash (participant, label)")
    con.execute("INSERT INTO stash (participant, label, content, tokens, source, recalled, "
                "created) VALUES (?, 'plan', 'first the gate', 4, 'literal', 0, 1.0)",
                (human.id,))
    con.execute("INSERT INTO pin (participant, tree, kind, ref, section, created) "
                "VALUES (?, NULL, 'node', ?, NULL, 1.0)", (human.id, node.id))
    con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    con.commit()
    con.close()

    from loom.store import memory_repo

    db = open_database(path)
    assert dbmod.current_version(db) == SCHEMA_VERSION == 9
    ws = Workspace(db)
    human = ws.human()
    tree, other = ws.find_tree("kept"), ws.find_tree("other")
    assert [s.label for s in memory_repo.stashes(ws, human, tree)] == ["plan"]
    assert memory_repo.stashes(ws, human, other) == []
    assert [p.ref for p, _ in memory_repo.pinned(ws, human, tree)] == [node.id]
    assert memory_repo.pinned(ws, human, other) == []
    # the same label in another tree is another stash
    assert not memory_repo.put_stash(ws, human, other, "plan", "elsewhere", 1, "literal")
    assert memory_repo.find_stash(ws, human, tree, "plan").content == "first the gate"


def test_postgres_columns_are_sqlite_text_and_times_keep_their_digits(pg_url: str) -> None:
    """No varchar(255) (a long title must fit), strings compare byte-wise like SQLite's,
    and timestamps are double precision (peewee's default REAL keeps ~7 digits)."""
    ws = Workspace(open_database(pg_url))
    types = dict(ws.sql("SELECT column_name || '.' || table_name, data_type FROM "
                        "information_schema.columns WHERE table_schema = current_schema()")
                 .fetchall())
    assert "character varying" not in types.values()
    assert types["created.node"] == "double precision"
    tree = ws.create_tree("t" * 1000)
    ws.add_node(tree, ws.node(tree.root), "x", ws.human())
    assert ws.find_tree("t" * 1000).id == tree.id
    ws.clock = lambda: 1_800_000_000.123456
    node = ws.add_node(tree, ws.node(tree.root), "y", ws.human())
    assert ws.node(node.id).created == 1_800_000_000.123456
    assert [r[0] for r in ws.sql("SELECT x FROM (VALUES ('a'), ('B'), ('_')) AS v(x) "
                                 "ORDER BY x COLLATE \"C\"")] == ["B", "_", "a"]
    assert ws.sql("SELECT collation_name FROM information_schema.columns WHERE "
                  "table_name = 'node' AND column_name = 'local_id'").fetchone()[0] == "C"
    ws.db.close()
