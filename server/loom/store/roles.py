"""A team's PostgreSQL roles: the grants, row-level security and guards that make the
database itself refuse what a person's Loom permissions do not allow (docs/team.md,
"Letting the database enforce it too").

Loom checks permissions in its executor, but anyone who can connect can also type SQL.
With a role per person, the database is the last line: readers read; writers add to the
trees but never rewrite a node's text, nor claim another's authorship, nor date a deletion
back (``role_guards``: provenance fixed at insert and checked), and write the rows beside
the nodes only as Loom's writes need them (``role_shared``: edges, token data, provenance,
the summary queue; turn locks below); everyone writes only their own rows of the tables
that mix people's rows (where they are, what they have typed, their sessions, traces, pins
and stashes) and change-log rows that describe their own transaction's writes; only the
owner changes who may do what.

The SQL is generated here from the current schema, so a table a later schema adds is
covered: ``loom users roles --sql`` prints it for the owner to pipe to ``psql`` after the
schema exists, and every later migration re-applies the table part (:func:`grants`) in its
own transaction once :func:`enabled` says the workspace uses roles, as does any Loom the
owner starts whose grants are newer than the workspace's (:func:`upgrade`). Every
statement is idempotent. The owner (the role owning the tables) bypasses row-level security, as
PostgreSQL has table owners do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from loom.store import role_guards, role_shared, schema
from loom.store.orm import pw

#: every person's group role: reads everything, writes only what reading needs
TEAM = "loom_team"
#: the writers' group role (a member of TEAM): also adds to the trees
WRITER = "loom_writer"
#: the ``meta`` key the role SQL sets, so migrations know to re-apply the grants
MARKER = "team_roles"
#: what the marker holds: the grants' version. A Loom whose grants are newer than a
#: workspace's re-applies them when the owner connects (:func:`upgrade`).
VERSION = 5  # 3: deletion times are the server's; 4: scorings are logged; 5: the rows beside
# a node, deletion marks checked (role_guards)

_ME = "(SELECT p.id FROM participant p WHERE p.name = current_user)"
_ME_OR_MODEL = f"(SELECT p.id FROM participant p WHERE {role_guards.MAY_ACT_AS})"

#: Tables holding one row per person (the column naming whose): every person writes only
#: their own rows; a writer also those of models, since the collaborators a writer's
#: editor runs act as participants of their own in the writer's process.
OWN_ROWS: dict[str, tuple[str, str]] = {
    # table: (column, what a person may do with their own rows)
    "position": ("participant", "INSERT, UPDATE, DELETE"),
    "model_choice": ("participant", "INSERT, UPDATE, DELETE"),
    "preference_event": ("participant", "INSERT"),  # appended to, never changed
    "buffer_state": ("participant", "INSERT, UPDATE, DELETE"),
    "editor_session": ("participant", "INSERT, UPDATE, DELETE"),
    "trace_entry": ("participant", "INSERT"),
    "pin": ("participant", "INSERT, UPDATE, DELETE"),
    "stash": ("participant", "INSERT, UPDATE, DELETE"),
}

#: What writers may do to the trees' shared tables (what the rows may say: ``role_guards``
#: and ``role_shared``). Nothing is ever deleted but what Loom itself removes (released turn
#: locks, done summary jobs, replaced token data): a deletion in Loom is a mark on the
#: node, undone within 30 days; after that the owner's process purges it (store/purge.py),
#: as only the owner deletes rows of the trees.
WRITER_TABLES: dict[str, str] = {
    "tree": "INSERT",  # and UPDATE of TREE_COLUMNS only
    "node": "INSERT",  # and UPDATE of NODE_COLUMNS only
    "edge": "INSERT",  # and UPDATE of its sibling order (a split's head takes its place)
    "edge_source": "INSERT",
    "link": "INSERT",
    "document": "INSERT, UPDATE",
    "generation": "INSERT",
    "raw_response": "INSERT",
    "node_tokens": "INSERT, UPDATE, DELETE",  # with its node's text (a split's cut moved)
    "media": "INSERT",
    "agent_turn": "INSERT, UPDATE",
    "branch_lock": "INSERT, UPDATE, DELETE",  # row-level security: LOCK_POLICIES
    "summary_job": "INSERT, DELETE",  # and UPDATE of JOB_COLUMNS: a worker's lease
}

#: The summary job columns a worker changes: its lease, its failed attempts, its urgency.
JOB_COLUMNS = ("priority", "attempts", "not_before")

#: The node columns Loom changes after a node is made: marks (bookmark, prune, exclude,
#: tags and the rest in ``extra``), its depth (a split moves the nodes below), its summary,
#: and — only for the halves of a split, through ``role_guards`` — where the cut is.
NODE_COLUMNS = ("bookmarked", "pruned", "excluded", "extra", "depth", "summary",
                "summary_source", "content", "content_hash")

#: The tree columns Loom changes after a tree is made: its title, marks and settings, the
#: counters and summaries its writes keep, and the root, once (``role_guards``). Its
#: description and system context are its maker's, as its nodes' text is theirs.
TREE_COLUMNS = ("title", "summary", "summary_source", "archived", "root", "ann_counter",
                "summary_counter", "themes", "updated", "extra")

#: Tables every person only reads (participant and change have policies of their own).
READ_ONLY = ("meta",)

_IS_OWNER = ("SELECT current_user = pg_get_userbyid(d.datdba) OR coalesce((SELECT "
             "r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false) "
             "FROM pg_database d WHERE d.datname = current_database()")


def _tables() -> list[str]:
    return [m._meta.table_name for m in _models()]


def _models() -> list[type[pw.Model]]:
    groups = [v for k, v in vars(schema).items() if re.fullmatch(r"(V\d+_)?MODELS", k)]
    return [m for group in groups for m in group]


def undecided() -> list[str]:
    """Tables of the current schema this module says nothing about (a new table must be
    given its grants here: the test suite checks this is empty)."""
    decided = {*OWN_ROWS, *WRITER_TABLES, *READ_ONLY, "participant", "change"}
    return [t for t in _tables() if t not in decided]


def _sequences() -> dict[str, str]:
    """Each table's sequence (an auto-incremented key) → the table."""
    out = {}
    for model in _models():
        key = model._meta.primary_key
        if isinstance(key, pw.AutoField):
            out[f"{model._meta.table_name}_{key.column_name}_seq"] = model._meta.table_name
    return out


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _policy(table: str, name: str, command: str, role: str, using: str | None,
            check: str | None) -> list[str]:
    sql = f"CREATE POLICY {name} ON {_q(table)} FOR {command} TO {role}"
    if using is not None:
        sql += f" USING ({using})"
    if check is not None:
        sql += f" WITH CHECK ({check})"
    return [f"DROP POLICY IF EXISTS {name} ON {_q(table)}", sql]


