"""Opening the database — an SQLite file (WAL, foreign keys, a busy timeout) or a
PostgreSQL server (``postgresql://…``) — and the one schema migration history both share."""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

from loom.errors import LoomError
from loom.store import fulltext, roles, schema
from loom.store.backend import (
    PasswordSource,
    connect_postgres,
    is_postgres,
    is_url,
    storage_error,
)
from loom.store.dialect import upsert
from loom.store.orm import pw

SCHEMA_VERSION = 17
log = logging.getLogger(__name__)
BUSY_TIMEOUT_S = 15.0

# Each migration takes the database from version i to i+1; index 0 creates version 1.
# Steps are written once for both backends; where the two differ, the step says so.
MIGRATIONS: list[Callable[[pw.Database], None]] = [
    lambda db: db.create_tables(schema.MODELS),
    lambda db: db.create_tables(schema.V2_MODELS),  # v2: buffer state survives restarts
    lambda db: _v3(db),  # v3: the summary queue, tree summary counters and themes
    lambda db: db.create_tables(schema.V4_MODELS),  # v4: collaborator turns
    lambda db: _v5(db),  # v5: buffer states per editor session
    lambda db: _v6(db),  # v6: media of imported trees, and what a file says per tree
    lambda db: _v7(db),  # v7: pins and stashes per participant and per tree
    lambda db: _v8(db),  # v8: per-token data of model nodes
    lambda db: _v9(db),  # v9: the live change feed (PostgreSQL NOTIFY on every change row)
    lambda db: _v10_search(db),  # v10: full-text search over node text
    lambda db: fulltext.queue_writes(db),  # v11: written nodes indexed when next searched
    lambda db: db.create_tables(schema.V12_MODELS),  # v12: each participant's model per tree
    lambda db: db.create_tables(schema.V13_MODELS),  # v13: what each participant chose
    lambda db: _v14(db),  # v14: which version of a node each participant's path shows
    lambda db: _v15(db),  # v15: which process holds each branch lock
    lambda db: _v16(db),  # v16: token data of a writer's text, scored by a model
    lambda db: _v17(db),  # v17: the sampler preset each participant picked per tree
]


def _v3(db: pw.Database) -> None:
    # Plain ADD COLUMNs: a migrator that rebuilds the table would drop it, and with foreign
    # keys on, the drop cascades to every node of every tree.
    db.create_tables(schema.V3_MODELS)
    have = {c.name for c in db.get_columns("tree")}
    if "summary_counter" not in have:
        db.execute_sql('ALTER TABLE "tree" ADD COLUMN "summary_counter" INTEGER NOT NULL '
                       "DEFAULT 0")
    if "themes" not in have:
        db.execute_sql('ALTER TABLE "tree" ADD COLUMN "themes" TEXT')


def _v14(db: pw.Database) -> None:
    if "chosen" not in {c.name for c in db.get_columns("position")}:
        db.execute_sql('ALTER TABLE "position" ADD COLUMN "chosen" TEXT')


def _v15(db: pw.Database) -> None:
    have = {c.name for c in db.get_columns("branch_lock")}
    if "host" not in have:
        db.execute_sql('ALTER TABLE "branch_lock" ADD COLUMN "host" VARCHAR(255)')
    if "pid" not in have:
        db.execute_sql('ALTER TABLE "branch_lock" ADD COLUMN "pid" INTEGER')


def _v16(db: pw.Database) -> None:
    if "scorer" not in {c.name for c in db.get_columns("node_tokens")}:
        db.execute_sql('ALTER TABLE "node_tokens" ADD COLUMN "scorer" VARCHAR(255)')


def _v17(db: pw.Database) -> None:
    if "preset" not in {c.name for c in db.get_columns("model_choice")}:
        db.execute_sql('ALTER TABLE "model_choice" ADD COLUMN "preset" VARCHAR(255)')


