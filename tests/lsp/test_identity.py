"""No one is who they are not: a participant name an editor sends is created with no
permissions, and the human is asked in the editor what to grant it. The choice is a
``grant`` by the human through the executor; ``loom users`` grants are seen at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.lsp.conftest import sql
from tests.lsp.malformed import environment, fresh_db
from tests.lsp.raw import RawClient

QUESTION = "Loom: alice has no permissions yet. Grant alice what?"


def permissions(db: Path, name: str) -> list[str]:
    rows = sql(db, "SELECT permissions FROM participant WHERE name = ?", name)
    return json.loads(rows[0][0]) if rows else []


async def _prompt(client: RawClient) -> dict:  # type: ignore[type-arg]
    for _ in range(200):
        asks = [r for r in client.server_requests if r["method"] == "window/showMessageRequest"]
        if asks:
            return asks[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the server never asked what alice may do")


def _shown(client: RawClient) -> list[str]:
    return [n["params"]["message"] for n in client.notifications
            if n["method"] == "window/showMessage"]


def _human_text(db: Path, uri: str) -> str:
    """The path as the human sees it (what an editor would hold)."""
    from loom.lsp.views import render
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(db))
    try:
        return render(ws, uri, ws.human()).text
    finally:
        ws.db.close()


async def _save(client: RawClient, uri: str, text: str) -> dict:  # type: ignore[type-arg]
    answer = await client.answer(client.request("loom/save", {"uri": uri, "text": text}))
    assert answer is not None
    return answer["result"]  # type: ignore[no-any-return]


async def test_a_new_name_starts_with_nothing_until_the_human_grants(tmp_path: Path) -> None:
    db = fresh_db(tmp_path)
    env = environment(db)
    client = await RawClient.start(db)
    client.choose = "Write"
    try:
        client.policy["window/showMessageRequest"] = "never"  # the human has not chosen yet
        await client.initialize(db, participant="alice")
        ask = await _prompt(client)
        assert ask["params"]["message"] == QUESTION
        assert [a["title"] for a in ask["params"]["actions"]] == [
            "Read only", "Write", "Everything", "Not now"]
        # created, but with no permissions: a write is refused and changes nothing
        assert sql(db, "SELECT kind FROM participant WHERE name = 'alice'") == [("human",)]
        assert permissions(db, "alice") == []
        # nothing of the tree to read either (loom_aware guards every read)
        read = await client.answer(client.request("loom/read", {"uri": env.uri}))
        assert "PERMISSION_DENIED" in str(read), read
        text = _human_text(db, env.uri)
        refused = await _save(client, env.uri, text + " Alice writes.")
        assert refused["ok"] is False and "PERMISSION_DENIED" in refused["error"]
        assert not sql(db, "SELECT 1 FROM node WHERE content LIKE '%Alice writes%'")
    finally:
        await client.close()

    # The next session asks again; the human chooses "Write".
    client = await RawClient.start(db)
    client.choose = "Write"
    try:
        await client.initialize(db, participant="alice")
        await _prompt(client)
        granted = "✓ alice may now: loom_aware, loom_write, doc_read, doc_write"
        for _ in range(200):  # the server tells the human once the grant is made
            if granted in _shown(client):
                break
            await asyncio.sleep(0.05)
        assert granted in _shown(client)
        assert permissions(db, "alice") == ["loom_aware", "loom_write", "doc_read",
                                            "doc_write"]
        # the grant was the human's, through the executor (its trace entry)
        assert sql(db, "SELECT p.name, t.command, t.ok FROM trace_entry t JOIN participant p "
                       "ON p.id = t.participant WHERE t.command LIKE '→ grant%'") == [
            ("human", '→ grant "alice" loom_aware,loom_write,doc_read,doc_write', 1)]
        read = await client.answer(client.request("loom/read", {"uri": env.uri}))
        saved = await _save(client, env.uri, read["result"]["text"] + " Alice writes.")  # type: ignore[index]
        assert saved["ok"] is True, saved
        assert sql(db, "SELECT p.name FROM node n JOIN participant p ON p.id = n.author_id "
                       "WHERE n.content LIKE '%Alice writes%'") == [("alice",)]
    finally:
        await client.close()


async def test_not_now_grants_nothing_and_human_is_never_asked(tmp_path: Path) -> None:
    db = fresh_db(tmp_path)
    client = await RawClient.start(db)
    client.choose = "Not now"
    try:
        await client.initialize(db, participant="alice")
        await _prompt(client)
        await client.settle(0.5)
        assert permissions(db, "alice") == []
    finally:
        await client.close()
    client = await RawClient.start(db)
    try:
        await client.initialize(db)  # the default participant: the human
        await client.settle(1.0)
        assert not [r for r in client.server_requests
                    if r["method"] == "window/showMessageRequest"]
        assert len(permissions(db, "human")) == 6
    finally:
        await client.close()


async def test_a_grant_from_the_command_line_reaches_a_running_editor(tmp_path: Path) -> None:
    from loom.cli import main

    db = fresh_db(tmp_path)
    env = environment(db)
    client = await RawClient.start(db)
    client.choose = "Not now"
    try:
        await client.initialize(db, participant="alice", watchInterval=0.1)
        await _prompt(client)
        assert main(["--db", str(db), "users", "grant", "alice", "write"]) == 0
        for _ in range(100):  # the change log carries the grant to the server
            read = await client.answer(client.request("loom/read", {"uri": env.uri}))
            if "result" in read and read["result"].get("text"):  # type: ignore[union-attr]
                break
            await asyncio.sleep(0.1)
        text = read["result"]["text"]  # type: ignore[index]
        for _ in range(100):  # the change log carries the grant to the server
            saved = await _save(client, env.uri, text + " Granted.")
            if saved["ok"]:
                break
            await asyncio.sleep(0.1)
        assert saved["ok"] is True, saved
    finally:
        await client.close()