def grants() -> list[str]:
    """The statements that give the group roles exactly what they need on the current
    schema's tables (and take away anything else they had): run by the owner, again after
    every migration. The group roles must exist."""
    tables = _tables()
    everyone = f"{TEAM}, {WRITER}"
    out = [
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
        f"GRANT USAGE ON SCHEMA public TO {TEAM}",
        "DO $$ BEGIN EXECUTE format('GRANT CONNECT ON DATABASE %I TO " + TEAM
        + "', current_database()); END $$",
        *(f"REVOKE ALL ON {_q(t)} FROM {everyone}" for t in tables),
        *(f"GRANT SELECT ON {_q(t)} TO {TEAM}" for t in tables),
    ]
    sequences = _sequences()
    out += [f"REVOKE ALL ON SEQUENCE {_q(s)} FROM {everyone}" for s in sequences]
    for seq, table in sequences.items():
        role = TEAM if table in (*OWN_ROWS, "change") else WRITER
        out.append(f"GRANT USAGE ON SEQUENCE {_q(seq)} TO {role}")
    for table, (column, what) in OWN_ROWS.items():
        out.append(f"GRANT {what} ON {_q(table)} TO {TEAM}")
        out.append(f"ALTER TABLE {_q(table)} ENABLE ROW LEVEL SECURITY")
        out += _policy(table, "loom_read", "SELECT", TEAM, "true", None)
        out += _policy(table, "loom_own", "ALL", TEAM, f"{column} IN {_ME}",
                       f"{column} IN {_ME}")
        out += _policy(table, "loom_models", "ALL", WRITER, f"{column} IN {_ME_OR_MODEL}",
                       f"{column} IN {_ME_OR_MODEL}")
    for table, what in WRITER_TABLES.items():
        out.append(f"GRANT {what} ON {_q(table)} TO {WRITER}")
    out.append(f"GRANT UPDATE ({', '.join(NODE_COLUMNS)}) ON node TO {WRITER}")
    out.append(f"GRANT UPDATE ({', '.join(TREE_COLUMNS)}) ON tree TO {WRITER}")
    out.append(f"GRANT UPDATE (sibling_order) ON edge TO {WRITER}")
    out.append(f"GRANT UPDATE ({', '.join(JOB_COLUMNS)}) ON summary_job TO {WRITER}")
    # participants: everyone sees everyone; a person may add their own row with no
    # permissions (a first connection) and say which tree they are in; a writer may add
    # others with none (the authors of an imported tree); only the owner grants
    out += [f"GRANT INSERT ON participant TO {TEAM}",
            f"GRANT UPDATE (current_tree) ON participant TO {TEAM}",
            "ALTER TABLE participant ENABLE ROW LEVEL SECURITY"]
    out += _policy("participant", "loom_read", "SELECT", TEAM, "true", None)
    out += _policy("participant", "loom_self", "INSERT", TEAM, None,
                   "name = current_user AND kind = 'human' AND permissions = '[]'")
    out += _policy("participant", "loom_others", "INSERT", WRITER, None, "permissions = '[]'")
    out += _policy("participant", "loom_where", "UPDATE", TEAM, "name = current_user",
                   "name = current_user")
    # the change log: appended to, never changed, each row checked against what its own
    # transaction wrote (role_guards). A reader's processes log only their own moves, model
    # choices and memory (pins, stashes) and their own arrival; a writer's, what its writes
    # did, as herself or a model
    out.append(f"GRANT INSERT ON change TO {TEAM}")
    out.append("ALTER TABLE change ENABLE ROW LEVEL SECURITY")
    out += _policy("change", "loom_read", "SELECT", TEAM, "true", None)
    out += _policy("change", "loom_own", "INSERT", TEAM, None,
                   "((kind IN ('position', 'model.choice') OR starts_with(kind, 'memory.')) "
                   f"AND actor IN {_ME}) OR (kind = 'participant.create' AND entity IN {_ME})")
    out += _policy("change", "loom_writes", "INSERT", WRITER, None,
                   f"actor IS NULL OR actor IN {_ME_OR_MODEL}")
    out += role_guards.statements(TEAM, WRITER)
    out += role_shared.statements()
    out += _lock_policies()  # (after the functions they call)
    out.append(f"INSERT INTO meta (key, value) VALUES ('{MARKER}', '{VERSION}') "
               "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    return out


def _lock_policies() -> list[str]:
    """Turn locks: everyone reads them; a writer takes, renews and releases her own (or a
    model's) for a turn's length, and takes over or frees another's only once it is free
    (``role_shared.LOCK_FREE``: expired, or its holder's editor has gone silent)."""
    mine, free = f"participant IN {_ME_OR_MODEL}", role_shared.LOCK_FREE
    taken = f"{mine} AND {role_shared.LOCK_TAKEN}"
    return ["ALTER TABLE branch_lock ENABLE ROW LEVEL SECURITY",
            *_policy("branch_lock", "loom_read", "SELECT", TEAM, "true", None),
            *_policy("branch_lock", "loom_take", "INSERT", WRITER, None, taken),
            *_policy("branch_lock", "loom_renew", "UPDATE", WRITER, f"{mine} OR {free}",
                     taken),
            *_policy("branch_lock", "loom_free", "DELETE", WRITER, f"{mine} OR {free}",
                     None)]


def _ident(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,62}", name):
        from loom.errors import LoomError

        raise LoomError("INVALID_SYNTAX", f"{name!r} cannot be a database role's name here",
                        "use letters, digits, _, . and - (starting with a letter)")
    return _q(name)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def people(readers: Sequence[str] = (), writers: Sequence[str] = ()) -> list[str]:
    """The group roles, and a login role per person (created without a password: set one
    with ``\\password NAME`` in psql), each in the group its Loom preset matches. Needs a
    role that may create roles (the superuser, or an owner made with ``--createrole``)."""
    out: list[str] = []

    def create(name: str, how: str) -> None:
        out.append(f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                   f"{_literal(name)}) THEN CREATE ROLE {_ident(name)} {how}; END IF; END $$")

    create(TEAM, "NOLOGIN")
    create(WRITER, "NOLOGIN")
    out.append(f"GRANT {TEAM} TO {WRITER}")
    for name in readers:
        create(name, "LOGIN")
        out.append(f"GRANT {TEAM} TO {_ident(name)}")
        out.append(f"REVOKE {WRITER} FROM {_ident(name)}")
    for name in writers:
        create(name, "LOGIN")
        out.append(f"GRANT {WRITER} TO {_ident(name)}")
    return out


def _schema_check(version: int) -> str:
    # (the version is read by EXECUTE: a plain SELECT is planned, and fails, before meta exists)
    return ("DO $$ DECLARE v text; BEGIN IF to_regclass('meta') IS NOT NULL THEN EXECUTE "
            "$q$SELECT value FROM meta WHERE key = 'schema_version'$q$ INTO v; END IF; "
            f"IF v IS DISTINCT FROM '{version}' THEN RAISE EXCEPTION 'this database does not "
            f"hold Loom''s schema v{version} yet' USING HINT = 'connect with Loom once as the "
            "database owner first (loom migrate), then run this again'; END IF; END $$")


def script(version: int, readers: Sequence[str] = (), writers: Sequence[str] = ()) -> str:
    """The whole set-up as one transaction for ``psql``: the roles, then the grants."""
    both = set(readers) & set(writers)
    if both:
        from loom.errors import LoomError

        raise LoomError("INVALID_SYNTAX", f"{sorted(both)[0]} is named as a reader and a "
                        "writer", "name each person once")
    lines = ["-- Loom's database roles (loom users roles --sql): run as the superuser or",
             "-- an owner made with --createrole, after Loom first connected as the owner",
             "\\set ON_ERROR_STOP on", "BEGIN;", "SET LOCAL client_min_messages = error;",
             _schema_check(version) + ";",
             *(s + ";" for s in people(readers, writers)),
             *(s + ";" for s in grants()), "COMMIT;"]
    return "\n".join(lines) + "\n"


def enabled(db: pw.Database) -> bool:
    """Whether this workspace's roles were set up (the role SQL left its mark), so a
    migration must give the new schema's tables their grants."""
    if not db.table_exists("meta"):
        return False
    return db.execute_sql("SELECT 1 FROM meta WHERE key = ?", (MARKER,)).fetchone() is not None


def outdated(db: pw.Database) -> bool:
    """Whether this workspace's roles were set up by an older Loom, whose grants and guards
    are not this one's (the marker holds their :data:`VERSION`)."""
    if not db.table_exists("meta"):
        return False
    row = db.execute_sql("SELECT value FROM meta WHERE key = ?", (MARKER,)).fetchone()
    return row is not None and row[0] != str(VERSION)


def upgrade(db: pw.Database, lock: int) -> bool:
    """The owner's Loom on a workspace whose roles an older Loom set up: the grants and
    guards re-applied (under the migration's advisory ``lock``), so a team gets the new
    guards by upgrading, with no SQL to run. Anyone else's Loom leaves them (only the
    owner may); True when they were applied."""
    if not outdated(db) or not db.execute_sql(_IS_OWNER).fetchone()[0]:
        return False
    with db.atomic():
        db.execute_sql("SELECT pg_advisory_xact_lock(?)", (lock,))
        if outdated(db):  # (another of the owner's processes may have done it meanwhile)
            apply_grants(db)
    return True


def apply_grants(db: pw.Database, statements: Iterable[str] | None = None) -> None:
    """Run :func:`grants` (inside the caller's transaction: the migration's). The
    statements hold no ``?`` (``jsonb_exists``, not the ``?`` operator): the backend reads
    every ``?`` as a placeholder."""
    for statement in statements or grants():
        db.execute_sql(statement)


def may_write_as(db: pw.Database, participant_id: str) -> bool:
    """Whether the database lets this connection write rows in ``participant_id``'s name:
    with a team's guards, its own participant or a model without a login role of its own
    (``role_guards.MAY_ACT_AS``; the owner, anyone's); without them (SQLite, a shared role),
    anyone's."""
    from loom.store.backend import is_postgres

    if not is_postgres(db) or db.execute_sql(
            "SELECT to_regprocedure('loom_acts_as(text)') IS NULL").fetchone()[0]:
        return True
    return bool(db.execute_sql("SELECT loom_is_owner() OR loom_acts_as(?)",
                               (participant_id,)).fetchone()[0])
