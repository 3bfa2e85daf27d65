"""The triggers that keep a team's provenance true (``store/roles.py`` installs them with
the grants; docs/team.md, "Letting the database enforce it too").

The grants say which tables and columns a role may write; these say what the rows it
writes may claim. Nothing a role may set unlocks any of them:

- **A node's provenance is fixed at insert and checked there.** A writer's node is
  written by her or by a model participant (the collaborators her editor runs: a model
  with no login role of its own), now (the database's clock, give or take
  :data:`CLOCK_SKEW_S`). The halves of a split carry the original's author, kind and time
  and a prefix and a suffix of its text: that is checked against the original. A tree the
  same transaction made (an import, ``loom new``) takes nodes as its file has them.
- **A node's text never changes**, but for the halves of a split moving their cut, which
  stay a prefix and a suffix of the original, keep their hash chain, and still join to
  the original's text when the transaction commits. What marks a node as a split's half
  (``extra``'s ``split_from`` and ``part``) never changes after the insert.
- **A tree's root never changes** once set.
- **A deletion is dated by the database's clock**: the ``deleted`` mark a writer puts on a
  node (what the purge counts its 30 days from) carries the database's time and her own
  participant or a model's, and a marked node stays hidden; an archived tree's time is
  the database's too. Nothing a writer sets dates a deletion back into the purge.
- **A change-log row describes a write of its own transaction**, by the role's own
  participant or a model: a node, tree, position, link, document, turn or participant
  row that this transaction wrote (a node it logs as added: one it inserted), of a kind
  Loom logs (:data:`CHANGE_KINDS`), at the database's time.

Which nodes a transaction inserted, or whose text it moved (a split's cut), is recorded by
a ``SECURITY DEFINER`` trigger in ``loom_text_written``, which no role writes: a row's
``xmin`` says only that it was written now, and a writer may update any node's marks.
The guards of the rows that hang on a node's text (``role_shared``) read it.

The owner (the role owning the database) and superusers pass every check, as PostgreSQL's
row-level security lets table owners through. Every function fixes its ``search_path``:
a temporary table of the caller's cannot stand in for Loom's. Guards refuse with SQLSTATE
42501, which Loom shows as ``✗ PERMISSION_DENIED`` with the guard's reason."""

from __future__ import annotations

#: How far the time a writer's process stamps on a node or a change may be from the
#: database server's clock (machines keep time with NTP; a clock this far off is refused).
CLOCK_SKEW_S = 600

#: Every change-log kind Loom writes (``Workspace.log_change``), and what its row must
#: point at that the same transaction wrote. ``actor`` kinds need only a permitted actor:
#: they log a deletion (nothing left to look at) or a request (``explore.stop``).
CHANGE_KINDS: dict[str, str] = {
    **{f"node.{k}": "added" for k in ("continuation", "annotation", "version")},
    **{f"node.{k}": "node" for k in ("marks", "flags", "delete", "restore", "summary")},
    "node.split": "split",  # the entity is the original; the head's text (payload) was written
    "node.bulk": "tree",
    **{f"tree.{k}": "tree" for k in ("create", "update", "delete", "summary")},
    "position": "position",
    "model.choice": "actor",
    "link.create": "link",
    **{f"document.{k}": "document" for k in ("create", "update", "summary")},
    "agent.turn": "agent_turn",
    **{f"participant.{k}": "participant" for k in ("create", "update", "permissions")},
    "lock.release": "released",
    "node.tokens": "actor",  # a scoring (→ score): token data only, checked by its grants
    "explore.start": "session",
    "explore.end": "actor",
    "explore.stop": "actor",
    **{f"memory.{k}": "actor" for k in ("pin", "unpin", "stash", "recall", "drop")},
    # the owner's alone (a purge deletes, which nobody else may)
    "node.purge": "owner",
    "tree.purge": "owner",
}

PATH = "SET search_path = public, pg_temp"
SKEWED = ("{what} now: its time is % s off the database''s clock (check this machine''s "
          "clock)")