def _v5(db: pw.Database) -> None:
    # The buffer state's key gains the editor session: SQLite cannot change a primary key,
    # so the table is rebuilt (nothing references it) with the old rows as session "".
    db.execute_sql('ALTER TABLE "buffer_state" RENAME TO "buffer_state_v4"')
    if is_postgres(db):  # constraint names are per schema there: free the new table's
        db.execute_sql('ALTER TABLE "buffer_state_v4" RENAME CONSTRAINT "buffer_state_pkey" '
                       'TO "buffer_state_v4_pkey"')
    db.create_tables([schema.BufferState, *schema.V5_MODELS])
    db.execute_sql('INSERT INTO "buffer_state" (uri, participant, session, tree, tip, pending, '
                   'working, updated) SELECT uri, participant, \'\', tree, tip, pending, '
                   'working, updated FROM "buffer_state_v4"')
    db.execute_sql('DROP TABLE "buffer_state_v4"')


def _v6(db: pw.Database) -> None:
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
    # logprobs, which store/node_tokens.py still reads: nothing is converted or lost here.
    db.create_tables(schema.V8_MODELS)


NOTIFY_CHANNEL = "loom_changes"


def _v9(db: pw.Database) -> None:
    # Every change row wakes the other processes at once (delivered when its transaction
    # commits); a trigger, so no writer can forget it. SQLite processes poll the log.
    if not is_postgres(db):
        return
    db.execute_sql(f"""
        CREATE OR REPLACE FUNCTION loom_notify_change() RETURNS trigger AS $$
        BEGIN
          PERFORM pg_notify('{NOTIFY_CHANNEL}', NEW.seq::text || ' ' || coalesce(NEW.tree, ''));
          RETURN NEW;
        END $$ LANGUAGE plpgsql""")
    db.execute_sql('DROP TRIGGER IF EXISTS loom_change_notify ON "change"')
    db.execute_sql('CREATE TRIGGER loom_change_notify AFTER INSERT ON "change" '
                   "FOR EACH ROW EXECUTE FUNCTION loom_notify_change()")


def _team_grants(db: pw.Database) -> None:
    """A team whose database enforces permissions with roles (docs/team.md) keeps them
    when the schema grows: the owner's migration gives the new tables their grants in its
    own transaction (a table no grant covers would refuse everyone, or none)."""
    if roles.enabled(db):
        roles.apply_grants(db)


def _postgres_text_columns(db: pw.Database) -> None:
    """On PostgreSQL, every string column becomes unbounded ``text`` compared byte by byte
    (``COLLATE "C"``): what SQLite's TEXT with its BINARY collation is. peewee's CharField
    would make ``varchar(255)`` (a long title fails) and the server's locale would order
    and compare localId prefixes differently than SQLite does."""
    rows = db.execute_sql(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_name = c.table_name "
        "AND t.table_schema = c.table_schema WHERE c.table_schema = current_schema() "
        "AND t.table_type = 'BASE TABLE' AND (c.data_type = 'character varying' "
        "OR (c.data_type = 'text' AND coalesce(c.collation_name, '') <> 'C'))").fetchall()
    for table, column in rows:
        db.execute_sql(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE text '
                       'COLLATE "C"')


def _v10_search(db: pw.Database) -> None:
    # the full-text index of node text: FTS5 on SQLite, a to_tsvector GIN index on PostgreSQL
    fulltext.create_index(db)


