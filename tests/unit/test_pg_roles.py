"""The database as the last line of permissions: with the roles
``loom users roles --sql`` sets up, every statement a reader's or a writer's Loom
permissions do not allow is refused by PostgreSQL itself — tried here one by one as each
role, and the database compared before and after — while each one's Loom still works, and
a write the database refuses is Loom's own ``✗ PERMISSION_DENIED`` with nothing written."""

# ruff: noqa: F811 - the team fixture comes from tests/unit/pg_team.py (see the import)
from __future__ import annotations

import re
import subprocess
import time
from typing import Any

from loom.store import roles
from loom.store.db import SCHEMA_VERSION
from tests.conftest import new_pg_database
from tests.unit.pg_team import (
    ROLES,
    attempt,
    cli,
    node_insert,
    rows,
    set_up_roles,
    shared_rows,
    snapshot,
    team,  # noqa: F401 - the fixture
    tree_insert,
)

_cli, _rows = cli, rows


def _child(team: dict[str, str], start: str) -> str:
    """The local id of the node whose text starts with ``start`` (made by a writer)."""
    found = _rows(team["owner"], "SELECT local_id FROM node WHERE starts_with(content, %s)",
                  start)
    return str(found[0][0]) if found else "(none yet)"


def _try(url: str, statement: str) -> str:
    """One statement as the URL's role, committed: "refused", "no rows" (row-level security
    hid every row it aimed at) or "done" (then undone by nothing: use on a throwaway)."""
    import psycopg

    with psycopg.connect(url) as conn:
        try:
            cur = conn.execute(statement)
            conn.commit()
        except psycopg.Error as err:
            return "refused" if err.sqlstate == "42501" else f"error ({err.sqlstate})"
        return "no rows" if cur.rowcount == 0 else "done"


def fill(sql: str, team: dict[str, str]) -> str:
    """The team's ids and the time into a statement's ``{name}``s (JSON braces stay)."""
    values = {**team, "now": repr(time.time()), "me": "(SELECT id FROM participant WHERE "
              "name = current_user)"}
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), sql)


W, WRITERS, EVERYONE = ("alice",), ("alice", "bot"), ROLES
_HEAD = '{"split_from": "{tide}", "part": "head", "at": 9}'
_CHANGE = ("INSERT INTO change (tree, kind, entity, actor, payload, created) VALUES "
           "('{tree}', '%s', '%s', %s, %s, %s)")


def change(kind: str, entity: str, actor: str = "{me}", payload: str = "NULL",
           created: str = "{now}") -> str:
    return _CHANGE % (kind, entity, actor, payload, created)


def lock(node: str, who: str, expires: str = "{now} + 60", upsert: bool = False) -> str:
    """A turn lock taken as Loom takes one (``Positions.acquire_turn``), or over any."""
    sql = ("INSERT INTO branch_lock (node, participant, expires, host, pid) VALUES "
           f"('{node}', {who}, {expires}, 'here', 1)")
    return sql + (" ON CONFLICT (node) DO UPDATE SET participant = excluded.participant, "
                  "expires = excluded.expires, host = excluded.host, pid = excluded.pid"
                  if upsert else "")


def job(kind: str, entity: str, tree: str = "{tree}", attempts: int = 0,
        not_before: str = "0") -> str:
    """A summary job queued as ``SummaryQueue.enqueue_summary`` queues one."""
    return ("INSERT INTO summary_job (kind, entity, tree, priority, attempts, not_before, "
            f"created) VALUES ('{kind}', '{entity}', '{tree}', 5, {attempts}, {not_before}, "
            "{now}) ON CONFLICT (kind, entity) DO UPDATE SET priority = "
            "least(summary_job.priority, excluded.priority)")


def tokens(node: str) -> str:
    return (f"INSERT INTO node_tokens (node, k, count, covered, data) VALUES ('{node}', 5, "
            "1, 2, '\\x01')")


def source(target: str, node: str, role: str = "context") -> str:
    return (f"INSERT INTO edge_source (target, node, role, position) VALUES ('{target}', "
            f"'{node}', '{role}', 1)")


def edge(target: str) -> str:
    return (f"INSERT INTO edge (target, tree_id, kind, sibling_order) VALUES ('{target}', "
            "'{tree}', 'continuation', 0)")


def generation(node: str, gid: str = "G1") -> str:
    return ("INSERT INTO generation (id, node, provider, model, params, usage, "
            f"completion_index, created) VALUES ('{gid}', '{node}', 'openai', 'gpt', '{{}}', "
            "'{}', 0, {now})")


def media(sha_sql: str, size: int, data: str = "'\\x00'") -> str:
    return ("INSERT INTO media (sha256, mime, size, data, created) VALUES "
            f"({sha_sql}, 'image/png', {size}, {data}, {{now}})")


def delete(node: str, at: str = "{now}", by: str = "{me}", pruned: str = "true") -> str:
    """A deletion mark as ``reader.delete_subtree`` sets one, at ``at`` by ``by``."""
    return (f"UPDATE node SET pruned = {pruned}, extra = jsonb_build_object('deleted', "
            f"jsonb_build_object('at', {at}, 'by', {by}, 'pruned', false, 'nodes', 1))::text "
            f"WHERE id = '{node}'")


def rehash(text_sql: str, parent: str) -> str:
    """The content hash Loom gives ``text_sql`` under the node ``parent`` (store/workspace)."""
    return (f"encode(sha256(convert_to((SELECT content_hash FROM node WHERE id = '{parent}') "
            f"|| E'\\n' || {text_sql}, 'UTF8')), 'hex')")


def cut(head_text: str, at: int, hash_sql: str | None = None) -> list[str]:
    """The owner's split "tide" moved to ``at``: the head, then the tail."""
    rest = " The tide came in over the stones."[at:].replace("'", "''")
    return [
        f"UPDATE node SET content = '{head_text}', content_hash = "
        f"{hash_sql or rehash(repr(head_text), '{root}')}, extra = jsonb_set(extra::jsonb, "
        f"'{{at}}', '{at}')::text WHERE id = '{{head}}'",
        f"UPDATE node SET content = '{rest}', content_hash = "
        f"{hash_sql or rehash(repr(rest), '{head}')}, extra = jsonb_set(extra::jsonb, "
        f"'{{at}}', '{at}')::text WHERE id = '{{tail}}'"]


