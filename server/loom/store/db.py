"""Opening the database: WAL, foreign keys, a busy timeout, and schema migrations."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import peewee as pw
import platformdirs

from loom.store import schema

SCHEMA_VERSION = 8
BUSY_TIMEOUT_S = 15.0

# Each migration takes the database from version i to i+1; index 0 creates version 1.
MIGRATIONS: list[Callable[[pw.SqliteDatabase], None]] = [
    lambda db: db.create_tables(schema.MODELS),
    lambda db: db.create_tables(schema.V2_MODELS),  # v2: buffer state survives restarts
    lambda db: _v3(db),  # v3: the summary queue, tree summary counters and themes
    lambda db: db.create_tables(schema.V4_MODELS),  # v4: collaborator turns
    lambda db: _v5(db),  # v5: buffer states per editor session
    lambda db: _v6(db),  # v6: media of imported trees, and what a file says per tree
    lambda db: _v7(db),  # v7: pins and stashes per participant and per tree
    lambda db: _v8(db),  # v8: per-token data of model nodes
]


def _v3(db: pw.SqliteDatabase) -> None:
    # Plain ADD COLUMNs: a migrator that rebuilds the table would drop it, and with foreign
    # keys on, the drop cascades to every node of every tree.
    db.create_tables(schema.V3_MODELS)
    have = {c.name for c in db.get_columns("tree")}
    if "summary_counter" not in have:
        db.execute_sql('ALTER TABLE "tree" ADD COLUMN "summary_counter" INTEGER NOT NULL '
                       "DEFAULT 0")
    if "themes" not in have:
        db.execute_sql('ALTER TABLE "tree" ADD COLUMN "themes" TEXT')


def _v5(db: pw.SqliteDatabase) -> None:
    # The buffer state's key gains the editor session: SQLite cannot change a primary key,
    # so the table is rebuilt (nothing references it) with the old rows as session "".
    db.execute_sql('ALTER TABLE "buffer_state" RENAME TO "buffer_state_v4"')
    db.create_tables([schema.BufferState, *schema.V5_MODELS])
    db.execute_sql('INSERT INTO "buffer_state" (uri, participant, session, tree, tip, pending, '
                   'working, updated) SELECT uri, participant, \'\', tree, tip, pending, '
                   'working, updated FROM "buffer_state_v4"')
    db.execute_sql('DROP TABLE "buffer_state_v4"')


def _v6(db: pw.SqliteDatabase) -> None:
    db.create_tables(schema.V6_MODELS)
    if "extra" not in {c.name for c in db.get_columns("tree")}:
        db.execute_sql('ALTER TABLE "tree" ADD COLUMN "extra" TEXT')


def _v7(db: pw.SqliteDatabase) -> None:
    # Stashes gain their tree (the label is unique per participant and tree); each old one
    # goes to the tree its participant was last in. Pins always stored their tree; one
    # without is placed by the node it pins, else by its participant's tree.
    if "tree" not in {c.name for c in db.get_columns("stash")}:
        db.execute_sql('ALTER TABLE "stash" ADD COLUMN "tree" VARCHAR(255)')
    db.execute_sql('UPDATE "stash" SET tree = (SELECT current_tree FROM participant p '
                   "WHERE p.id = stash.participant) WHERE tree IS NULL")
    db.execute_sql('DROP INDEX IF EXISTS "stash_participant_label"')
    db.execute_sql('CREATE UNIQUE INDEX IF NOT EXISTS "stash_participant_tree_label" ON '
                   '"stash" (participant, tree, label)')
    db.execute_sql('UPDATE "pin" SET tree = (SELECT tree_id FROM node n WHERE n.id = pin.ref) '
                   "WHERE tree IS NULL AND kind = 'node'")
    db.execute_sql('UPDATE "pin" SET tree = (SELECT current_tree FROM participant p '
                   "WHERE p.id = pin.participant) WHERE tree IS NULL")


def _v8(db: pw.SqliteDatabase) -> None:
    # Token data gets its own compact table. Generations stored before keep their JSON
    # logprobs, which store/tokens.py still reads: nothing is converted or lost here.
    db.create_tables(schema.V8_MODELS)


def default_db_path() -> Path:
    env = os.environ.get("LOOM_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("loom")) / "loom.db"


class SchemaTooNew(RuntimeError):
    pass


def open_database(path: str | os.PathLike[str] | None = None) -> pw.SqliteDatabase:
    """Open (creating and migrating as needed) the SQLite file and bind the schema to it."""
    target = Path(path).expanduser() if path is not None else default_db_path()
    if str(target) != ":memory:":
        target.parent.mkdir(parents=True, exist_ok=True)
    db = pw.SqliteDatabase(
        str(target),
        timeout=BUSY_TIMEOUT_S,
        # Write transactions take the write lock up front, so two writers queue on the busy
        # timeout instead of failing on a read→write lock upgrade.
        lock_type="IMMEDIATE",
        pragmas={
            "journal_mode": "wal",
            "foreign_keys": 1,
            "busy_timeout": int(BUSY_TIMEOUT_S * 1000),
            "synchronous": "normal",
            "cache_size": -32_000,
        },
    )
    schema.database_proxy.initialize(db)
    db.connect(reuse_if_open=True)
    migrate(db)
    return db


def current_version(db: pw.SqliteDatabase) -> int:
    if not db.table_exists("meta"):
        return 0
    row = schema.Meta.get_or_none(schema.Meta.key == "schema_version")
    return int(row.value) if row else 0


def migrate(db: pw.SqliteDatabase) -> None:
    """Bring the schema up to date in one transaction, with foreign keys off (as SQLite
    advises for schema changes) and checked before the transaction commits."""
    version = current_version(db)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema v{version} is newer than this Loom (v{SCHEMA_VERSION})")
    if version == SCHEMA_VERSION:
        return
    db.execute_sql("PRAGMA foreign_keys = OFF")  # takes effect outside a transaction only
    try:
        with db.atomic():
            version = current_version(db)  # another process may have migrated meanwhile
            for step in MIGRATIONS[version:SCHEMA_VERSION]:
                step(db)
            broken = db.execute_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"migration would break references: {broken[:3]}")
            schema.Meta.replace(key="schema_version", value=str(SCHEMA_VERSION)).execute()
    finally:
        db.execute_sql("PRAGMA foreign_keys = ON")
