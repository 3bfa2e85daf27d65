"""A team's database goes down and comes back: two language
servers on one PostgreSQL workspace, a cluster of the test's own that it stops and starts.

While the database is down a save answers that the database is unreachable and that the
text is kept (not "a bug in Loom"), and the writer is told once; nothing is lost. When the
database is back the kept text is committed without a second save, the writer is told,
the other editor shows it, and edits after the restart reach the other editor through
NOTIFY again (the sync loop's safety read is 30 s away here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg_cluster
from tests.conftest import new_pg_database
from tests.lsp.conftest import Editor
from tests.lsp.test_team import _demo_path, _open, _rows, start_team


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
    open is kept with what is typed, and made when it is back; the text is then the
    writer's to save."""
    cluster, url, alice, bob = team
    _tree, _tip, uri = _demo_path(url)
    await _open(alice, uri)
    text = (await bob.request("loom/read", {"uri": uri}))["text"]
    cluster.halt("fast")
    bob.open(uri, text)
    bob.append(uri, " Typed in the dark.")
    await bob.wait_for(lambda: _said(bob, "the database is unreachable"), timeout=10)
    cluster.resume()
    await bob.wait_for(lambda: _said(bob, "the database is back"), timeout=20)
    # the server has the document open: alice's text reaches it, bob's typing stays after
    alice.append(uri, " The lamp came on.")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: bob.texts[uri].endswith(" The lamp came on. Typed in the dark."),
                       timeout=10)
    res = await bob.request("loom/save", {"uri": uri, "text": bob.texts[uri]})
    assert res["ok"], res
    assert _rows(url, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                      "WHERE n.content = %s", " Typed in the dark.") == [("bob",)]