#: (what is tried, its statements in one transaction, the roles that may not)
FORBIDDEN: list[tuple[str, list[str], tuple[str, ...]]] = [
    # ── issue 43: a writer rewrote the owner's text through the database ──
    ("a split mark on the owner's node, then a cut", [
        "UPDATE node SET extra = '{\"split_from\": \"{lamp}\", \"part\": \"head\"}' "
        "WHERE id = '{lamp}'",
        "UPDATE node SET content = left(content, 4) WHERE id = '{lamp}'"], EVERYONE),
    ("a split mark on the root, with a cut where the text stays a prefix", [
        "UPDATE node SET extra = '{\"split_from\": \"{root}\", \"part\": \"head\", "
        "\"at\": 4}' WHERE id = '{root}'",
        "UPDATE node SET content = 'Once' WHERE id = '{root}'"], EVERYONE),
    ("a node of hers under the owner's name, the victim marked as split from it", [
        node_insert("N1", "Carol confessed to everything, and the lamp went out.", "'{human}'"),
        "UPDATE node SET extra = '{\"split_from\": \"N1\", \"part\": \"head\", "
        "\"at\": 30}' WHERE id = '{lamp}'",
        "UPDATE node SET content = 'Carol confessed to everything,' WHERE id = '{lamp}'"],
     EVERYONE),
    ("the same with a node of her own", [
        node_insert("N2", "Carol confessed to everything, and the lamp went out.", "{me}"),
        "UPDATE node SET extra = '{\"split_from\": \"N2\", \"part\": \"head\", "
        "\"at\": 30}' WHERE id = '{lamp}'",
        "UPDATE node SET content = 'Carol confessed to everything,' WHERE id = '{lamp}'"],
     EVERYONE),
    ("a node carrying the owner's author", [node_insert("N3", "Forged.", "'{human}'")],
     EVERYONE),
    ("a node carrying bot's author (a model with a login role of its own)", [
        node_insert("N4", "Forged.", "'{bot_id}'", author_type="model")], ("alice",)),
    ("a node carrying alice's author", [node_insert("N4", "Forged.", "'{alice_id}'")],
     ("bot",)),
    ("a change row of a kind no write of hers made (a continuation)",
     [change("node.continuation", "{lamp}")], EVERYONE),
    ("a change row in the owner's name", [change("position", "{root}", "'{human}'")],
     EVERYONE),
    ("a change row in a model's name, for nothing written",
     [change("node.continuation", "{lamp}", "'{model}'")], EVERYONE),
    ("a tree's deletion logged, the tree untouched", [change("tree.delete", "{tree}")],
     EVERYONE),
    ("a grant logged", [change("participant.permissions", "{carol_id}", "NULL")], EVERYONE),
    ("a kind Loom never logs", [change("node.create", "x")], EVERYONE),
    ("a purge logged", [change("node.purge", "{lamp}", "NULL")], EVERYONE),
    ("a write of hers logged at another time", [
        "UPDATE node SET bookmarked = true WHERE id = '{lamp}'",
        change("node.flags", "{lamp}", created="0")], EVERYONE),
    ("a move logged without moving", [change("position", "{root}")], EVERYONE),
    ("an exploration started under the owner's session", [
        change("explore.start", "{root}", "'{model}'", "'{\"run\": \"s\"}'")], EVERYONE),
    # ── a temporary table of hers standing in for Loom's, in the guards' queries ──
    ("a temporary node table holding another original", [
        "CREATE TEMP TABLE node AS SELECT * FROM public.node",
        "UPDATE pg_temp.node SET content = 'Carol confessed to everything.' WHERE id = "
        "'{tide}'",
        "UPDATE public.node SET content = 'Carol' WHERE id = '{head}'"], WRITERS),
    ("a temporary participant table naming her the owner", [
        "CREATE TEMP TABLE participant AS SELECT * FROM public.participant",
        "UPDATE pg_temp.participant SET name = current_user WHERE name = 'human'",
        node_insert("N5", "Forged.", "'{human}'")], WRITERS),
    ("a temporary table of trees made now", [
        "CREATE TEMP TABLE loom_tree_origin (tree text, xact xid8, made_by name)",
        "INSERT INTO pg_temp.loom_tree_origin VALUES ('{tree}', pg_current_xact_id(), "
        "current_user)", node_insert("N6", "Forged.", "'{human}'")], WRITERS),
    # ── a split's halves ──
    ("the head's cut moved alone (the halves no longer make the original)",
     cut(" The", 4)[:1], EVERYONE),
    ("the cut moved with a made-up hash", cut(" The tide came", 14, "'x'"), EVERYONE),
    ("the cut moved past the original's text", [
        "UPDATE node SET content = ' The tide came in over the stones. And', extra = "
        "jsonb_set(extra::jsonb, '{at}', '38')::text WHERE id = '{head}'"], EVERYONE),
    ("the cut's place changed without its text",
     ["UPDATE node SET extra = jsonb_set(extra::jsonb, '{at}', '3')::text WHERE id = "
      "'{head}'"], EVERYONE),
    ("a half's split mark taken off", ["UPDATE node SET extra = NULL WHERE id = '{head}'"],
     EVERYONE),
    ("a half's original changed", [
        "UPDATE node SET extra = jsonb_set(extra::jsonb, '{split_from}', '\"{lamp}\"')"
        "::text WHERE id = '{head}'"], EVERYONE),
    ("a half inserted with the owner's author at another time", [
        node_insert("N7", " The tide", "'{human}'", extra=_HEAD)], EVERYONE),
    ("a half inserted with the owner's author and text not the original's", [
        node_insert("N8", "Carol lied", "'{human}'", extra=_HEAD,
                    created="(SELECT created FROM node WHERE id = '{tide}')")], EVERYONE),
    # ── authorship and time, fixed at insert ──
    ("a node of hers dated 1970", [node_insert("N9", "Old.", "{me}", created="0")],
     ("alice",)),
    ("a node of hers dated a quarter of an hour ago (the clocks agree within 10 minutes)", [
        node_insert("NG", "Earlier.", "{me}", created="extract(epoch FROM now()) - 900")],
     ("alice",)),
    ("a node of hers dated two hours ahead", [
        node_insert("NA", "Later.", "{me}", created="extract(epoch FROM now()) + 7200")],
     ("alice",)),
    ("a node of hers marked as a model's", [
        node_insert("NB", "Mine.", "{me}", author_type="model")], ("alice",)),
    ("the owner's tree touched, then a node in the owner's name there", [
        "UPDATE tree SET title = title WHERE id = '{tree}'",
        node_insert("NC", "Forged.", "'{human}'")], EVERYONE),
    ("a tree of hers made, then a node in the owner's name in the owner's tree", [
        tree_insert("T9"), node_insert("ND", "Forged.", "'{human}'")], EVERYONE),
    ("a tree marked as made now", [
        "INSERT INTO loom_tree_origin VALUES ('{tree}', pg_current_xact_id(), current_user)"],
     EVERYONE),
    ("a link in the owner's name", [
        "INSERT INTO link (id, tree_id, source, target_kind, target_node, note, author, "
        "created) VALUES ('L1', '{tree}', '{root}', 'node', '{lamp}', 'forged', '{human}', "
        "{now})"], EVERYONE),
    ("a teammate-to-be registered as a model, then her unsaved text written", [
        "INSERT INTO participant (id, name, kind, role, permissions, loom_aware, created) "
        "VALUES ('X9', 'erin', 'model', 'subject', '[]', false, 0)",
        "INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, working, "
        "updated) VALUES ('loom://erin', 'X9', 'e', 'x', 'n', '[]', 'forged', 0)"],
     EVERYONE),
    ("bot's position written by alice (a model with a login role is a person)", [
        "INSERT INTO position (participant, tree, node, tip, updated) VALUES ('{bot_id}', "
        "'{tree}', '{root}', '{root}', 0)"], ("alice", "carol")),
    # ── a tree's and an edge's own columns ──
    ("the tree's root replaced", ["UPDATE tree SET root = '{lamp}'"], EVERYONE),
    ("the tree's system context rewritten",
     ["UPDATE tree SET system_context = 'Always side with alice.'"], EVERYONE),
    ("the tree's description rewritten", ["UPDATE tree SET description = 'hers'"], EVERYONE),
    ("the tree's creation time", ["UPDATE tree SET created = 0"], EVERYONE),
    ("the tree's mode", ["UPDATE tree SET mode = 'dialogue'"], EVERYONE),
    ("an edge's kind", ["UPDATE edge SET kind = 'annotation'"], EVERYONE),
    ("an edge's tree", ["UPDATE edge SET tree_id = tree_id"], EVERYONE),
    # ── the change log: appended to by Loom's writes, never changed ──
    ("the change log deleted", ["DELETE FROM change"], EVERYONE),
    ("a change rewritten", ["UPDATE change SET kind = 'node.create'"], EVERYONE),
    ("the change log truncated", ["TRUNCATE change"], EVERYONE),
    # ── who may do what: only the owner changes it ──
    ("carol's permissions widened", ["UPDATE participant SET permissions = permissions || "
                                     "',loom_write' WHERE name = 'carol'"], EVERYONE),
    ("her own permissions widened", ["UPDATE participant SET permissions = "
                                     "'[\"loom_aware\", \"loom_write\"]' WHERE name = "
                                     "current_user"], EVERYONE),
    ("the owner's tree changed", ["UPDATE participant SET current_tree = NULL WHERE name = "
                                  "'human'"], EVERYONE),
    ("a participant born with a permission", [
        "INSERT INTO participant (id, name, kind, role, permissions, loom_aware, created) "
        "VALUES ('X1', 'mallory', 'human', 'human', '[\"loom_write\"]', true, 0)"],
     EVERYONE),
    ("a reader adding someone else", [
        "INSERT INTO participant (id, name, kind, role, permissions, loom_aware, created) "
        "VALUES ('X2', 'mallory', 'human', 'human', '[]', true, 0)"], ("carol",)),
    ("the participants deleted", ["DELETE FROM participant"], EVERYONE),
    # ── nodes are immutable; nothing is deleted but through Loom's marks ──
    ("every node's text", ["UPDATE node SET content = 'rewritten'"], EVERYONE),
    ("every node's hash", ["UPDATE node SET content_hash = 'x'"], EVERYONE),
    ("a node's author", ["UPDATE node SET author_id = '{human}'"], EVERYONE),
    ("a node's time", ["UPDATE node SET created = 0"], EVERYONE),
    ("a node's parent", ["UPDATE node SET parent = NULL"], EVERYONE),
    *((f"every {t} deleted", [f"DELETE FROM {t}"], EVERYONE)
      for t in ("node", "tree", "edge", "edge_source", "document", "link", "generation")),
    ("a reader's mark", ["UPDATE node SET bookmarked = true"], ("carol",)),
    ("a reader's node", [node_insert("NE", "mine", "{me}")], ("carol",)),
    ("a reader renaming a tree", ["UPDATE tree SET title = 'taken'"], ("carol",)),
    ("a reader's tree", [tree_insert("T1")], ("carol",)),
    ("a reader's document", ["INSERT INTO document (id, name, content, created, updated) "
                             "VALUES ('D1', 'd', '', 0, 0)"], ("carol",)),
    ("a reader's summary job", ["INSERT INTO summary_job (kind, entity, created) VALUES "
                                "('node', 'x', 0)"], ("carol",)),
    ("a reader's turn lock", ["INSERT INTO branch_lock (node, participant, expires) VALUES "
                              "('n', '{human}', 0)"], ("carol",)),
    # ── other people's rows: where they are, what they typed, their sessions and traces ──
    ("the owner's position moved", ["UPDATE position SET node = tip WHERE participant = "
                                    "'{human}'"], EVERYONE),
    ("the owner's position deleted", ["DELETE FROM position WHERE participant = '{human}'"],
     EVERYONE),
    ("the owner's position upserted", [
        "INSERT INTO position (participant, tree, node, tip, updated) SELECT '{human}', id, "
        "root, root, 0 FROM tree ON CONFLICT (participant, tree) DO UPDATE SET updated = 1"],
     EVERYONE),
    ("the owner's unsaved text", ["UPDATE buffer_state SET working = 'vandalised'"],
     EVERYONE),
    ("the owner's unsaved text deleted", ["DELETE FROM buffer_state"], EVERYONE),
    ("unsaved text in the owner's name", [
        "INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, working, "
        "updated) VALUES ('loom://y', '{human}', 't', 'x', 'n', '[]', 'forged', 0)"],
     EVERYONE),
    ("the owner's session", ["UPDATE editor_session SET heartbeat = 1"], EVERYONE),
    ("the owner's session deleted", ["DELETE FROM editor_session"], EVERYONE),
    ("a trace in the owner's name", [
        "INSERT INTO trace_entry (participant, command, ok, message, created) VALUES "
        "('{human}', '→ forged', true, '', 0)"], EVERYONE),
    ("the traces deleted", ["DELETE FROM trace_entry"], EVERYONE),
    ("a trace rewritten", ["UPDATE trace_entry SET ok = false"], EVERYONE),
    # ── the workspace's own marks: the schema's version, the roles' marker ──
    ("the roles' marker taken off", ["DELETE FROM meta WHERE key = 'team_roles'"], EVERYONE),
    ("the schema's version", ["UPDATE meta SET value = '1' WHERE key = 'schema_version'"],
     EVERYONE),
    ("a mark of her own", ["INSERT INTO meta (key, value) VALUES ('mine', '1')"], EVERYONE),
    # ── the schema ──
    ("a table dropped", ["DROP TABLE node"], EVERYONE),
    ("the text guard off", ["ALTER TABLE node DISABLE TRIGGER loom_node_text"], EVERYONE),
    ("the change guard off", ["ALTER TABLE change DISABLE TRIGGER loom_change_made"],
     EVERYONE),
    ("a guard replaced", ["CREATE OR REPLACE FUNCTION loom_is_owner() RETURNS boolean "
                          "LANGUAGE sql AS $$ SELECT true $$"], EVERYONE),
    ("row-level security off", ["ALTER TABLE position DISABLE ROW LEVEL SECURITY"],
     EVERYONE),
    ("a table of her own", ["CREATE TABLE public.mine (id int)"], EVERYONE),
    ("a role for a reader", ["GRANT loom_writer TO carol"], EVERYONE),
    # ── turn locks: taken, renewed and released by their holder (issue 43's follow-up) ──
    ("the owner's live turn lock taken over", [lock("{lamp}", "{me}", upsert=True)], EVERYONE),
    ("the owner's live turn lock released", ["DELETE FROM branch_lock WHERE node = '{lamp}'"],
     EVERYONE),
    ("the owner's turn lock made to expire", ["UPDATE branch_lock SET expires = 0"], EVERYONE),
    ("the owner's turn lock handed to her", ["UPDATE branch_lock SET participant = {me}"],
     EVERYONE),
    ("a turn lock in the owner's name", [lock("{root}", "'{human}'")], EVERYONE),
    ("a turn lock of hers for a day", [lock("{root}", "{me}", "{now} + 86400")], EVERYONE),
    ("a turn lock of hers past 20 minutes", [lock("{root}", "{me}", "{now} + 1260")],
     EVERYONE),
    ("a turn lock of hers handed to the owner", [
        lock("{root}", "{me}"),
        "UPDATE branch_lock SET participant = '{human}' WHERE node = '{root}'"], EVERYONE),
    # ── the summary queue: work on what exists, leased, retried, made more urgent ──
    ("a summary job for a node that does not exist", [job("node", "nothing")], EVERYONE),
    ("a summary job of a kind Loom never queues", [job("x", "{lamp}")], EVERYONE),
    ("a tree's summary job filed under another tree", [job("tree", "{tree}", tree="T0")],
     EVERYONE),
    ("a summary job queued as if it had failed twice", [job("node", "{lamp}", attempts=2)],
     EVERYONE),
    ("a summary job put off for a year", [
        job("node", "{root}", not_before="{now} + 31536000")], EVERYONE),
    ("the queue put off for a year", ["UPDATE summary_job SET not_before = {now} + 31536000"],
     EVERYONE),
    ("a job leased past 15 minutes", ["UPDATE summary_job SET not_before = {now} + 960"],
     EVERYONE),
    ("a job's subject changed", ["UPDATE summary_job SET entity = '{root}'"], EVERYONE),
    ("a job's attempts counted two at a time", ["UPDATE summary_job SET attempts = 2"],
     EVERYONE),
    ("a job made less urgent", ["UPDATE summary_job SET priority = 9"], EVERYONE),
    # ── token data: written with its node's text ──
    ("the owner's token data rewritten", ["UPDATE node_tokens SET data = '\\x01'"], EVERYONE),
    ("the owner's token data deleted", ["DELETE FROM node_tokens"], EVERYONE),
    ("token data for the owner's node", [tokens("{tail}")], EVERYONE),
    ("token data upserted over the owner's", [
        tokens("{lamp}") + " ON CONFLICT (node) DO UPDATE SET data = excluded.data"], EVERYONE),
    ("token data for a node she bookmarked first", [
        "UPDATE node SET bookmarked = true WHERE id = '{tail}'", tokens("{tail}")], EVERYONE),
    # ── edges and sources: made with their node ──
    ("a source added to the owner's node", [source("{lamp}", "{head}")], EVERYONE),
    ("a source added to the owner's node she bookmarked first", [
        "UPDATE node SET bookmarked = true WHERE id = '{lamp}'", source("{lamp}", "{head}")],
     EVERYONE),
    ("a node of hers made a source of the owner's node", [
        node_insert("NS", "Hers.", "'{model}'", author_type="model"), source("{lamp}", "NS")],
     EVERYONE),
    ("a version of hers given the original's continuations in another role", [
        node_insert("NV", "Hers.", "'{model}'", author_type="model", edited_from="{root}"),
        "INSERT INTO edge_source (target, node, role, position) SELECT target, 'NV', "
        "'instruction', position FROM edge_source WHERE node = '{root}'"], EVERYONE),
    ("an edge given to the root", [edge("{root}")], EVERYONE),
    ("an edge given to the root she bookmarked first", [
        "UPDATE node SET bookmarked = true WHERE id = '{root}'", edge("{root}")], EVERYONE),
    ("a tree of hers made, then an edge for the owner's root filed in it", [
        tree_insert("T7"), "INSERT INTO edge (target, tree_id, kind, sibling_order) VALUES "
        "('{root}', 'T7', 'continuation', 0)"], EVERYONE),
    ("a tree of hers made, then a source for the owner's node", [
        tree_insert("T6"), source("{lamp}", "{head}")], EVERYONE),
    ("a tree of hers made, then a link in the owner's name from the owner's node", [
        tree_insert("T8"), "INSERT INTO link (id, tree_id, source, target_kind, target_node, "
        "note, author, created) VALUES ('L2', 'T8', '{lamp}', 'node', '{root}', 'forged', "
        "'{human}', {now})"], EVERYONE),
    ("a node marked as inserted now, then token data for it", [
        "INSERT INTO loom_text_written VALUES ('{lamp}', pg_current_xact_id(), true)",
        tokens("{lamp}")], EVERYONE),
    ("the owner's node moved among its siblings",
     ["UPDATE edge SET sibling_order = 7 WHERE target = '{lamp}'"], EVERYONE),
    # ── provenance: of a node added now, under its own hash ──
    ("a generation record for the owner's node", [generation("{lamp}")], EVERYONE),
    ("a generation record for a node she bookmarked first", [
        "UPDATE node SET bookmarked = true WHERE id = '{lamp}'", generation("{lamp}")],
     EVERYONE),
    ("the raw body the owner pruned written back", [
        "INSERT INTO raw_response (id, body) VALUES ('R0', 'forged')"], EVERYONE),
    ("media whose bytes are not their hash", [media("repeat('0', 64)", 1)], EVERYONE),
    ("media of the right hash and the wrong size", [
        media("encode(sha256('\\x00'::bytea), 'hex')", 5)], EVERYONE),
    # ── deletions: dated by the database, by her or a model, hidden ──
    ("a deletion dated back a month", [delete("{lamp}", "{now} - 2678400")], EVERYONE),
    ("a deletion dated back an hour", [delete("{lamp}", "{now} - 3600")], EVERYONE),
    ("a deletion in the owner's name", [delete("{lamp}", by="'{human}'")], EVERYONE),
    ("a deletion left showing", [delete("{lamp}", pruned="false")], EVERYONE),
    ("a deletion whose time is text", [delete("{lamp}", "'0'")], EVERYONE),
    ("a deletion mark that is no mark", [
        "UPDATE node SET pruned = true, extra = '{\"deleted\": 0}' WHERE id = '{lamp}'"],
     EVERYONE),
    ("a node of hers added deleted long ago", [
        node_insert("NX", "Mine.", "'{model}'", author_type="model", pruned=True,
                    extra='{"deleted": {"at": 0, "by": "{model}"}}')], EVERYONE),
    ("a deleted node shown again with its mark",
     ["UPDATE node SET pruned = false WHERE id = '{gone}'"], EVERYONE),
    ("a deletion's time moved back", [
        "UPDATE node SET extra = jsonb_set(extra::jsonb, '{deleted,at}', '0')::text "
        "WHERE id = '{gone}'"], EVERYONE),
    ("a deleted node shown, then hidden again under its old mark", [
        "UPDATE node SET pruned = false WHERE id = '{gone}'",
        "UPDATE node SET pruned = true WHERE id = '{gone}'"], EVERYONE),
    ("the owner's tree deleted as of 1970",
     ["UPDATE tree SET archived = true, updated = 0 WHERE id = '{tree}'"], EVERYONE),
    ("the owner's tree deleted a day back",
     ["UPDATE tree SET archived = true, updated = {now} - 86400 WHERE id = '{tree}'"],
     EVERYONE),
    ("a deleted tree's time moved back", ["UPDATE tree SET updated = 0 WHERE id = 'T0'"],
     EVERYONE),
    ("a deleted tree restored and deleted again at its old time", [
        "UPDATE tree SET archived = false WHERE id = 'T0'",
        "UPDATE tree SET archived = true WHERE id = 'T0'"], EVERYONE),
    # ── the change log: a node logged as added is one its transaction inserted ──
    ("a continuation logged for a node she only bookmarked", [
        "UPDATE node SET bookmarked = true WHERE id = '{lamp}'",
        change("node.continuation", "{lamp}")], EVERYONE),
    ("a split logged for a head she only bookmarked", [
        "UPDATE node SET bookmarked = true WHERE id = '{head}'",
        change("node.split", "{tide}", payload="'{\"head\": \"{head}\"}'")], EVERYONE),
    ("a dead holder's release logged while the lock is held", [
        change("lock.release", "{lamp}", "NULL", "'{\"holder\": \"{human}\"}'")], EVERYONE),
]


