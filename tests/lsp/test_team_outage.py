"""A team's database goes down and comes back: two language
servers on one PostgreSQL workspace, a cluster of the test's own that it stops and starts.

While the database is down a save answers that the database is unreachable and that the
text is kept (not "a bug in Loom"), and the writer is told once; nothing is lost. When the
database is back what was typed while it was away is committed without a save (and a
save it refused), the writer is told, the other editor shows it, and edits after the
restart reach the other editor through NOTIFY again (the sync loop's safety read is 30 s
away here)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from loom.store import roles
from loom.store.db import SCHEMA_VERSION
from tests import pg_cluster
from tests.conftest import new_pg_database
from tests.lsp.conftest import Editor, make_demo
from tests.lsp.test_team import _demo_path, _editor, _open, _rows, start_team


@pytest.fixture
def cluster() -> Iterator[pg_cluster.Cluster]:
    bindir, why = pg_cluster.binaries()
    if bindir is None:
        pytest.skip(why)
    with pg_cluster.running() as running:
        yield running


@pytest.fixture
async def team(cluster: pg_cluster.Cluster):  # type: ignore[no-untyped-def]
    url = new_pg_database(cluster, template=False)
    alice, bob = await start_team(url)
    yield cluster, url, alice, bob
    for ed in (alice, bob):
        await ed.client.shutdown_session()


def _said(ed: Editor, *needles: str) -> bool:
    """Whether a window/showMessage held all of ``needles`` (pytest-lsp keeps them)."""
    return any(all(n in m.message for n in needles) for m in ed.client.messages)


async def test_a_save_while_the_database_is_down_is_kept_and_committed_when_it_is_back(
        team: Any) -> None:
    cluster, url, alice, bob = team
    _tree, _tip, uri = _demo_path(url)
    await _open(alice, uri)
    await _open(bob, uri)
    for ed in (alice, bob):  # (answered after the didOpen before it: both are open)
        await ed.request("loom/status", {"uri": uri})

    cluster.halt("fast")
    alice.append(uri, " The lights went out.")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert not res["ok"], res
    assert "the database is unreachable" in res["message"], res
    assert "your text is kept" in res["message"], res
    assert "bug" not in res["message"], res
    await alice.wait_for(lambda: _said(alice, "the database is unreachable"), timeout=10)
    assert alice.texts[uri].endswith(" The lights went out.")  # the editor keeps it
    # the other editor is told too (its listener lost the database), and keeps working
    await bob.wait_for(lambda: _said(bob, "the database is unreachable"), timeout=10)
    assert (await bob.request("loom/status", {"uri": uri}))["ok"] is not None

    cluster.resume()
    # no second save: the kept text is committed once the database answers again
    await alice.wait_for(lambda: _said(alice, "the database is back", "committed"),
                         timeout=20)
    assert _rows(url, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                      "WHERE n.content = %s", " The lights went out.") == [("alice",)]
    await bob.wait_for(lambda: bob.texts[uri].endswith(" The lights went out."), timeout=10)
    await bob.wait_for(lambda: _said(bob, "the database is back"), timeout=10)
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"] and "nothing to commit" in res["message"], res

    # after the restart, edits reach the other editor through NOTIFY again at once
    text = alice.texts[uri]
    at = text.index("stopped at the gate")
    alice.replace(uri, at, at + len("stopped"), "paused")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: "paused at the gate" in bob.texts[uri], timeout=4.0)


async def test_a_document_opened_while_the_database_is_down_opens_when_it_is_back(
        team: Any) -> None:
    """An editor opening a document (and typing in it) while the database is away: the
    open is kept with what is typed, made when it is back, and what was typed committed
    by itself, as the hint said."""
    cluster, url, alice, bob = team
    _tree, _tip, uri = _demo_path(url)
    await _open(alice, uri)
    text = (await bob.request("loom/read", {"uri": uri}))["text"]
    cluster.halt("fast")
    bob.open(uri, text)
    bob.append(uri, " Typed in the dark.")
    await bob.wait_for(lambda: _said(bob, "the database is unreachable"), timeout=10)
    cluster.resume()
    # the open is made, and what bob typed into it while the database was away committed
    await bob.wait_for(lambda: _said(bob, "the database is back", "committed"), timeout=20)
    assert _rows(url, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                      "WHERE n.content = %s", " Typed in the dark.") == [("bob",)]
    await alice.wait_for(lambda: alice.texts[uri].endswith(" Typed in the dark."), timeout=10)
    # the server has the document open: alice's text reaches it after bob's
    alice.append(uri, " The lamp came on.")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: bob.texts[uri].endswith(" Typed in the dark. The lamp came on."),
                       timeout=10)


def _psql(cluster: pg_cluster.Cluster, url: str, sql: str) -> None:
    done = subprocess.run([str(cluster.bindir / "psql"), "-X", "-q", url, "-f", "-"],
                          input=sql, text=True, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture
async def team_of_roles(cluster: pg_cluster.Cluster):  # type: ignore[no-untyped-def]
    """As docs/team.md sets a team up to let the database enforce it too: alice and bob
    each connect as a database role of their own."""
    url = new_pg_database(cluster, template=False)
    make_demo(url)  # type: ignore[arg-type]
    from loom.cli import main

    for name in ("alice", "bob"):
        assert main(["--db", url, "--participant", "human", "users", "add", name,
                     "--preset", "writer"]) == 0
    _psql(cluster, url, roles.script(SCHEMA_VERSION, writers=("alice", "bob")))
    dbname = url.split("@/")[1].split("?")[0]
    alice = await _editor(cluster.url(dbname, "alice"), "alice")
    bob = await _editor(cluster.url(dbname, "bob"), "bob")
    yield cluster, url, alice, bob
    for ed in (alice, bob):
        await ed.client.shutdown_session()


KEYS_PER_S = 10
TYPED_AWAY = "The harbour lights went out one by one, and still."  # 50 keys


async def test_what_is_typed_while_the_database_is_away_is_committed_when_it_is_back(
        team_of_roles: Any) -> None:
    """Alice types at 10 keys/s and never saves. The cluster stops in the middle of it
    (``pg_ctl stop -m immediate``) and starts again 5 s later: every key typed while it was
    away is committed by itself (the executor's commit, with what she typed before), and
    bob's editor shows it. Her other buffer, typed into only before the outage, keeps its
    unsaved text for her next save."""
    cluster, url, alice, bob = team_of_roles
    tree, tip, uri = _demo_path(url)
    other_tip = _rows(url, "SELECT n.local_id FROM node n JOIN tree t ON t.id = n.tree_id "
                           "WHERE n.kind = 'continuation' AND n.local_id <> %s AND NOT "
                           "n.pruned ORDER BY n.created LIMIT 1", tip)[0][0]
    other = f"loom://path/{tree}/{other_tip}"
    for ed, docs in ((alice, (uri, other)), (bob, (uri,))):
        for u in docs:
            await _open(ed, u)
            await ed.request("loom/status", {"uri": u})
    kept = ("SELECT count(*) FROM buffer_state b JOIN participant p ON p.id = b.participant "
            "WHERE p.name = 'alice' AND strpos(b.working, %s) > 0")
    alice.append(other, " Typed before.")
    alice.append(uri, " Before.")
    await alice.wait_for(lambda: _rows(url, kept, " Before.")[0][0] == 1
                         and _rows(url, kept, " Typed before.")[0][0] == 1, timeout=10)

    cluster.halt("immediate")
    for key in TYPED_AWAY:
        alice.append(uri, key)
        await asyncio.sleep(1 / KEYS_PER_S)
    assert _said(alice, "the database is unreachable")
    cluster.resume()
    back = time.monotonic()
    committed = ("SELECT n.content FROM node n JOIN participant p ON p.id = n.author_id "
                 "WHERE p.name = 'alice'")
    await alice.wait_for(lambda: any(TYPED_AWAY in c for (c,) in _rows(url, committed)),
                         timeout=20)
    took = time.monotonic() - back
    assert [c for (c,) in _rows(url, committed)] == [" Before." + TYPED_AWAY]
    # the server's commit went through the executor, as a save's does: it is in her trace
    traced = _rows(url, "SELECT t.command, t.ok FROM trace_entry t JOIN participant p ON "
                        "p.id = t.participant WHERE p.name = 'alice'")
    assert [ok for command, ok in traced if command.startswith("→ commit text:")] == [True], \
        traced
    await alice.wait_for(lambda: _said(alice, "the database is back", "committed your "
                                       "text in"), timeout=10)
    await bob.wait_for(lambda: bob.texts[uri].endswith(" Before." + TYPED_AWAY), timeout=10)
    # the buffer typed into only before the outage waits for her save, kept meanwhile
    assert _rows(url, kept, " Typed before.")[0][0] == 1
    assert alice.texts[other].endswith(" Typed before.")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"] and "nothing to commit" in res["message"], res
    print(f"typed while the database was away: {len(TYPED_AWAY)} keys, committed "
          f"{len(TYPED_AWAY)}, {took:.1f} s after it was back")
