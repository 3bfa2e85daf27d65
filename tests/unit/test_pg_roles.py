"""The database as the last line of permissions: with the roles
``loom users roles --sql`` sets up, every statement a reader's or a writer's Loom
permissions do not allow is refused by PostgreSQL itself — tried here one by one as each
role — while each one's Loom still works, and a write the database refuses is Loom's own
``✗ PERMISSION_DENIED`` with nothing written."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from loom.cli import main
from loom.store import roles
from tests.conftest import new_pg_database


def _cli(capsys: Any, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def psql(pg: Any, url: str, sql: str) -> None:
    """``sql`` through the real psql, as the URL's user (what the docs tell the owner)."""
    done = subprocess.run([str(pg.bindir / "psql"), "-X", "-q", url, "-f", "-"], input=sql,
                          text=True, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


def set_up_roles(pg: Any, capsys: Any, url: str, readers: tuple[str, ...] = (),
                 writers: tuple[str, ...] = ()) -> None:
    argv = ["--db", url, "users", "roles", "--sql"]
    argv += [a for r in readers for a in ("--reader", r)]
    argv += [a for w in writers for a in ("--writer", w)]
    code, sql = _cli(capsys, *argv)
    assert code == 0, sql
    psql(pg, url, sql)


def _rows(url: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(query, args).fetchall())


def _child(team: dict[str, str], start: str) -> str:
    """The local id of the node whose text starts with ``start`` (made by a writer)."""
    rows = _rows(team["owner"], "SELECT local_id FROM node WHERE starts_with(content, %s)",
                 start)
    return str(rows[0][0]) if rows else "(none yet)"


def _try(url: str, statement: str) -> str:
    """What PostgreSQL did with ``statement`` (rolled back whatever happened): "refused"
    (an error), "no rows" (row-level security hid every row it aimed at) or "done"."""
    import psycopg

    with psycopg.connect(url) as conn:
        try:
            cur = conn.execute(statement)
        except psycopg.errors.InsufficientPrivilege:
            return "refused"
        except psycopg.Error as err:  # e.g. a row-level security check: also 42501
            return f"refused ({err.sqlstate})"
        finally:
            conn.rollback()
        return "no rows" if cur.rowcount == 0 else "done"


@pytest.fixture
def team(pg: Any, capsys: Any) -> dict[str, str]:
    """A team workspace: the owner made a tree and said in Loom who may do what; carol is a
    reader, alice a writer, and the database knows it."""
    url = new_pg_database(pg)
    owner = ("--db", url, "--participant", "human")
    assert _cli(capsys, *owner, "new", "Shared", "--text", "Once upon a time.")[0] == 0
    assert _cli(capsys, *owner, "do", "Shared", '→ annotate root "the owner\'s"')[0] == 0
    assert _cli(capsys, *owner, "users", "add", "carol", "--preset", "reader")[0] == 0
    assert _cli(capsys, *owner, "users", "add", "alice", "--preset", "writer")[0] == 0
    set_up_roles(pg, capsys, url, readers=("carol",), writers=("alice",))
    human = _rows(url, "SELECT id FROM participant WHERE name = 'human'")[0][0]
    tree = _rows(url, "SELECT id FROM tree")[0][0]
    import psycopg

    with psycopg.connect(url) as conn:  # the owner's open buffer and editor session
        conn.execute("INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, "
                     "working, updated) VALUES ('loom://x', %s, 's', %s, 'n', '[]', "
                     "'the owner''s unsaved text', 0)", (human, tree))
        conn.execute("INSERT INTO editor_session (id, participant, host, pid, started, "
                     "heartbeat) VALUES ('s', %s, 'h', 1, 0, 0)", (human,))
    dbname = url.split("@/")[1].split("?")[0]
    return {"owner": url, "carol": pg.url(dbname, "carol"), "alice": pg.url(dbname, "alice"),
            "human": human, "tree": tree}


#: (statement, who may not) — every write a role's Loom permissions do not allow
FORBIDDEN: list[tuple[str, tuple[str, ...]]] = [
    # the change log: appended to by Loom's writes, never changed
    ("DELETE FROM change", ("carol", "alice")),
    ("UPDATE change SET kind = 'node.create'", ("carol", "alice")),
    ("TRUNCATE change", ("carol", "alice")),
    ("INSERT INTO change (tree, kind, entity, actor, created) VALUES "
     "(NULL, 'node.create', 'x', {human!r}, 0)", ("carol",)),
    # who may do what: only the owner changes it
    ("UPDATE participant SET permissions = permissions || ',loom_write' WHERE name = 'carol'",
     ("carol", "alice")),
    ("UPDATE participant SET permissions = '[\"loom_aware\", \"loom_write\"]' "
     "WHERE name = current_user", ("carol", "alice")),
    ("UPDATE participant SET current_tree = NULL WHERE name = 'human'", ("carol", "alice")),
    ("INSERT INTO participant (id, name, kind, role, permissions, loom_aware, created) "
     "VALUES ('X1', 'mallory', 'human', 'human', '[\"loom_write\"]', true, 0)",
     ("carol", "alice")),
    ("INSERT INTO participant (id, name, kind, role, permissions, loom_aware, created) "
     "VALUES ('X2', 'mallory', 'human', 'human', '[]', true, 0)", ("carol",)),
    ("DELETE FROM participant", ("carol", "alice")),
    # nodes are immutable; nothing is deleted but through Loom's marks
    ("UPDATE node SET content = 'rewritten'", ("carol", "alice")),
    ("UPDATE node SET content_hash = 'x'", ("carol", "alice")),
    ("DELETE FROM node", ("carol", "alice")),
    ("DELETE FROM tree", ("carol", "alice")),
    ("DELETE FROM edge", ("carol", "alice")),
    ("DELETE FROM document", ("carol", "alice")),
    ("DELETE FROM link", ("carol", "alice")),
    ("DELETE FROM generation", ("carol", "alice")),
    ("UPDATE node SET bookmarked = true", ("carol",)),
    ("UPDATE node SET author_id = {human!r}", ("carol", "alice")),
    ("INSERT INTO node (id, tree_id, local_id, label, content, author_id, author_type, kind, "
     "depth, created, content_hash) SELECT 'N1', id, 'zzzz', 'zzzz', 'mine', {human!r}, "
     "'human', 'continuation', 1, 0, 'h' FROM tree", ("carol",)),
    ("UPDATE tree SET title = 'taken'", ("carol",)),
    ("INSERT INTO tree (id, title, mode, created, updated) VALUES ('T1', 't', 'buffer', 0, 0)",
     ("carol",)),
    ("INSERT INTO document (id, name, content, created, updated) VALUES ('D1', 'd', '', 0, 0)",
     ("carol",)),
    ("INSERT INTO summary_job (kind, entity, created) VALUES ('node', 'x', 0)", ("carol",)),
    ("INSERT INTO branch_lock (node, participant, expires) VALUES ('n', {human!r}, 0)",
     ("carol",)),
    # other people's rows: where they are, what they typed, their sessions and traces
    ("UPDATE position SET node = tip WHERE participant = {human!r}", ("carol", "alice")),
    ("DELETE FROM position WHERE participant = {human!r}", ("carol", "alice")),
    ("INSERT INTO position (participant, tree, node, tip, updated) SELECT {human!r}, id, "
     "root, root, 0 FROM tree ON CONFLICT (participant, tree) DO UPDATE SET updated = 1",
     ("carol", "alice")),
    ("UPDATE buffer_state SET working = 'vandalised'", ("carol", "alice")),
    ("DELETE FROM buffer_state", ("carol", "alice")),
    ("INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, working, "
     "updated) VALUES ('loom://y', {human!r}, 't', 'x', 'n', '[]', 'forged', 0)",
     ("carol", "alice")),
    ("UPDATE editor_session SET heartbeat = 1", ("carol", "alice")),
    ("DELETE FROM editor_session", ("carol", "alice")),
    ("INSERT INTO trace_entry (participant, command, ok, message, created) VALUES "
     "({human!r}, '→ forged', true, '', 0)", ("carol", "alice")),
    ("DELETE FROM trace_entry", ("carol", "alice")),
    ("UPDATE trace_entry SET ok = false", ("carol", "alice")),
    # the schema
    ("DROP TABLE node", ("carol", "alice")),
    ("ALTER TABLE node DISABLE TRIGGER loom_node_text", ("carol", "alice")),
    ("ALTER TABLE position DISABLE ROW LEVEL SECURITY", ("carol", "alice")),
    ("CREATE TABLE public.mine (id int)", ("carol", "alice")),
    ("GRANT loom_writer TO carol", ("carol", "alice")),
]


def test_every_forbidden_statement_is_refused_as_each_role(team: dict[str, str]) -> None:
    done = []
    for statement, who in FORBIDDEN:
        sql = statement.format(human=team["human"])
        for role in who:
            outcome = _try(team[role], sql)
            if outcome == "done":
                done.append(f"{role}: {sql}")
    assert not done, "the database let these through:\n" + "\n".join(done)
    # and the rows others own are as they were
    assert _rows(team["owner"], "SELECT working FROM buffer_state") == [
        ("the owner's unsaved text",)]
    assert _rows(team["owner"], "SELECT count(*) FROM change")[0][0] > 3


def test_what_each_role_may_do_it_can(team: dict[str, str]) -> None:
    """Each role's own rows, and a writer's marks on nodes: allowed (so the refusals above
    are the grants' doing, not a broken connection)."""
    for role in ("carol", "alice"):
        me = _rows(team[role], "SELECT id FROM participant WHERE name = current_user")[0][0]
        for sql in (
            f"INSERT INTO position (participant, tree, node, tip, updated) SELECT '{me}', id, "
            "root, root, 0 FROM tree ON CONFLICT (participant, tree) DO UPDATE SET updated = 1",
            f"INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, working, "
            f"updated) VALUES ('loom://mine', '{me}', 's', 'x', 'n', '[]', 'mine', 0)",
            f"INSERT INTO change (tree, kind, entity, actor, created) VALUES "
            f"(NULL, 'position', 'n', '{me}', 0)",
            f"UPDATE participant SET current_tree = NULL WHERE id = '{me}'",
        ):
            assert _try(team[role], sql) == "done", (role, sql)
    assert _try(team["alice"], "UPDATE node SET bookmarked = true") == "done"
    assert _try(team["alice"], "INSERT INTO participant (id, name, kind, role, permissions, "
                "loom_aware, created) VALUES ('X3', 'imported', 'human', 'human', '[]', "
                "false, 0)") == "done"


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
    cut and stay a prefix and a suffix of the original (a suggestion taken a word at a time)."""
    alice = ("--db", team["alice"])
    assert _cli(capsys, *alice, "do", "Shared", '→ respond root "and then it rained"')[0] == 0
    assert _cli(capsys, *alice, "do", "Shared",
                f"→ split {_child(team, 'and then')} at:4")[0] == 0
    (head, original), = _rows(team["owner"], "SELECT n.id, o.content FROM node n JOIN node o "
                              "ON o.id = n.extra::jsonb->>'split_from' "
                              "WHERE n.extra::jsonb->>'part' = 'head'")
    moved = f"UPDATE node SET content = '{original[:7]}' WHERE id = '{head}'"
    assert _try(team["alice"], moved) == "done"
    assert _try(team["alice"], f"UPDATE node SET content = 'Twice' WHERE id = '{head}'") \
        .startswith("refused")
    assert _try(team["carol"], moved).startswith("refused")


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
    assert code == 0 and "schema v14" in out, out
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
