"""A kill right after a save, and the editor reopening its text.

The writer types a sentence at the end of the path and saves; the server is killed a few
milliseconds after the save was sent (before, while or after it commits and writes the
buffer's state); the editor still shows its text and opens it again on a fresh server, as
VS Code does after a crash. The fresh server must take the editor's text as it is (it
once replaced it with an older saved copy, "the editor's copy differed (458 characters…)",
and the next save found nothing to commit), and the sentence ends up in the tree exactly
once, by that save or by the one after; typed inside a node, it is one version."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from tests.lsp.conftest import make_demo
from tests.lsp.stdio_client import StdioClient, Zygote

#: (typed inside a node?, ms from the save to the kill): the duplicate came at 5 ms
TRIALS = ((False, 0), (False, 5), (True, 5))
INSIDE_AT = 16  # "The house stood |empty": inside the demo path's first node


def _query(db: str | Path, query: str, *args: object) -> list[tuple[object, ...]]:
    """``query`` (``?`` placeholders) on the workspace, SQLite file or PostgreSQL URL."""
    if isinstance(db, str):
        import psycopg

        with psycopg.connect(db) as conn:
            return list(conn.execute(query.replace("?", "%s"), args).fetchall())
    con = sqlite3.connect(db)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()


def _count(db: str | Path, text: str) -> int:
    return int(_query(db, "SELECT count(*) FROM node WHERE content LIKE ? AND NOT pruned",
                      f"%{text}%")[0][0])


async def _session(zygote: Zygote, db: str | Path) -> StdioClient:
    client = await zygote.fork()
    await client.initialize(db)
    return client


async def _trial(zygote: Zygote, db: str | Path, uri: str, n: int, delay_ms: int,
                 inside: bool) -> None:
    client = await _session(zygote, db)
    text = await client.read(uri)
    client.open(uri, text)
    sentence = f" Trial {n}: she wrote and saved."
    at = INSIDE_AT if inside else len(text)
    for i, ch in enumerate(sentence):  # typed, then a moment's pause before the save
        client.replace(uri, at + i, at + i, ch)
        await client.flush()
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.15)
    save = asyncio.ensure_future(client.request(
        "loom/save", {"uri": uri, "text": client.texts[uri]}))
    await client.flush()
    await asyncio.sleep(delay_ms / 1000)
    shown = client.texts[uri]  # what the editor shows when the server dies
    await client.kill()
    save.cancel()

    again = await _session(zygote, db)
    again.open(uri, shown)
    res = await again.request("loom/save", {"uri": uri, "text": shown})
    await asyncio.sleep(0.2)
    told = [p.get("message", "") for m, p in again.notifications if m == "window/showMessage"]
    where = f"killed {delay_ms} ms after the save, typed {'inside' if inside else 'after'}"
    assert not any("the editor's copy differed" in t for t in told), (where, told)
    assert again.texts[uri] == shown, (where, again.texts[uri][-120:], shown[-120:])
    assert res["ok"], (where, res)
    assert _count(db, sentence.strip()) == 1, (where, res)
    await again.stop()


async def test_reopening_after_a_kill_just_after_a_save_keeps_the_editors_text(
        own_db_target: str | Path, tmp_path: Path) -> None:
    db = own_db_target
    make_demo(db)  # type: ignore[arg-type]
    tree, tip = _query(db, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                           "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                           "WHERE h.name = 'human'")[0]
    uri = f"loom://path/{tree}/{tip}"
    zygote = await Zygote.start(tmp_path / "fifos", tmp_path / "servers.log")
    try:
        for n, (inside, delay_ms) in enumerate(TRIALS):
            await _trial(zygote, db, uri, n, delay_ms, inside)
    finally:
        await zygote.close()
