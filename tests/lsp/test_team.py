"""Two language servers on two "machines" (two processes, each with its own connections)
on one PostgreSQL workspace: what one person writes shows up in the other's open buffer,
woken by NOTIFY — the sync's safety read is far off (``watchInterval`` 30 s) — and what the
other is typing meanwhile is kept."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import new_pg_database
from tests.lsp.conftest import NO_MODEL_ENV, SERVER, Editor, make_demo


def _rows(url: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(query, args).fetchall())


async def _editor(url: str, participant: str) -> Editor:
    """A language server process acting as ``participant``, and its editor."""
    client: LanguageClient = await ClientServerConfig(  # type: ignore[assignment]
        server_command=SERVER, server_env=NO_MODEL_ENV).start()
    ed = Editor(client)

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        for change in params.edit.document_changes or []:
            if isinstance(change, lsp.TextDocumentEdit):
                ed.apply_text_edits(change.text_document.uri, list(change.edits))
        return lsp.ApplyWorkspaceEditResult(applied=True)

    caps = client_capabilities("visual_studio_code")
    await client.initialize_session(lsp.InitializeParams(
        capabilities=caps, initialization_options={
            "database": url, "participant": participant,
            "documentProvider": "textDocumentContent",
            # the safety read of the change log comes every 5 s at the soonest: anything
            # faster than that was woken by NOTIFY
            "watchInterval": 30}))
    return ed


def _demo_path(url: str) -> tuple[str, str, str]:
    """The demo tree, the local id of the human's path end, and that path's URI."""
    tree, tip = _rows(url, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                           "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                           "WHERE h.name = 'human'")[0]
    return tree, tip, f"loom://path/{tree}/{tip}"


async def _open(ed: Editor, uri: str) -> None:
    ed.open(uri, (await ed.request("loom/read", {"uri": uri}))["text"])


async def start_team(url: str) -> tuple[Editor, Editor]:
    """The demo in the empty database ``url``, alice and bob made writers by its owner,
    and a language server (and editor) for each."""
    make_demo(url)  # type: ignore[arg-type]
    from loom.cli import main

    for name in ("alice", "bob"):  # nobody but the owner is born able: the owner says who
        assert main(["--db", url, "--participant", "human", "users", "add", name,
                     "--preset", "writer"]) == 0
    return await _editor(url, "alice"), await _editor(url, "bob")


@pytest.fixture
async def team(pg: Any):  # type: ignore[no-untyped-def]
    url = new_pg_database(pg)
    alice, bob = await start_team(url)
    yield url, alice, bob
    for ed in (alice, bob):
        await ed.client.shutdown_session()


async def test_edits_reach_the_other_machine_and_keep_what_is_typed(team) -> None:  # type: ignore[no-untyped-def]
    url, alice, bob = team
    _tree, _tip, uri = _demo_path(url)
    await _open(alice, uri)
    await _open(bob, uri)
    assert alice.texts[uri] == bob.texts[uri]

    bob.append(uri, " Bob is typing")  # not committed: his own
    await asyncio.sleep(0.3)
    text = alice.texts[uri]
    at = text.index("stopped at the gate")
    alice.replace(uri, at, at + len("stopped"), "paused")
    started = time.monotonic()
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: "paused at the gate" in bob.texts[uri], timeout=4.0)
    print(f"alice's edit reached bob's buffer in {1000 * (time.monotonic() - started):.0f} ms")
    assert bob.texts[uri].endswith(" Bob is typing")
    authors = _rows(url, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                         "WHERE n.content LIKE %s", "%paused at the gate%")
    assert authors == [("alice",)]

    # and the other way: bob commits his typing and an edit, alice sees the edit
    text = bob.texts[uri]
    at = text.index("seemed to watch her")
    bob.replace(uri, at, at + len("seemed"), "appeared")
    res = await bob.request("loom/save", {"uri": uri, "text": bob.texts[uri]})
    assert res["ok"], res
    await alice.wait_for(lambda: "appeared to watch her" in alice.texts[uri], timeout=4.0)
    assert _rows(url, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                      "WHERE n.content = ' Bob is typing'") == [("bob",)]


async def test_a_turn_lock_on_one_machine_refuses_a_commit_on_the_other(team) -> None:  # type: ignore[no-untyped-def]
    url, _alice, bob = team
    tree, tip, uri = _demo_path(url)
    await _open(bob, uri)
    # alice's process holds the turn on the path's end (as while generating)
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(url))
    node = ws.resolve(ws.tree(tree), tip)
    alice_p = ws.ensure_participant("alice", "human", "human", ["loom_aware", "loom_write"])
    ws.acquire_turn(node, alice_p)
    bob.append(uri, " Meanwhile.")
    res = await bob.request("loom/save", {"uri": uri, "text": bob.texts[uri]})
    assert not res["ok"] and "CONFLICT" in res["message"] and "alice" in res["message"]
    ws.release_turn(node, alice_p)  # NOTIFY: bob's server retries by itself
    await bob.wait_for(lambda: _rows(url, "SELECT count(*) FROM node WHERE content = "
                                          "' Meanwhile.'") == [(1,)], timeout=4.0)
    ws.db.close()


async def test_text_appended_on_one_machine_shows_in_the_other_buffer(team) -> None:  # type: ignore[no-untyped-def]
    """Alice writes on where the path ends; Bob's open buffer of the same
    path shows her text (only loom/documentChanged came before), and what Bob is typing at
    the end stays his, after it. A commit of Bob's then continues from Alice's node."""
    url, alice, bob = team
    _tree, _tip, uri = _demo_path(url)
    await _open(alice, uri)
    await _open(bob, uri)
    bob.append(uri, " Bob is typing.")
    await asyncio.sleep(0.3)
    alice.append(uri, " Alice wrote on.")
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: "Alice wrote on." in bob.texts[uri], timeout=4.0)
    assert bob.texts[uri].endswith(" Alice wrote on. Bob is typing."), bob.texts[uri][-80:]
    res = await bob.request("loom/save", {"uri": uri, "text": bob.texts[uri]})
    assert res["ok"], res
    assert _rows(url, "SELECT a.content FROM node b JOIN node a ON a.id = b.parent "
                      "WHERE b.content = ' Bob is typing.'") == [(" Alice wrote on.",)]
    await alice.wait_for(lambda: alice.texts[uri].endswith(" Alice wrote on. Bob is typing."),
                         timeout=4.0)