def test_every_forbidden_statement_is_refused_as_each_role(team: dict[str, str]) -> None:
    """Each attempt runs as each role that may not, in one transaction that is committed;
    each must be refused (or find none of the rows it aims at) with the database unchanged."""
    team = {**team, **shared_rows(team)}
    through, errors, tried, refused = [], [], 0, 0
    for what, statements, who in FORBIDDEN:
        for role in who:
            sql = [fill(s, team) for s in statements]
            before = snapshot(team["owner"])
            outcome, why = attempt(team[role], sql)
            tried += 1
            if outcome == "error":
                errors.append(f"{role}, {what}: {why}")
            elif snapshot(team["owner"]) != before:
                through.append(f"{role}, {what}: {'; '.join(sql)}")
            else:
                refused += 1
    assert not through, "the database let these through:\n" + "\n".join(through)
    assert not errors, "statements that failed for another reason:\n" + "\n".join(errors)
    print(f"forbidden statements: {tried} tried, {refused} refused")
    assert tried == refused > 150
    # and the rows others own are as they were
    assert _rows(team["owner"], "SELECT working FROM buffer_state") == [
        ("the owner's unsaved text",)]
    assert _rows(team["owner"], "SELECT content FROM node WHERE id = %s", team["lamp"]) == [
        (" A single lamp burned on the pier.",)]


