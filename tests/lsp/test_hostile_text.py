"""Text that cannot be stored. JSON lets a client send a lone UTF-16
surrogate (``"lone\\ud800"``); typed into a buffer it stopped crash protection ("could not
keep the uncommitted text", UnicodeEncodeError on every save), made loom/save answer
"✗ CONFLICT: … a bug", and a ``$/cancelRequest`` whose id is an object logged a TypeError.
Now such text is repaired at the edge, and the editor is told."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.lsp.conftest import sql
from tests.lsp.malformed import environment, fresh_db
from tests.lsp.raw import RawClient


async def test_a_lone_surrogate_is_repaired_at_the_edge_and_said(tmp_path: Path) -> None:
    db = fresh_db(tmp_path)
    env = environment(db)
    client = await RawClient.start(db)
    try:
        await client.initialize(db)
        text = (await client.answer(client.request("loom/read", {"uri": env.uri})))[
            "result"]["text"]  # type: ignore[index]
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": env.uri, "languageId": "loom", "version": 1, "text": text}})
        # the JSON escape reaches the server as a lone surrogate
        typed = " She wrote lone\ud800 words."
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": env.uri, "version": 2},
            "contentChanges": [{"text": text + typed}]})
        client.notify("$/cancelRequest", {"id": {"x": 1}})
        saved = await client.answer(client.request(
            "loom/save", {"uri": env.uri, "text": text + typed}))
        assert saved is not None and saved["result"]["ok"] is True, saved
        assert sql(db, "SELECT content FROM node WHERE content LIKE '%She wrote lone%'") == [
            (" She wrote lone\ufffd words.",)]
        for _ in range(100):
            shown = [n["params"]["message"] for n in client.notifications
                     if n["method"] == "window/showMessage"]
            if any("lone UTF-16 surrogate" in m for m in shown):
                break
            await asyncio.sleep(0.05)
        assert any("replaced with \ufffd" in m for m in shown), shown
        # a loom: URI holding one reads as any unknown URI does: an answer, not a crash
        bad = await client.answer(client.request("loom/read", {"uri": "loom://path/x\ud800"}))
        assert bad is not None and ("error" in bad or "result" in bad)
    finally:
        await client.close()
    log = client.stderr()
    assert "UnicodeEncodeError" not in log and "TypeError" not in log, log[-2000:]
    assert "could not keep the uncommitted text" not in log


async def test_cancelling_a_request_already_answered_is_quiet(tmp_path: Path) -> None:
    """VS Code cancels requests it no longer needs, often after their answer: pygls logged
    a warning for each ("Cancel notification for unknown message id"), which the editor's
    log shows as an error."""
    db = fresh_db(tmp_path)
    env = environment(db)
    client = await RawClient.start(db)
    try:
        await client.initialize(db)
        asked = client.request("loom/read", {"uri": env.uri})
        assert (await client.answer(asked))["result"]["text"]  # type: ignore[index]
        client.notify("$/cancelRequest", {"id": asked})
        again = await client.answer(client.request("loom/read", {"uri": env.uri}))
        assert again is not None and "result" in again
    finally:
        await client.close()
    assert "Cancel notification for unknown message id" not in client.stderr()
