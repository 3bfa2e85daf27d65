"""A team workspace on the real PostgreSQL the suite starts, set up as docs/team.md says
(one login role per person, ``loom users roles`` applied), and the means to try SQL as
each role: the statements of one attempt run in one transaction that is committed (so the
checks made at commit run too), and the whole database is compared before and after."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from loom.cli import main
from tests.conftest import new_pg_database

ROLES = ("carol", "alice", "bot")  # a reader, a writer, a model participant's writer role


def cli(capsys: Any, *argv: str) -> tuple[int, str]:
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
    code, sql = cli(capsys, *argv)
    assert code == 0, sql
    psql(pg, url, sql)


def rows(url: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(query, args).fetchall())


def one(url: str, query: str, *args: Any) -> Any:
    return rows(url, query, *args)[0][0]


@pytest.fixture
def team(pg: Any, capsys: Any) -> dict[str, str]:
    """The owner made a tree and said in Loom who may do what; carol is a reader, alice a
    writer, bot a collaborator (a model participant) with a writer's role of its own, and
    erin a login role Loom has not met yet. The owner's tree holds a root, a continuation
    ("lamp") and a split ("tide", cut into "head" and "tail"); the owner has an open
    buffer and an editor session. Each role's URL is under its name, its
    participant's id under ``NAME_id`` (the owner's: ``human``, the subject's: ``model``)."""
    url = new_pg_database(pg)
    owner = ("--db", url, "--participant", "human")

    def do(line: str) -> str:
        code, out = cli(capsys, *owner, "do", "Shared", line)
        assert code == 0, (line, out)
        return out

    assert cli(capsys, *owner, "new", "Shared", "--text", "Once upon a time.")[0] == 0
    do('→ annotate root "the owner\'s"')
    do('→ respond root " A single lamp burned on the pier."')
    do('→ respond root " The tide came in over the stones."')
    for name, preset in (("carol", "reader"), ("alice", "writer")):
        assert cli(capsys, *owner, "users", "add", name, "--preset", preset)[0] == 0
    assert cli(capsys, *owner, "users", "add", "bot", "--model", "--permissions",
               "loom_aware,loom_write,loom_generate,doc_read,doc_write,cross_tree")[0] == 0
    set_up_roles(pg, capsys, url, readers=("carol", "erin"), writers=("alice", "bot"))
    ids = {(name if name in ("human", "model") else f"{name}_id"):
           one(url, "SELECT id FROM participant WHERE name = %s", name)
           for name in ("human", "alice", "carol", "bot", "model")}
    tree, root = rows(url, "SELECT id, root FROM tree")[0]
    lamp = one(url, "SELECT id FROM node WHERE content = ' A single lamp burned on the pier.'")
    tide = one(url, "SELECT local_id FROM node WHERE starts_with(content, ' The tide')")
    do(f"→ split {tide} at:9")
    tide, head, tail = (one(url, "SELECT id FROM node WHERE content = %s", text) for text in (
        " The tide came in over the stones.", " The tide", " came in over the stones."))
    import psycopg

    with psycopg.connect(url) as conn:  # the owner's open buffer and editor session
        conn.execute("INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, "
                     "working, updated) VALUES ('loom://x', %s, 's', %s, 'n', '[]', "
                     "'the owner''s unsaved text', 0)", (ids["human"], tree))
        conn.execute("INSERT INTO editor_session (id, participant, host, pid, started, "
                     "heartbeat) VALUES ('s', %s, 'h', 1, 0, 0)", (ids["human"],))
    dbname = url.split("@/")[1].split("?")[0]
    return {"owner": url, **{r: pg.url(dbname, r) for r in (*ROLES, "erin")},
            **ids, "tree": tree, "root": root, "lamp": lamp, "tide": tide, "head": head,
            "tail": tail}