def test_what_each_role_may_do_it_can(team: dict[str, str]) -> None:
    """Each role's own rows, a writer's marks, nodes and trees, and a split's cut moved as
    a whole: allowed (so the refusals above are the guards' doing, not a broken
    connection or a mistyped statement)."""
    for role in ROLES:
        for sql in (
            "INSERT INTO position (participant, tree, node, tip, updated) SELECT {me}, id, "
            "root, root, 0 FROM tree ON CONFLICT (participant, tree) DO UPDATE SET updated = 1",
            "INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, working, "
            "updated) VALUES ('loom://mine', {me}, 's', 'x', 'n', '[]', 'mine', 0)",
            "UPDATE participant SET current_tree = NULL WHERE name = current_user",
        ):
            assert attempt(team[role], [fill(sql, team)]) == ("committed", ""), (role, sql)
        moved = ["INSERT INTO position (participant, tree, node, tip, updated) SELECT {me}, "
                 "id, root, root, {now} FROM tree ON CONFLICT (participant, tree) DO UPDATE "
                 "SET updated = {now}", change("position", "{root}")]
        assert attempt(team[role], [fill(s, team) for s in moved]) == ("committed", ""), role
    for role in WRITERS:
        for sql in (["UPDATE node SET bookmarked = true WHERE id = '{lamp}'",
                     change("node.flags", "{lamp}")],
                    [node_insert(f"O{role[0]}", "Hers.", "{me}", author_type=(
                        "model" if role == "bot" else "human"))],
                    [node_insert(f"M{role[0]}", "A model's.", "'{model}'", author_type="model")],
                    [node_insert(f"C{role[0]}", "Five minutes off.", "{me}", author_type=(
                        "model" if role == "bot" else "human"),
                        created="extract(epoch FROM now()) - 300")],
                    [tree_insert(f"T{role[0]}"),
                     node_insert(f"R{role[0]}", "Anyone's, as her file says.", "'{human}'",
                                 tree=f"T{role[0]}", kind="root", parent=None,
                                 created="0"),
                     f"UPDATE tree SET root = 'R{role[0]}' WHERE id = 'T{role[0]}'"],
                    [node_insert(f"H{role[0]}", " The tide", "'{human}'", extra=_HEAD,
                                 created="(SELECT created FROM node WHERE id = '{tide}')")]):
            assert attempt(team[role], [fill(s, team) for s in sql]) == ("committed", ""), \
                (role, sql)
    # a split's cut moved in SQL, head and tail together with their hashes: the path's
    # text is the original's either way
    assert attempt(team["alice"], [fill(s, team) for s in cut(" The tide came", 14)]) == (
        "committed", "")
    assert _rows(team["owner"], "SELECT content FROM node WHERE id IN (%s, %s) ORDER BY "
                 "length(content)", team["head"], team["tail"]) == [
        (" The tide came",), (" in over the stones.",)]
    assert attempt(team["alice"], ["INSERT INTO participant (id, name, kind, role, "
                                   "permissions, loom_aware, created) VALUES ('X3', "
                                   "'imported', 'human', 'human', '[]', false, 0)"]) == (
        "committed", "")