#: how a guard refuses: the SQLSTATE Loom shows as PERMISSION_DENIED, and a constraint
#: name that tells its reason from a missing grant's (``backend.storage_error``)
CONSTRAINT = "loom_provenance"
REFUSE = f"USING ERRCODE = '42501', CONSTRAINT = '{CONSTRAINT}'"

_IS_OWNER = f"""CREATE OR REPLACE FUNCTION loom_is_owner() RETURNS boolean
LANGUAGE sql STABLE {PATH} AS $$
  SELECT current_user = pg_get_userbyid(d.datdba)
      OR coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false)
  FROM pg_database d WHERE d.datname = current_database()
$$"""

# A model participant with a login role of its own is a person to the database: nobody
# else writes as it (else a writer could register a teammate-to-be as a "model" first).
MAY_ACT_AS = ("p.name = current_user OR (p.kind = 'model' AND NOT EXISTS "
              "(SELECT 1 FROM pg_roles r WHERE r.rolname = p.name))")

_ACTS_AS = f"""CREATE OR REPLACE FUNCTION loom_acts_as(who text) RETURNS boolean
LANGUAGE sql STABLE {PATH} AS $$
  SELECT EXISTS (SELECT 1 FROM participant p WHERE p.id = who AND ({MAY_ACT_AS}))
$$"""

# Whether a row version (its xmin) was written by this transaction or one of its
# savepoints: a visible row whose writer is still in progress can only be ours.
_WRITTEN_NOW = f"""CREATE OR REPLACE FUNCTION loom_written_now(x xid) RETURNS boolean
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  top bigint := pg_current_xact_id()::text::bigint;
  low bigint := top % 4294967296;
  mine bigint := x::text::bigint;
BEGIN
  IF mine < low THEN
    RETURN false;
  END IF;
  RETURN pg_xact_status((top - low + mine)::text::xid8) = 'in progress';
END $$"""

_CLOCK = f"""CREATE OR REPLACE FUNCTION loom_near_now(t double precision) RETURNS boolean
LANGUAGE sql STABLE {PATH} AS $$
  SELECT t IS NOT NULL AND abs(t - extract(epoch FROM now())) <= {CLOCK_SKEW_S}
$$"""

# the trees each transaction made: read by the node guard, written only by the trigger
_ORIGIN_TABLE = ('CREATE TABLE IF NOT EXISTS loom_tree_origin (tree text COLLATE "C" '
                 "PRIMARY KEY REFERENCES tree (id) ON DELETE CASCADE, xact xid8 NOT NULL, "
                 "made_by name NOT NULL)")

_TREE_MADE = f"""CREATE OR REPLACE FUNCTION loom_tree_made() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {PATH} AS $$
BEGIN
  INSERT INTO loom_tree_origin (tree, xact, made_by)
  VALUES (NEW.id, pg_current_xact_id(), session_user)
  ON CONFLICT (tree) DO UPDATE SET xact = excluded.xact, made_by = excluded.made_by;
  RETURN NULL;
END $$"""

_MADE_NOW = ("EXISTS (SELECT 1 FROM loom_tree_origin g WHERE g.tree = NEW.tree_id "
             "AND g.xact = pg_current_xact_id())")

# The nodes whose text each transaction wrote: inserted, or (``inserted`` false) a split's
# cut moved. Written only by the two triggers below, as the owner; read by the guards of
# what hangs on a node's text. Unlogged: only the rows of running transactions matter, and
# a crash ends those.
_TEXT_TABLE = ('CREATE UNLOGGED TABLE IF NOT EXISTS loom_text_written (node text COLLATE "C" '
               "PRIMARY KEY, xact xid8 NOT NULL, inserted boolean NOT NULL)")

_NODES_MADE = f"""CREATE OR REPLACE FUNCTION loom_nodes_made() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {PATH} AS $$
BEGIN
  INSERT INTO loom_text_written (node, xact, inserted)
  SELECT m.id, pg_current_xact_id(), true FROM made m
  ON CONFLICT (node) DO UPDATE SET xact = excluded.xact, inserted = true;
  RETURN NULL;
END $$"""