def snapshot(url: str) -> dict[str, str]:
    """Every table's rows, as a digest per table (read as the owner)."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        return {t: conn.execute(f'SELECT md5(coalesce(string_agg(r::text, \'|\' ORDER BY '
                                f'r::text), \'\')) FROM "{t}" r').fetchone()[0]
                for t in tables}


def attempt(url: str, statements: list[str]) -> tuple[str, str]:
    """Run ``statements`` in one transaction as the URL's role and commit: ("refused",
    the database's reason) when it raised a permission error, ("committed", "") when it
    went through, ("error", …) for any other failure (a mistake in the statement)."""
    import psycopg

    with psycopg.connect(url) as conn:
        try:
            for statement in statements:
                conn.execute(statement)
            conn.commit()
        except psycopg.Error as err:
            conn.rollback()
            if err.sqlstate == "42501":
                return "refused", str(err).splitlines()[0]
            return "error", f"{err.sqlstate}: {err}"
    return "committed", ""


def node_insert(node_id: str, content: str, author: str, *, author_type: str = "human",
                created: str = "{now}", extra: str | None = None, tree: str = "{tree}",
                kind: str = "continuation", parent: str | None = "{root}",
                edited_from: str | None = None, pruned: bool = False) -> str:
    """An INSERT of a whole node row (every column the schema needs), as a template:
    ``author`` and ``created`` are SQL expressions (``'{human}'``, ``{me}``)."""
    local = node_id.lower().ljust(4, "z")
    content = content.replace("'", "''")
    value = "NULL" if extra is None else "'" + extra.replace("'", "''") + "'"
    above = "NULL" if parent is None else f"'{parent}'"
    edited = "NULL" if edited_from is None else f"'{edited_from}'"
    return ("INSERT INTO node (id, tree_id, local_id, label, content, author_id, author_type, "
            "kind, parent, depth, created, version_number, bookmarked, pruned, excluded, "
            f"content_hash, extra, edited_from) VALUES ('{node_id}', '{tree}', '{local}', "
            f"'{local}', '{content}', {author}, '{author_type}', '{kind}', {above}, 1, "
            f"{created}, 0, false, {str(pruned).lower()}, false, 'h', {value}, {edited})")


def shared_rows(team: dict[str, str]) -> dict[str, str]:
    """The rows of the shared tables the owner's Loom keeps beside the team's tree, written
    as the owner: a live turn lock on "lamp" (its process on another machine, no editor
    session), the owner's summary job and token data for it, a generation whose raw body
    the owner pruned (``R0``), a node the owner deleted three weeks ago (``gone``) and a
    tree the owner deleted then (``old_tree``). Returns their ids, to add to ``team``."""
    import psycopg

    weeks = 21 * 86_400
    mark = json.dumps({"deleted": {"at": time.time() - weeks, "by": team["human"],
                                   "pruned": False, "nodes": 1}})
    with psycopg.connect(team["owner"]) as conn:
        conn.execute("INSERT INTO branch_lock (node, participant, expires, host, pid) VALUES "
                     "(%s, %s, %s, 'elsewhere', 4242)", (team["lamp"], team["human"],
                                                         time.time() + 3600))
        conn.execute("INSERT INTO summary_job (kind, entity, tree, priority, attempts, "
                     "not_before, created) VALUES ('node', %s, %s, 5, 0, 0, %s) "
                     "ON CONFLICT (kind, entity) DO NOTHING",
                     (team["lamp"], team["tree"], time.time()))
        conn.execute("INSERT INTO node_tokens (node, k, count, covered, data) VALUES "
                     "(%s, 5, 1, 2, '\\x00')", (team["lamp"],))
        conn.execute("INSERT INTO generation (id, node, provider, model, params, usage, "
                     "completion_index, raw, created) VALUES ('G0', %s, 'openai', 'gpt', "
                     "'{}', '{}', 0, 'R0', %s)", (team["lamp"], time.time()))
        gone = node_insert("GONE", "Deleted three weeks ago.", f"'{team['human']}'",
                           extra=mark, pruned=True, created=str(time.time() - weeks))
        conn.execute(gone.replace("{tree}", team["tree"]).replace("{root}", team["root"]))
        conn.execute(tree_insert("T0", "an old tree"))
        conn.execute("UPDATE tree SET archived = true, updated = %s WHERE id = 'T0'",
                     (time.time() - weeks,))
    return {"gone": "GONE", "old_tree": "T0"}


def tree_insert(tree_id: str, title: str = "hers", *, archived: bool = False,
                updated: str = "extract(epoch FROM now())") -> str:
    """An INSERT of a whole tree row (no root yet, as Loom makes one)."""
    return ("INSERT INTO tree (id, title, description, mode, system_context, archived, "
            f"ann_counter, summary_counter, created, updated) VALUES ('{tree_id}', '{title}', "
            f"'', 'buffer', '', {str(archived).lower()}, 0, 0, extract(epoch FROM now()), "
            f"{updated})")