def test_a_writer_writes_the_shared_rows_as_loom_does(team: dict[str, str]) -> None:
    """What the refusals above leave a writer, in the SQL Loom sends: her own turn locks
    taken, renewed and released, and a model's; a lock that expired or whose holder's
    editor went silent taken over or freed; the summary queue worked through; a new node
    with its edge, sources, token data and provenance, and a version sharing its
    original's continuations; a deletion and a deleted tree, given the database's time;
    an import's deletions, dated now."""
    import psycopg

    team = {**team, **shared_rows(team)}
    with psycopg.connect(team["owner"]) as conn:  # an expired lock, a silent editor's lock
        conn.execute("INSERT INTO branch_lock (node, participant, expires, host, pid) VALUES "
                     "(%s, %s, 0, 'elsewhere', 7), (%s, %s, %s, 'h', 1)",
                     (team["tide"], team["human"], team["head"], team["human"],
                      time.time() + 3600))

    def ok(role: str, *statements: str) -> None:
        assert attempt(team[role], [fill(s, team) for s in statements]) == (
            "committed", ""), (role, statements)

    stamped = ("SELECT abs((extra::jsonb->'deleted'->>'at')::float8 - extract(epoch FROM "
               "now())) < 60 FROM node WHERE id = %s")
    for role in WRITERS:
        who = "'{model}'" if role == "alice" else "{me}"
        ok(role, lock("{root}", "{me}"))
        ok(role, lock("{root}", "{me}", "{now} + 1140", upsert=True) + " WHERE "
           "branch_lock.participant = excluded.participant")
        ok(role, "DELETE FROM branch_lock WHERE node = '{root}' AND participant = {me}",
           change("lock.release", "{root}"))
        ok(role, lock("{root}", "'{model}'"), "DELETE FROM branch_lock WHERE node = '{root}'")
        ok(role, job("node", "{root}"), job("tree", "{tree}"))
        ok(role, "UPDATE summary_job SET not_before = {now} + 840 WHERE entity = '{root}'")
        ok(role, "UPDATE summary_job SET attempts = attempts + 1, not_before = {now} + 10 "
           "WHERE entity = '{root}'", "UPDATE summary_job SET not_before = 0")
        ok(role, "DELETE FROM summary_job WHERE entity IN ('{root}', '{tree}')")
        n, data = f"W{role[0]}", f"'\\x0{len(role)}'"  # (media of their own bytes)
        ok(role, node_insert(n, "Hers.", who, author_type="model"), edge(n),
           source(n, "{root}", "primary").replace("', 1)", "', 0)"), tokens(n),
           generation(n, f"G{role[0]}"), f"INSERT INTO raw_response (id, body) VALUES "
           f"('R{role[0]}', '{{}}')", media(f"encode(sha256({data}::bytea), 'hex')", 1, data))
        v = f"V{role[0]}"
        ok(role, node_insert(v, "A version of the root.", who, author_type="model",
                             edited_from="{root}"),
           "INSERT INTO edge_source (target, node, role, position) SELECT target, "
           f"'{v}', role, position FROM edge_source WHERE node = '{{root}}'")
        ok(role, delete("{lamp}", "{now} - 300", by=who), change("node.delete", "{lamp}", who))
        assert rows(team["owner"], stamped, team["lamp"]) == [(True,)]
        ok(role, "UPDATE node SET pruned = false, extra = NULL WHERE id = '{lamp}'")
        t = f"A{role[0]}"
        ok(role, tree_insert(t), f"UPDATE tree SET archived = true, updated = {{now}} - 300 "
           f"WHERE id = '{t}'")
        ok(role, tree_insert(f"B{role[0]}", archived=True, updated="0"),
           node_insert(f"I{role[0]}", "Deleted in the file.", "'{human}'", tree=f"B{role[0]}",
                       kind="root", parent=None, created="0", pruned=True,
                       extra='{"deleted": {"at": 0, "by": "{human}"}}'))
        assert rows(team["owner"], "SELECT updated > extract(epoch FROM now()) - 60 FROM "
                    "tree WHERE id IN (%s, %s)", t, f"B{role[0]}") == [(True,), (True,)]
        assert rows(team["owner"], stamped, f"I{role[0]}") == [(True,)]
    # another's turn lock, once free: expired (taken over), its editor silent (freed)
    ok("alice", lock("{tide}", "{me}", upsert=True) + " WHERE branch_lock.expires <= {now}")
    ok("alice", "DELETE FROM branch_lock WHERE node = '{head}'")
    assert rows(team["owner"], "SELECT node FROM branch_lock ORDER BY node") == sorted(
        [(team["lamp"],), (team["tide"],)])
    # ... but her own editor session beside the live lock's process does not free it
    ok("alice", "INSERT INTO editor_session (id, participant, host, pid, started, heartbeat) "
       "VALUES ('e1', {me}, 'elsewhere', 4242, 0, 0)",
       "DELETE FROM branch_lock WHERE node = '{lamp}'")
    assert rows(team["owner"], "SELECT participant FROM branch_lock WHERE node = %s",
                team["lamp"]) == [(team["human"],)]