_TEXT_MOVED = f"""CREATE OR REPLACE FUNCTION loom_text_moved() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER {PATH} AS $$
BEGIN
  INSERT INTO loom_text_written (node, xact, inserted)
  VALUES (NEW.id, pg_current_xact_id(), false)
  ON CONFLICT (node) DO UPDATE SET xact = excluded.xact,
    inserted = loom_text_written.inserted AND loom_text_written.xact = excluded.xact;
  RETURN NULL;
END $$"""


def inserted_now(node: str) -> str:
    """SQL: whether this transaction inserted the node whose id is ``node`` (an expression;
    inline, not a function: a guard asks it for every edge, source and token row)."""
    return (f"EXISTS (SELECT 1 FROM loom_text_written w WHERE w.node = {node} "
            "AND w.xact = pg_current_xact_id() AND w.inserted)")


def text_written_now(node: str) -> str:
    """SQL: whether this transaction wrote the text of ``node`` (inserted it, or moved a
    split's cut through it)."""
    return (f"EXISTS (SELECT 1 FROM loom_text_written w WHERE w.node = {node} "
            "AND w.xact = pg_current_xact_id())")


# A deletion mark (``extra``'s ``deleted``: what the purge counts 30 days from) as a writer
# sets it: on a hidden node, by her or a model, now; it is given the database's own time.
# ``checked`` false (a tree made in this transaction: an import) only dates it now.
_DELETION = f"""CREATE OR REPLACE FUNCTION loom_deletion_mark(x jsonb, hidden boolean,
  checked boolean) RETURNS jsonb
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  mark jsonb := x->'deleted';
BEGIN
  IF jsonb_typeof(mark) IS DISTINCT FROM 'object' THEN
    IF checked THEN
      RAISE EXCEPTION 'a deletion mark says when and by whom' {REFUSE};
    END IF;
    RETURN x;
  END IF;
  IF checked THEN
    IF hidden IS NOT TRUE THEN
      RAISE EXCEPTION 'a deleted node stays hidden (pruned) until it is undeleted' {REFUSE};
    END IF;
    IF jsonb_typeof(mark->'at') IS DISTINCT FROM 'number' THEN
      RAISE EXCEPTION 'a deletion''s time is a number of seconds' {REFUSE};
    END IF;
    IF NOT loom_near_now((mark->>'at')::double precision) THEN
      RAISE EXCEPTION '{SKEWED.format(what="a node is deleted")}',
        round(((mark->>'at')::double precision - extract(epoch FROM now()))::numeric)
        {REFUSE};
    END IF;
    IF NOT loom_acts_as(mark->>'by') THEN
      RAISE EXCEPTION 'a deletion you mark is yours or a model''s' {REFUSE};
    END IF;
  END IF;
  RETURN jsonb_set(x, '{{deleted,at}}', to_jsonb(extract(epoch FROM now())::double precision));
END $$"""

_NODE_DELETED = f"""CREATE OR REPLACE FUNCTION loom_node_deleted_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  was jsonb := CASE WHEN OLD.extra IS NULL THEN NULL ELSE OLD.extra::jsonb END;
  x jsonb := CASE WHEN NEW.extra IS NULL THEN NULL ELSE NEW.extra::jsonb END;
BEGIN
  IF loom_is_owner() OR NOT coalesce(jsonb_exists(x, 'deleted'), false) OR (OLD.pruned = NEW.pruned
      AND (was->'deleted') IS NOT DISTINCT FROM (x->'deleted')) THEN
    RETURN NEW;  -- no mark, or one left as it was (the node's other marks changed)
  END IF;
  NEW.extra := loom_deletion_mark(x, NEW.pruned, true)::text;
  RETURN NEW;
END $$"""

