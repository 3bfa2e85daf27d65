"""Typed text is never lost to another participant's lock or another editor session."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from pytest_lsp import LanguageClient

from tests.lsp.conftest import Editor, demo_uri, sql

_SCRIPT = """
import sys
from loom.store.db import open_database
from loom.store.workspace import Workspace
ws = Workspace(open_database(sys.argv[1]))
bot = ws.ensure_participant("collaborator", "model", "collaborator", ["loom_aware"])
node = ws.resolve(ws.tree(sys.argv[2]), sys.argv[3])
getattr(ws, sys.argv[4])(node, bot)
print("done", flush=True)
sys.stdin.read()  # a lock's holder lives on until told (a dead one's lock is free)
"""


def _lock(db: Path, tree: str, node: str, action: str) -> subprocess.Popen[str]:
    """``action`` done by another process, which stays alive (close its stdin to end it):
    a lock whose process has died is no lock (schema v15)."""
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, str(db), tree, node, action],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "done"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


async def test_typed_text_waits_for_the_lock_then_commits(client: LanguageClient,
                                                          db: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = demo_uri(db)
    editor.open(uri, (await editor.request("loom/read", {"uri": uri}))["text"])
    tree, tip = uri.split("/")[3], uri.split("/")[4]
    # the collaborator generates from the path's end, in a process that lives on
    holder = _lock(db, tree, tip, "acquire_turn")
    try:
        editor.append(uri, " Words typed meanwhile.")
        res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
        assert res["ok"] is False and "CONFLICT" in res["message"], res
        assert "collaborator is generating" in res["message"]
        assert sql(db, "SELECT count(*) FROM node WHERE content = "
                       "' Words typed meanwhile.'") == [(0,)]
        await asyncio.sleep(0.5)
        assert editor.texts[uri].endswith(" Words typed meanwhile.")  # kept in the buffer
        assert sql(db, "SELECT working FROM buffer_state") == [(" Words typed meanwhile.",)]
        # it yields: the commit goes through by itself
        _end(_lock(db, tree, tip, "release_turn"))
    finally:
        _end(holder)
    await editor.wait_for(lambda: sql(
        db, "SELECT count(*) FROM node WHERE content = ' Words typed meanwhile.'") == [(1,)])

async def test_two_dead_sessions_text_both_survive(client: LanguageClient, db: Path) -> None:
    """Two editors typed into the same node and both died: one's text comes back into the
    buffer, the other's is committed as its own version; nothing is lost."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = demo_uri(db)
    tree, tip = uri.split("/")[3], uri.split("/")[4]
    tip_id, human, content = sql(db, "SELECT n.id, p.id, n.content FROM node n, participant p "
                                     "WHERE n.local_id = ? AND p.name = 'human'", tip)[0]
    for session, extra, t in (("dead-one", " first editor", 1.0), ("dead-two",
                                                                   " second editor", 2.0)):
        sql(db, "INSERT INTO buffer_state (uri, participant, session, tree, tip, pending, "
                "working, updated) VALUES (?, ?, ?, ?, ?, ?, '', ?)", uri, human, session,
            tree, tip_id, json.dumps([{"node": tip_id, "content": content + extra}]), t)
    editor.open(uri, (await editor.request("loom/read", {"uri": uri}))["text"])
    await editor.wait_for(lambda: sql(
        db, "SELECT count(*) FROM node WHERE content = ?", content + " first editor") == [(1,)])
    assert editor.texts[uri].endswith(content + " second editor")  # the newest, in the buffer
    # and neither dead session's row is left to be recovered twice
    assert {r[0] for r in sql(db, "SELECT session FROM buffer_state")} <= {
        r[0] for r in sql(db, "SELECT id FROM editor_session")}