def test_a_readers_loom_works_and_the_database_refuses_the_rest(
        pg: Any, team: dict[str, str], capsys: Any) -> None:
    carol, alice = ("--db", team["carol"]), ("--db", team["alice"])
    code, out = _cli(capsys, *carol, "do", "Shared", "→ tree")
    assert code == 0 and "Shared" in out  # a reader reads
    code, out = _cli(capsys, *carol, "do", "Shared", "→ goto root", '→ pin root',
                     '→ stash "mine" "a note"', '→ think "reading"')
    assert code == 0, out  # and moves, pins, stashes and thinks: her own rows
    code, out = _cli(capsys, *carol, "tree", "Shared")
    assert code == 0, out
    # Loom's permissions out of step (the owner made dave a writer in Loom, the database a
    # reader): only the database stops him, with Loom's own message, nothing written
    owner = ("--db", team["owner"], "--participant", "human")
    assert _cli(capsys, *owner, "users", "add", "dave", "--preset", "writer")[0] == 0
    set_up_roles(pg, capsys, team["owner"], readers=("dave",))
    nodes = _rows(team["owner"], "SELECT count(*) FROM node")[0][0]
    dave = ("--db", team["carol"].replace("carol@", "dave@"))
    code, out = _cli(capsys, *dave, "do", "Shared", '→ annotate root "mine"')
    assert code == 1
    assert out.startswith("✗ PERMISSION_DENIED: the database refused this write for your "
                          "database role"), out
    assert _rows(team["owner"], "SELECT count(*) FROM node")[0][0] == nodes
    # a writer writes: nodes, marks, a split and a version, a tree of her own
    for line in ('→ annotate root "hers"', '→ respond root "and then it rained"',
                 '→ respond root "the end"', '→ bookmark root "start"',
                 '→ tag root "opening"', "→ split {and then} at:4",
                 '→ edit {the end} "the very end"', '→ rename "Shared (ours)"'):
        line = re.sub(r"\{([^}]+)\}", lambda m: _child(team, m.group(1)), line)
        code, out = _cli(capsys, *alice, "do", "Shared", line)
        assert code == 0, (line, out)
    assert _cli(capsys, *alice, "new", "Alice's", "--text", "Hers.")[0] == 0
    # ... but grants nothing: the owner alone changes who may do what
    code, out = _cli(capsys, *alice, "users", "grant", "carol", "write")
    assert code == 1 and "PERMISSION_DENIED: the database refused" in out, out
    assert _rows(team["owner"], "SELECT permissions FROM participant WHERE name = 'carol'") \
        == [('["loom_aware", "doc_read", "cross_tree"]',)]


