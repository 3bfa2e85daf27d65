"""A team's PostgreSQL roles: the grants, row-level security and guards that make the
database itself refuse what a person's Loom permissions do not allow (docs/team.md,
"Letting the database enforce it too").

Loom checks permissions in its executor, but anyone who can connect can also type SQL.
With a role per person, the database is the last line: readers read; writers add to the
trees but never rewrite a node's text; everyone writes only their own rows of the tables
that mix people's rows (where they are, what they have typed, their sessions, traces, pins
and stashes, and the change log); only the owner changes who may do what.

The SQL is generated here from the current schema, so a table a later schema adds is
covered: ``loom users roles --sql`` prints it for the owner to pipe to ``psql`` after the
schema exists, and every later migration re-applies the table part (:func:`grants`) in its
own transaction once :func:`enabled` says the workspace uses roles. Every statement is
idempotent. The owner (the role owning the tables) bypasses row-level security, as
PostgreSQL has table owners do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from loom.store import schema
from loom.store.orm import pw

#: every person's group role: reads everything, writes only what reading needs
TEAM = "loom_team"
#: the writers' group role (a member of TEAM): also adds to the trees
WRITER = "loom_writer"
#: the ``meta`` key the role SQL sets, so migrations know to re-apply the grants
MARKER = "team_roles"

_ME = "(SELECT p.id FROM participant p WHERE p.name = current_user)"
_ME_OR_MODEL = ("(SELECT p.id FROM participant p WHERE p.name = current_user "
                "OR p.kind = 'model')")

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

#: What writers may do to the trees' shared tables. Nothing is ever deleted but what Loom
#: itself removes (released turn locks, done summary jobs, replaced token data): a
#: deletion in Loom is a mark on the node, undone within 30 days; after that the owner's
#: process purges it (store/purge.py), as only the owner deletes rows of the trees.
WRITER_TABLES: dict[str, str] = {
    "tree": "INSERT, UPDATE",
    "node": "INSERT",  # and UPDATE of NODE_COLUMNS only
    "edge": "INSERT, UPDATE",  # sibling order changes when a node is split
    "edge_source": "INSERT",
    "link": "INSERT",
    "document": "INSERT, UPDATE",
    "generation": "INSERT",
    "raw_response": "INSERT",
    "node_tokens": "INSERT, UPDATE, DELETE",
    "media": "INSERT",
    "agent_turn": "INSERT, UPDATE",
    "branch_lock": "INSERT, UPDATE, DELETE",  # turn locks: taking an expired one is an update
    "summary_job": "INSERT, UPDATE, DELETE",  # the queue: enqueued by writes, taken by workers
}

#: The node columns Loom changes after a node is made: marks (bookmark, prune, exclude,
#: tags and the rest in ``extra``), its depth (a split moves the nodes below), its summary,
#: and — only for the halves of a split, through :data:`_NODE_GUARD` — where the cut is.
NODE_COLUMNS = ("bookmarked", "pruned", "excluded", "extra", "depth", "summary",
                "summary_source", "content", "content_hash")

#: Tables every person only reads (participant and change have policies of their own).
READ_ONLY = ("meta",)

_OWNER = ("(current_user = pg_get_userbyid((SELECT d.datdba FROM pg_database d "
          "WHERE d.datname = current_database())) OR (SELECT r.rolsuper FROM pg_roles r "
          "WHERE r.rolname = current_user))")

# A node's text never changes (it is what was written or generated), with one exception:
# the two halves of a split may move their cut (a suggestion taken a word at a
# time), and then each half's text stays a prefix (head) or a suffix (tail) of the
# original's. Anything else is refused with SQLSTATE 42501, which Loom shows as
# ✗ PERMISSION_DENIED.
_NODE_GUARD = f"""CREATE OR REPLACE FUNCTION loom_node_text_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  mark jsonb := CASE WHEN OLD.extra IS NULL THEN NULL ELSE OLD.extra::jsonb END;
  original text;