# An archived tree's time (``updated``) is when it was deleted, for the purge.
_TREE_DELETED = f"""CREATE OR REPLACE FUNCTION loom_tree_deleted_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' AND NOT loom_near_now(NEW.updated) THEN
    RAISE EXCEPTION '{SKEWED.format(what="a tree is deleted")}',
      round((NEW.updated - extract(epoch FROM now()))::numeric) {REFUSE};
  END IF;
  NEW.updated := extract(epoch FROM now());
  RETURN NEW;
END $$"""

# a half's text against the original's: a proper, non-empty prefix (head) or suffix
# (tail), with ``at`` where the cut is
_HALF = """length(txt) > 0 AND length(txt) < length(o.content) AND (x->>'at') ~ '^[0-9]+$' AND (
      (x->>'part' = 'head' AND left(o.content, length(txt)) = txt
       AND (x->>'at')::bigint = length(txt))
      OR (x->>'part' = 'tail' AND right(o.content, length(txt)) = txt
       AND (x->>'at')::bigint = length(o.content) - length(txt)))"""

_NODE_INSERT = f"""CREATE OR REPLACE FUNCTION loom_node_insert_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  x jsonb := CASE WHEN NEW.extra IS NULL THEN NULL ELSE NEW.extra::jsonb END;
  txt text := NEW.content;
  o node%ROWTYPE;
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF {_MADE_NOW} THEN
    IF jsonb_exists(x, 'deleted') THEN  -- (an import's deletions: dated now)
      NEW.extra := loom_deletion_mark(x, NEW.pruned, false)::text;
    END IF;
    RETURN NEW;
  END IF;
  IF jsonb_exists(x, 'deleted') THEN
    NEW.extra := loom_deletion_mark(x, NEW.pruned, true)::text;
  END IF;
  IF jsonb_exists(x, 'split_from') OR jsonb_exists(x, 'part') THEN
    SELECT * INTO o FROM node n WHERE n.id = x->>'split_from' AND n.tree_id = NEW.tree_id;
    IF o.id IS NULL OR NOT (NEW.author_id = o.author_id AND NEW.kind = o.kind
        AND NEW.created = o.created AND NEW.author_type IN (o.author_type,
          (SELECT p.kind FROM participant p WHERE p.id = o.author_id)) AND {_HALF}) THEN
      RAISE EXCEPTION 'a split''s halves hold the original''s text, author and time (node %)',
        NEW.id {REFUSE};
    END IF;
    RETURN NEW;
  END IF;
  IF NOT loom_acts_as(NEW.author_id) OR NEW.author_type IS DISTINCT FROM
      (SELECT p.kind FROM participant p WHERE p.id = NEW.author_id) THEN
    RAISE EXCEPTION 'a node you add is written by you or a model (node %)', NEW.id {REFUSE};
  END IF;
  IF NOT loom_near_now(NEW.created) THEN
    RAISE EXCEPTION '{SKEWED.format(what="a node is written")}',
      round((NEW.created - extract(epoch FROM now()))::numeric) {REFUSE};
  END IF;
  RETURN NEW;
END $$"""

_NODE_UPDATE = f"""CREATE OR REPLACE FUNCTION loom_node_text_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  was jsonb := CASE WHEN OLD.extra IS NULL THEN NULL ELSE OLD.extra::jsonb END;
  x jsonb := CASE WHEN NEW.extra IS NULL THEN NULL ELSE NEW.extra::jsonb END;
  txt text := NEW.content;
  o node%ROWTYPE;
  parent_hash text;
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF (was->'split_from') IS DISTINCT FROM (x->'split_from')
      OR (was->'part') IS DISTINCT FROM (x->'part') THEN
    RAISE EXCEPTION 'where a split''s half comes from never changes (node %)', OLD.id
      {REFUSE};
  END IF;
  IF OLD.content IS NOT DISTINCT FROM NEW.content
      AND OLD.content_hash IS NOT DISTINCT FROM NEW.content_hash THEN
    IF (was->'at') IS DISTINCT FROM (x->'at') THEN
      RAISE EXCEPTION 'a split''s cut moves only with its text (node %)', OLD.id {REFUSE};
    END IF;
    RETURN NEW;
  END IF;
  IF jsonb_exists(was, 'split_from') THEN
    SELECT * INTO o FROM node n WHERE n.id = was->>'split_from' AND n.tree_id = OLD.tree_id;
    SELECT n.content_hash INTO parent_hash FROM node n WHERE n.id = OLD.parent;
    IF o.id IS NOT NULL AND {_HALF} AND NEW.content_hash = encode(sha256(convert_to(
        coalesce(parent_hash, '') || E'\\n' || txt, 'UTF8')), 'hex') THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'a node''s text never changes (node %)', OLD.id {REFUSE};
END $$"""