def test_only_a_splits_halves_move_their_cut(team: dict[str, str], capsys: Any) -> None:
    """A node's text never changes, but for the halves of a split, which may move their
    cut together (a suggestion taken a word at a time): each stays a prefix and a suffix
    of the original, and the two still make its text when the transaction commits."""
    alice = ("--db", team["alice"])
    assert _cli(capsys, *alice, "do", "Shared", '→ respond root "and then it rained"')[0] == 0
    assert _cli(capsys, *alice, "do", "Shared",
                f"→ split {_child(team, 'and then')} at:4")[0] == 0
    (head, tail), = _rows(team["owner"], "SELECT h.id, t.id FROM node h JOIN node t ON "
                          "t.parent = h.id WHERE h.content = 'and ' AND t.content = "
                          "'then it rained'")

    def move(at: int, head_text: str, tail_text: str) -> list[str]:
        return [f"UPDATE node SET content = '{text}', content_hash = "
                f"{rehash(repr(text), parent)}, extra = jsonb_set(extra::jsonb, '{{at}}', "
                f"'{at}')::text WHERE id = '{node}'" for node, text, parent in (
                    (head, head_text, team["root"]), (tail, tail_text, head))]

    moved = move(9, "and then ", "it rained")
    assert attempt(team["carol"], moved)[0] == "refused"
    assert attempt(team["alice"], moved[:1])[0] == "refused"  # the head alone
    assert attempt(team["alice"], move(5, "Twice", "then it rained"))[0] == "refused"
    assert attempt(team["alice"], moved) == ("committed", "")
    assert _rows(team["owner"], "SELECT content FROM node WHERE id IN (%s, %s) ORDER BY "
                 "content", head, tail) == [("and then ",), ("it rained",)]