BEGIN
  IF {_OWNER} THEN
    RETURN NEW;
  END IF;
  IF jsonb_exists(mark, 'split_from') THEN
    SELECT n.content INTO original FROM node n WHERE n.id = mark->>'split_from';
    IF original IS NOT NULL AND length(NEW.content) < length(original) AND (
        (mark->>'part' = 'head' AND left(original, length(NEW.content)) = NEW.content)
        OR (mark->>'part' = 'tail' AND right(original, length(NEW.content)) = NEW.content))
    THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'a node''s text never changes (node %)', OLD.id
    USING ERRCODE = '42501';
END $$"""


# A deletion's time is what the purge goes by (store/purge.py: 30 days after it, the subtree
# or tree goes for good, and only the owner's process purges). A writer's role may mark and
# unmark nodes and trees, so the time it writes is the server's own: nobody but the owner
# can date a deletion back into the purge.
_DELETED_AT_GUARD = f"""CREATE OR REPLACE FUNCTION loom_deleted_at_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  mark jsonb;
  was jsonb;
BEGIN
  IF {_OWNER} THEN
    RETURN NEW;
  END IF;
  IF TG_TABLE_NAME = 'tree' THEN
    IF NEW.archived THEN
      NEW.updated := extract(epoch FROM clock_timestamp());
    END IF;
    RETURN NEW;
  END IF;
  mark := CASE WHEN NEW.extra IS NULL THEN NULL ELSE NEW.extra::jsonb -> 'deleted' END;
  IF TG_OP = 'UPDATE' AND OLD.extra IS NOT NULL THEN
    was := OLD.extra::jsonb -> 'deleted';
  END IF;
  IF jsonb_typeof(mark) = 'object' AND mark IS DISTINCT FROM was THEN
    NEW.extra := jsonb_set(NEW.extra::jsonb, '{{deleted,at}}',
                           to_jsonb(extract(epoch FROM clock_timestamp())))::text;
  END IF;
  RETURN NEW;
END $$"""


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
    out += [_NODE_GUARD, "DROP TRIGGER IF EXISTS loom_node_text ON node",
            "CREATE TRIGGER loom_node_text BEFORE UPDATE ON node FOR EACH ROW WHEN "
            "(OLD.content IS DISTINCT FROM NEW.content OR OLD.content_hash IS DISTINCT FROM "
            "NEW.content_hash) EXECUTE FUNCTION loom_node_text_guard()"]
    out.append(_DELETED_AT_GUARD)
    for table in ("node", "tree"):
        out += [f"DROP TRIGGER IF EXISTS loom_deleted_at ON {table}",
                f"CREATE TRIGGER loom_deleted_at BEFORE INSERT OR UPDATE ON {table} FOR EACH "
                "ROW EXECUTE FUNCTION loom_deleted_at_guard()"]
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
    # the change log: appended to, never changed. A reader's processes log only their own
    # moves and memory (pins, stashes) and their own arrival; a writer's, what its writes did
    out.append(f"GRANT INSERT ON change TO {TEAM}")
    out.append("ALTER TABLE change ENABLE ROW LEVEL SECURITY")
    out += _policy("change", "loom_read", "SELECT", TEAM, "true", None)
    out += _policy("change", "loom_own", "INSERT", TEAM, None,
                   f"((kind = 'position' OR starts_with(kind, 'memory.')) AND actor IN {_ME})"
                   " OR "
                   f"(kind = 'participant.create' AND entity IN {_ME})")
    out += _policy("change", "loom_writes", "INSERT", WRITER, None, "true")
    out.append(f"INSERT INTO meta (key, value) VALUES ('{MARKER}', '1') "
               "ON CONFLICT (key) DO NOTHING")
    return out


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


def apply_grants(db: pw.Database, statements: Iterable[str] | None = None) -> None:
    """Run :func:`grants` (inside the caller's transaction: the migration's). The
    statements hold no ``?`` (``jsonb_exists``, not the ``?`` operator): the backend reads
    every ``?`` as a placeholder."""
    for statement in statements or grants():
        db.execute_sql(statement)