# at commit: the halves whose cut moved still make the original's text together
_SPLIT_JOINS = f"""CREATE OR REPLACE FUNCTION loom_split_joins() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
DECLARE
  me node%ROWTYPE;
  other node%ROWTYPE;
  x jsonb;
  original text;
BEGIN
  IF loom_is_owner() THEN
    RETURN NULL;
  END IF;
  SELECT * INTO me FROM node n WHERE n.id = NEW.id;
  x := me.extra::jsonb;
  SELECT n.content INTO original FROM node n WHERE n.id = x->>'split_from'
    AND n.tree_id = me.tree_id;
  IF x->>'part' = 'head' THEN
    SELECT * INTO other FROM node n WHERE n.parent = me.id AND n.extra IS NOT NULL
      AND n.extra::jsonb->>'split_from' = x->>'split_from'
      AND n.extra::jsonb->>'part' = 'tail';
    IF original IS NOT NULL AND me.content || other.content = original THEN
      RETURN NULL;
    END IF;
  ELSE
    SELECT * INTO other FROM node n WHERE n.id = me.parent;
    IF original IS NOT NULL AND other.content || me.content = original THEN
      RETURN NULL;
    END IF;
  END IF;
  RAISE EXCEPTION 'a split''s halves join to the original''s text (node %)', NEW.id
    {REFUSE};
END $$"""

_TREE_UPDATE = f"""CREATE OR REPLACE FUNCTION loom_tree_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR (OLD.root IS NULL AND EXISTS (SELECT 1 FROM node n
      WHERE n.id = NEW.root AND n.tree_id = NEW.id AND n.parent IS NULL)) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a tree''s root never changes (tree %)', OLD.id {REFUSE};
END $$"""

_LINK_INSERT = f"""CREATE OR REPLACE FUNCTION loom_link_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() OR (loom_acts_as(NEW.author) OR {_MADE_NOW}) AND EXISTS (
      SELECT 1 FROM node n WHERE n.id = NEW.source AND n.tree_id = NEW.tree_id) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a link you add is yours or a model''s, from a node of its tree (link %)',
    NEW.id {REFUSE};
END $$"""