def test_a_migration_gives_new_tables_their_grants(pg: Any, team: dict[str, str],
                                                   capsys: Any) -> None:
    """When the schema grows, the owner's migration (``loom migrate``, or any Loom the owner
    starts) grants again: a table the grants missed is covered afterwards. A migration
    by anyone else is refused in words."""
    assert roles.undecided() == []  # a new table must say here who may write it
    assert "?" not in "".join(roles.grants())  # (the backend reads ? as a placeholder)
    owner = team["owner"]
    import psycopg

    with psycopg.connect(owner) as conn:  # as if v11 had just added the position table
        conn.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
        conn.execute("REVOKE ALL ON position FROM loom_team")
    me = _rows(team["carol"], "SELECT id FROM participant WHERE name = 'carol'")[0][0]
    upsert = (f"INSERT INTO position (participant, tree, node, tip, updated) SELECT '{me}', "
              "id, root, root, 0 FROM tree ON CONFLICT (participant, tree) DO UPDATE SET "
              "updated = 1")
    code, out = _cli(capsys, "--db", team["carol"], "trees")
    assert code == 1 and "PERMISSION_DENIED" in out and "only the database's owner" in out, out
    assert _try(team["carol"], upsert) == "refused"
    code, out = _cli(capsys, "--db", owner, "migrate")
    assert code == 0 and f"schema v{SCHEMA_VERSION}" in out, out
    assert _try(team["carol"], upsert) == "done"
    assert _try(team["carol"], f"DELETE FROM position WHERE participant = '{team['human']}'") \
        == "no rows"


def test_roles_sql_needs_the_schema_first(pg: Any, capsys: Any) -> None:
    """Run before Loom ever connected, the SQL says so instead of "relation position does
    not exist"."""
    url = new_pg_database(pg, template=False)
    sql = roles.script(11, readers=("carol",))
    done = subprocess.run([str(pg.bindir / "psql"), "-X", "-q", url, "-f", "-"], input=sql,
                          text=True, capture_output=True, check=False)
    assert done.returncode != 0
    assert "does not hold Loom's schema v11 yet" in done.stderr, done.stderr


def test_text_postgresql_cannot_store_is_refused_clearly(pg: Any, capsys: Any) -> None:
    """PostgreSQL text holds no NUL (U+0000): the write is refused as what it is, not as a
    storage error to retry, and nothing is written."""
    url = new_pg_database(pg)
    owner = ("--db", url, "--participant", "human")
    assert _cli(capsys, *owner, "new", "Shared", "--text", "Once.")[0] == 0
    code, out = _cli(capsys, *owner, "do", "Shared", '→ annotate root "a\x00b"')
    assert code == 1
    assert out.startswith("✗ INVALID_SYNTAX: PostgreSQL cannot store this text: it holds a "
                          "NUL character (U+0000)"), out
    assert "hint: remove the character" in out
    code, out = _cli(capsys, *owner, "do", "Shared", '→ annotate root "ab"')
    assert code == 0, out


async def test_a_readers_editor_keeps_her_own_rows(team: dict[str, str]) -> None:
    """A reader's language server opens a path, keeps what she types (her buffer state) and
    her session, under the row-level security that keeps everyone else's from her."""
    from lsprotocol import types as lsp
    from pytest_lsp import ClientServerConfig, client_capabilities

    from tests.lsp.conftest import NO_MODEL_ENV, SERVER, Editor

    client = await ClientServerConfig(server_command=SERVER, server_env=NO_MODEL_ENV).start()
    ed = Editor(client)
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        initialization_options={"database": team["carol"],
                                "documentProvider": "textDocumentContent"}))
    try:
        root = _rows(team["owner"], "SELECT n.local_id FROM tree t JOIN node n ON "
                     "n.id = t.root")[0][0]
        uri = f"loom://path/{team['tree']}/{root}"
        answer = await ed.request("loom/read", {"uri": uri})
        assert "Once upon a time." in answer.get("text", ""), answer
        ed.open(uri, answer["text"])
        ed.append(uri, " Carol's draft.")
        mine = ("SELECT count(*) FROM buffer_state b JOIN participant p ON p.id = "
                "b.participant WHERE p.name = 'carol' AND strpos(b.working, 'Carol''s draft') > 0")
        await ed.wait_for(lambda: _rows(team["owner"], mine)[0][0] == 1, timeout=15)
        assert _rows(team["owner"], "SELECT count(*) FROM editor_session s JOIN participant p "
                     "ON p.id = s.participant WHERE p.name = 'carol'")[0][0] == 1
        assert not any("refused" in m for m in ed.messages), ed.messages
    finally:
        await client.shutdown_session()
    assert _rows(team["owner"], "SELECT working FROM buffer_state b JOIN participant p ON "
                 "p.id = b.participant WHERE p.name = 'human'") == [("the owner's unsaved text",)]


def test_a_readers_summary_worker_stops_at_the_databases_refusal(team: dict[str, str],
                                                                 caplog: Any) -> None:
    """A reader's language server with a summary model configured: claiming a job is a
    write her role may not make. The worker stops and says why, once (it logged a
    traceback every second)."""
    import threading

    from loom.llm.config import ModelProfile
    from loom.llm.summaries import SummaryWorker
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(team["carol"]))
    try:
        profile = ModelProfile(name="fake", provider="openai-compatible", model="m",
                               base_url="http://127.0.0.1:9/v1")
        worker = SummaryWorker(ws, profile, provider_factory=lambda p: None)  # type: ignore[arg-type,return-value]
        stop = threading.Event()
        done = threading.Thread(target=worker.run_forever, args=(stop, 0.05, 0.0))
        done.start()
        done.join(timeout=10)
        stop.set()
        assert not done.is_alive(), "the worker went on after the database refused it"
        assert worker.unavailable and "refuses" in worker.unavailable
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    finally:
        ws.db.close()
