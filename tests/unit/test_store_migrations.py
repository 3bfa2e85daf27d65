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


def test_v9_to_v10_indexes_the_text_already_there(own_db_target: str | Path) -> None:
    """A database at v9 (before full-text search) gains the index, filled with the nodes
    it already holds: FTS5 on SQLite, a to_tsvector index on PostgreSQL."""
    from loom.store import reader

    path = own_db_target
    _make(path)
    con = _Raw(path)
    if is_url(path):
        con.execute('DROP INDEX "node_fts"')
    else:
        for trigger in ("node_fts_ai", "node_fts_ad", "node_fts_au"):
            con.execute(f'DROP TRIGGER "{trigger}"')
        con.execute('DROP TABLE "node_fts"')
        con.execute('DROP TABLE "node_fts_pending"')
    con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    ws = Workspace(open_database(path))
    assert dbmod.current_version(ws.db) == SCHEMA_VERSION
    hits = reader.search(ws, "step 7")
    assert [h.node.content for h in hits] == [" step 7."]
    assert "«step»" in hits[0].snippet and "«7»" in hits[0].snippet
    # and it keeps up with new text
    tree = ws.find_tree("kept")
    ws.add_node(tree, ws.node(tree.root), " a walnut tree.", ws.human())
    assert [h.node.content for h in reader.search(ws, "walnu")] == [" a walnut tree."]


#: v10's triggers, which indexed each node as it was written
V10_TRIGGERS = (
    'CREATE TRIGGER "node_fts_ai" AFTER INSERT ON "node" BEGIN '
    "INSERT INTO node_fts(rowid, content) VALUES (new.rowid, new.content); END",
    'CREATE TRIGGER "node_fts_ad" AFTER DELETE ON "node" BEGIN '
    "INSERT INTO node_fts(node_fts, rowid, content) VALUES ('delete', old.rowid, "
    "old.content); END",
    'CREATE TRIGGER "node_fts_au" AFTER UPDATE OF content ON "node" BEGIN '
    "INSERT INTO node_fts(node_fts, rowid, content) VALUES ('delete', old.rowid, "
    "old.content); INSERT INTO node_fts(rowid, content) VALUES (new.rowid, new.content); "
    "END",
)


def test_v10_to_v11_queues_written_nodes_for_the_next_search(tmp_path: Path) -> None:
    """v11 (SQLite): a written node waits in node_fts_pending and is indexed when someone
    next searches; what v10 indexed stays found, and changing or deleting either kind of
    node leaves the index right."""
    from loom.store import reader

    path = tmp_path / "loom.db"
    _make(path)
    con = _Raw(path)
    for trigger in ("node_fts_ai", "node_fts_ad", "node_fts_au"):
        con.execute(f'DROP TRIGGER "{trigger}"')
    con.execute('DROP TABLE "node_fts_pending"')
    con.execute("INSERT INTO node_fts(node_fts) VALUES ('rebuild')")
    for trigger in V10_TRIGGERS:
        con.execute(trigger)
    con.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    ws = Workspace(open_database(path))
    assert dbmod.current_version(ws.db) == SCHEMA_VERSION == 17

    def found(text: str) -> list[str]:
        return sorted(h.node.content for h in reader.search(ws, text))

    def waiting() -> int:
        return int(ws.db.execute_sql("SELECT count(*) FROM node_fts_pending").fetchone()[0])

    assert found("step 7") == [" step 7."]  # indexed by v10
    tree = ws.find_tree("kept")
    root = ws.node(tree.root)
    walnut = ws.add_node(tree, root, " a walnut tree.", ws.human())
    lavender = ws.add_node(tree, root, " lavender by the door.", ws.human())
    assert waiting() == 2  # written, not yet indexed
    assert found("walnu") == [" a walnut tree."]
    assert waiting() == 0
    # a change to an indexed node, and to one still waiting
    old = ws.db.execute_sql("SELECT id FROM node WHERE content = ' step 7.'").fetchone()[0]
    ws.db.execute_sql("UPDATE node SET content = ' step seven.' WHERE id = ?", (old,))
    fresh = ws.add_node(tree, root, " an oak.", ws.human())
    ws.db.execute_sql("UPDATE node SET content = ' an elm.' WHERE id = ?", (fresh.id,))
    assert found("step 7") == [] and found("seven") == [" step seven."]
    assert found("oak") == [] and found("elm") == [" an elm."]
    # deleting an indexed node and a waiting one
    ws.db.execute_sql("UPDATE node SET content = ' a beech.' WHERE id = ?", (lavender.id,))
    ws.db.execute_sql("DELETE FROM node WHERE id IN (?, ?)", (walnut.id, lavender.id))
    assert waiting() == 0
    assert found("walnut") == [] and found("beech") == [] and found("lavender") == []
    ws.db.execute_sql("INSERT INTO node_fts(node_fts) VALUES ('integrity-check')")


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
    assert dbmod.current_version(db) == SCHEMA_VERSION == 17
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


def test_v15_to_v16_keeps_generated_token_data_and_names_no_scorer(
        own_db_target: str | Path) -> None:
    """v16: token data says which model scored it (``→ score``); a generation's stored
    before keeps its tokens, with no scorer."""
    from loom.model import tokens as T
    from loom.store import node_tokens as token_store

    path = own_db_target
    ws = Workspace(open_database(path))
    tree = ws.create_tree("kept", "buffer", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), " made", ws.subject())
    token_store.save(ws, node.id, [T.Token(0, " made", -0.5)], 5)
    ws.db.close()
    con = _Raw(path)
    con.execute('ALTER TABLE "node_tokens" DROP COLUMN "scorer"')
    con.execute("UPDATE meta SET value = '15' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    token_store.forget([node.id])
    ws = Workspace(open_database(path))
    assert dbmod.current_version(ws.db) == SCHEMA_VERSION
    assert "scorer" in {c.name for c in ws.db.get_columns("node_tokens")}
    assert [t.text for t in token_store.tokens(ws, ws.node(node.id))] == [" made"]
    assert token_store.scorers(ws, [node.id]) == {node.id: None}


def test_v16_to_v17_keeps_model_choices_and_adds_their_preset(tmp_path: Path) -> None:
    """v17: a participant's model choice per tree gains the sampler preset picked there;
    the choices made before stay, with none."""
    path = tmp_path / "v16.db"
    ws = Workspace(open_database(path))
    human = ws.human()
    tree = ws.create_tree("kept", "buffer", root_content="Root.")
    ws.choose_model(human, tree, "local")
    ws.db.close()
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE model_choice DROP COLUMN preset")
    con.execute("UPDATE meta SET value = '16' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    ws = Workspace(open_database(path))
    assert dbmod.current_version(ws.db) == SCHEMA_VERSION == 17
    human, tree = ws.human(), ws.find_tree("kept")
    assert ws.model_choice(human, tree) == "local" and ws.preset_choice(human, tree) is None
    ws.choose_model(human, tree, None, "wild", keep_preset=False)
    assert ws.model_choice(human, tree) is None and ws.preset_choice(human, tree) == "wild"
    ws.choose_model(human, tree, "local")  # a model picked keeps the preset
    assert ws.preset_choice(human, tree) == "wild"
    ws.choose_model(human, tree, None, None, keep_preset=False)
    assert ws.model_choice(human, tree) is None and ws.preset_choice(human, tree) is None