def _kind_checks() -> str:
    """The CASE arm per kind family: what the change row must point at."""
    written = {
        "added": "SELECT 1 FROM node t WHERE t.id = NEW.entity AND t.tree_id = NEW.tree "
                 f"AND {inserted_now('t.id')}",
        "node": "SELECT 1 FROM node t WHERE t.id = NEW.entity AND t.tree_id = NEW.tree "
                "AND loom_written_now(t.xmin)",
        "split": "SELECT 1 FROM node t WHERE t.id = (NEW.payload::jsonb->>'head') "
                 f"AND t.tree_id = NEW.tree AND {text_written_now('t.id')}",
        "tree": "SELECT 1 FROM tree t WHERE t.id = NEW.entity AND t.id = NEW.tree "
                "AND loom_written_now(t.xmin)",
        "position": "SELECT 1 FROM position t WHERE t.participant = NEW.actor "
                    "AND t.tree = NEW.tree AND loom_written_now(t.xmin)",
        "link": "SELECT 1 FROM link t WHERE t.id = NEW.entity AND t.tree_id = NEW.tree "
                "AND loom_written_now(t.xmin)",
        "document": "SELECT 1 FROM document t WHERE t.id = NEW.entity "
                    "AND loom_written_now(t.xmin)",
        "agent_turn": "SELECT 1 FROM agent_turn t WHERE t.id = NEW.entity "
                      "AND loom_written_now(t.xmin)",
        "participant": "SELECT 1 FROM participant t WHERE t.id = NEW.entity "
                       "AND loom_written_now(t.xmin)",
        "session": "SELECT 1 FROM editor_session t WHERE t.id = "
                   "(NEW.payload::jsonb->>'run') AND t.participant = NEW.actor",
    }
    arms = []
    for family in dict.fromkeys(CHANGE_KINDS.values()):
        kinds = ", ".join(f"'{k}'" for k, v in CHANGE_KINDS.items() if v == family)
        if family in written:
            test = f"EXISTS ({written[family]})"
        elif family == "released":  # by its holder, or (no actor) a dead holder's
            holder = "coalesce(NEW.actor, NEW.payload::jsonb->>'holder')"
            test = (f"{holder} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM branch_lock t "
                    f"WHERE t.node = NEW.entity AND t.participant = {holder})")
        elif family == "actor":
            test = "NEW.actor IS NOT NULL"
        else:  # the owner's alone
            test = "false"
        arms.append(f"WHEN NEW.kind IN ({kinds}) THEN {test}")
    return "\n      ".join(arms)


def _change_insert() -> str:
    return f"""CREATE OR REPLACE FUNCTION loom_change_guard() RETURNS trigger
LANGUAGE plpgsql {PATH} AS $$
BEGIN
  IF loom_is_owner() THEN
    RETURN NEW;
  END IF;
  IF NEW.actor IS NOT NULL AND NOT loom_acts_as(NEW.actor) THEN
    RAISE EXCEPTION 'a change you log is yours or a model''s (%)', NEW.kind {REFUSE};
  END IF;
  IF NOT loom_near_now(NEW.created) THEN
    RAISE EXCEPTION '{SKEWED.format(what="a change is logged")}',
      round((NEW.created - extract(epoch FROM now()))::numeric) {REFUSE};
  END IF;
  IF NOT (CASE
      {_kind_checks()}
      ELSE false END) THEN
    RAISE EXCEPTION 'a change-log row describes what its own transaction wrote (% %)',
      NEW.kind, NEW.entity {REFUSE};
  END IF;
  RETURN NEW;
END $$"""


_FUNCTIONS = ("loom_is_owner()", "loom_acts_as(text)", "loom_written_now(xid)",
              "loom_near_now(double precision)", "loom_tree_made()", "loom_nodes_made()",
              "loom_text_moved()",
              "loom_deletion_mark(jsonb, boolean, boolean)", "loom_node_deleted_guard()",
              "loom_tree_deleted_guard()",
              "loom_node_insert_guard()", "loom_node_text_guard()", "loom_split_joins()",
              "loom_tree_guard()", "loom_link_guard()", "loom_change_guard()")
#: the tables only these functions write
_TABLES = ("loom_tree_origin", "loom_text_written")


def owned_by_the_owner(functions: tuple[str, ...], tables: tuple[str, ...] = ()) -> str:
    """Whoever runs the SQL (the owner, or the superuser for them), the functions and the
    tables they keep belong to the database's owner: the owner's migrations replace them,
    and the ``SECURITY DEFINER`` functions run with no more than the owner's rights."""
    alters = " ".join([*(f"EXECUTE format('ALTER TABLE {t} OWNER TO %I', o);"
                         for t in tables),
                       *(f"EXECUTE format('ALTER FUNCTION {f} OWNER TO %I', o);"
                         for f in functions)])
    return ("DO $$ DECLARE o name := (SELECT pg_get_userbyid(d.datdba) FROM pg_database d "
            f"WHERE d.datname = current_database()); BEGIN {alters} END $$")