def default_db_path() -> Path:
    env = os.environ.get("LOOM_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("loom")) / "loom.db"


MIGRATION_LOCK = 0x4C4F4F4D  # "LOOM": the advisory lock PostgreSQL migrations take


class SchemaTooNew(RuntimeError):
    pass


def default_target() -> str | Path:
    """``$LOOM_DB`` (a file or a ``postgresql://`` URL), else the user data directory's file."""
    env = os.environ.get("LOOM_DB")
    return env if is_url(env) else default_db_path()


def open_database(path: str | os.PathLike[str] | None = None,
                  password: PasswordSource | None = None) -> pw.Database:
    """Open (creating and migrating as needed) the workspace's database and bind the schema
    to it: a ``postgresql://`` URL (``password`` says where its password comes from when
    ``PGPASSWORD`` is unset), else an SQLite file."""
    default = path is None
    if path is None:
        path = default_target()
    if is_url(path):
        db: pw.Database = connect_postgres(str(path), password)
        schema.database_proxy.initialize(db)
        migrate(db)
        return db
    target = Path(path).expanduser()
    if str(target) != ":memory:":
        if default:
            target.parent.mkdir(parents=True, exist_ok=True)  # the user data dir, on first use
        elif not target.parent.is_dir():
            # a mistyped --db must not make the folders and an empty workspace, exit 0
            raise LoomError("NOT_FOUND", f"there is no folder {target.parent} for the "
                            "database", "create the folder first (mkdir -p "
                            f"{shlex.quote(str(target.parent))}), or give a path in one "
                            "that exists")
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
            # Reads through a memory map: the first open of a long path reads pages all
            # over the file, and each read() was a system call and a copy (a 2,000-node
            # path's first open on a new connection 40-46 ms before, 28-41 ms with it).
            "mmap_size": 256 * 1024 * 1024,
        },
    )
    schema.database_proxy.initialize(db)
    db.connect(reuse_if_open=True)
    migrate(db)
    return db


def current_version(db: pw.Database) -> int:
    if not db.table_exists("meta"):
        return 0
    row = schema.Meta.get_or_none(schema.Meta.key == "schema_version")
    return int(row.value) if row else 0


def _check_version(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database schema v{version} is newer than this Loom (v{SCHEMA_VERSION})")


def migrate(db: pw.Database) -> None:
    """Bring the schema up to date in one transaction. SQLite: with foreign keys off (as it
    advises for schema changes), checked before the transaction commits. PostgreSQL: DDL is
    transactional; an advisory lock makes concurrent openers migrate one at a time."""
    version = current_version(db)
    _check_version(version)
    if version == SCHEMA_VERSION:
        if is_postgres(db):
            roles.upgrade(db, MIGRATION_LOCK)
        return
    if is_postgres(db):
        try:
            with db.atomic():
                db.execute_sql("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
                version = current_version(db)  # another process may have migrated meanwhile
                _check_version(version)
                for step in MIGRATIONS[version:SCHEMA_VERSION]:
                    step(db)
                _postgres_text_columns(db)
                _team_grants(db)
                upsert(schema.Meta, ["key"], key="schema_version",
                       value=str(SCHEMA_VERSION)).execute()
        except pw.DatabaseError as err:
            if storage_error(err).code != "PERMISSION_DENIED":
                raise
            raise LoomError("PERMISSION_DENIED", f"this Loom needs schema v{SCHEMA_VERSION}, "
                            f"the workspace has v{version}, and only the database's owner "
                            "may change it", "run this Loom once as the owner (loom --db "
                            "postgresql://OWNER@HOST/DB migrate), then again as you "
                            "(docs/team.md)") from None
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
            upsert(schema.Meta, ["key"], key="schema_version",
                   value=str(SCHEMA_VERSION)).execute()
    finally:
        db.execute_sql("PRAGMA foreign_keys = ON")


@contextmanager
def checkpoint_later(db: pw.Database) -> Iterator[None]:
    """SQLite: what the block commits stays in the write-ahead log when it commits, and a
    thread of its own copies it into the database file afterwards (a passive checkpoint:
    it waits for nobody and nobody waits for it). The checkpoint SQLite runs inside a
    commit that fills the log past its threshold was a twentieth of a 100,000-node import;
    the commit itself is as durable either way (the log is the database until it is
    copied). PostgreSQL: nothing to do."""
    if is_postgres(db) or db.database in ("", ":memory:"):
        yield
        return
    conn = db.connection()
    (pages,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
    threading.Thread(target=_checkpoint, args=(db.database,), name="loom-checkpoint",
                     daemon=True).start()


def _checkpoint(path: str) -> None:
    db = pw.SqliteDatabase(path, timeout=1.0)
    try:
        db.execute_sql("PRAGMA wal_checkpoint(PASSIVE)")
    except pw.DatabaseError as err:  # (the file gone, or busy: the next commit catches up)
        log.info("checkpoint after a bulk write: %s", err)
    finally:
        db.close()