def trigger(name: str, table: str, when: str, function: str, condition: str = "",
            constraint: bool = False) -> list[str]:
    kind = "CONSTRAINT TRIGGER" if constraint else "TRIGGER"
    deferred = " DEFERRABLE INITIALLY DEFERRED" if constraint else ""
    cond = f" WHEN ({condition})" if condition else ""
    return [f'DROP TRIGGER IF EXISTS {name} ON "{table}"',
            f'CREATE {kind} {name} {when} ON "{table}"{deferred} FOR EACH ROW{cond} '
            f"EXECUTE FUNCTION {function}()"]


def statements(team: str, writer: str) -> list[str]:
    """The functions, the origin table and the triggers, for the group roles ``team``
    (everyone) and ``writer``; idempotent, run by the owner after the table grants."""
    text_moved = ("OLD.content IS DISTINCT FROM NEW.content OR OLD.content_hash IS "
                  "DISTINCT FROM NEW.content_hash")
    return [
        _IS_OWNER, _ACTS_AS, _WRITTEN_NOW, _CLOCK, _ORIGIN_TABLE, _TREE_MADE, _TEXT_TABLE,
        _NODES_MADE, _TEXT_MOVED, _DELETION, _NODE_DELETED,
        _TREE_DELETED, _NODE_INSERT, _NODE_UPDATE, _SPLIT_JOINS, _TREE_UPDATE, _LINK_INSERT,
        _change_insert(), owned_by_the_owner(_FUNCTIONS, _TABLES),
        *(f"REVOKE ALL ON {t} FROM {team}, {writer}" for t in _TABLES),
        *(f"GRANT SELECT ON {t} TO {team}" for t in _TABLES),
        *trigger("loom_tree_made", "tree", "AFTER INSERT", "loom_tree_made"),
        *trigger("loom_tree_deleted_made", "tree", "BEFORE INSERT", "loom_tree_deleted_guard",
                 "NEW.archived"),
        *trigger("loom_tree_deleted", "tree", "BEFORE UPDATE", "loom_tree_deleted_guard",
                 "NEW.archived AND (NOT OLD.archived OR OLD.updated IS DISTINCT FROM "
                 "NEW.updated)"),
        # (statement-level: one call per insert, however many nodes it holds)
        'DROP TRIGGER IF EXISTS loom_nodes_recorded ON "node"',
        'CREATE TRIGGER loom_nodes_recorded AFTER INSERT ON "node" REFERENCING NEW TABLE AS '
        "made FOR EACH STATEMENT WHEN (NOT loom_is_owner()) EXECUTE FUNCTION "
        "loom_nodes_made()",
        *trigger("loom_text_recorded", "node", "AFTER UPDATE", "loom_text_moved",
                 "OLD.content IS DISTINCT FROM NEW.content AND NOT loom_is_owner()"),
        *trigger("loom_node_deleted", "node", "BEFORE UPDATE", "loom_node_deleted_guard",
                 "OLD.extra IS DISTINCT FROM NEW.extra OR OLD.pruned IS DISTINCT FROM "
                 "NEW.pruned"),
        *trigger("loom_tree_root", "tree", "BEFORE UPDATE", "loom_tree_guard",
                  "OLD.root IS DISTINCT FROM NEW.root"),
        *trigger("loom_node_made", "node", "BEFORE INSERT", "loom_node_insert_guard"),
        *trigger("loom_node_text", "node", "BEFORE UPDATE", "loom_node_text_guard",
                  f"{text_moved} OR OLD.extra IS DISTINCT FROM NEW.extra"),
        *trigger("loom_split_joins", "node", "AFTER UPDATE", "loom_split_joins",
                  text_moved, constraint=True),
        *trigger("loom_link_made", "link", "BEFORE INSERT", "loom_link_guard"),
        *trigger("loom_change_made", "change", "BEFORE INSERT", "loom_change_guard"),
        # (marker 3's deletion-time guard, which dated a mark now without asking whose it
        # was: loom_node_deleted and loom_tree_deleted check and date it now)
        *(f'DROP TRIGGER IF EXISTS loom_deleted_at ON "{t}"' for t in ("node", "tree")),
        "DROP FUNCTION IF EXISTS loom_deleted_at_guard()",
    ]
