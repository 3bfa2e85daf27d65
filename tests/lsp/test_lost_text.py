"""Typed text survives what other participants and editors do (issue 13): an editor opening
a path with the wrong text, and another participant versioning the node being typed in."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_lsp import LanguageClient

from tests.lsp.conftest import Editor, demo_uri, sql


async def _rendered(editor: Editor, uri: str) -> str:
    return str((await editor.request("loom/read", {"uri": uri}))["text"])


def _state(db: Path) -> list[tuple[str, str]]:
    return sql(db, "SELECT pending, working FROM buffer_state")


async def test_an_empty_open_never_blanks_the_path(client: LanguageClient, db: Path) -> None:
    """An editor opening the path empty gets the tree's text; one keystroke is one
    keystroke, and a save makes no empty versions of the path's nodes."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = demo_uri(db)
    rendered = await _rendered(editor, uri)
    nodes = sql(db, "SELECT count(*) FROM node")[0][0]
    editor.open(uri, "")
    editor.append(uri, "x")  # (before or after the tree's text arrives: the same)
    await editor.wait_for(lambda: _state(db) == [("[]", "x")])
    assert editor.texts[uri] == rendered + "x"
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    assert sql(db, "SELECT count(*) FROM node WHERE content = ''") == [(0,)]
    assert sql(db, "SELECT count(*) FROM node")[0][0] == nodes + 1
    assert sql(db, "SELECT content FROM node WHERE local_id = ?", uri.rsplit("/", 1)[1]) \
        != [("",)]
    assert editor.texts[uri] == rendered + "x"


async def test_a_stale_open_is_replaced_and_the_human_told(client: LanguageClient,
                                                           db: Path) -> None:
    """A stale copy (a node's text as it once was) does not become an edit of the node."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = demo_uri(db)
    rendered = await _rendered(editor, uri)
    stale = rendered.replace("empty", "deserted", 1)
    editor.open(uri, stale)
    await editor.wait_for(lambda: editor.texts[uri] == rendered)
    await editor.wait_for(lambda: any("the editor's copy differed" in m.message
                                      for m in client.messages))
    editor.append(uri, " More.")
    await editor.wait_for(lambda: _state(db) == [("[]", " More.")])
    assert sql(db, "SELECT count(*) FROM node WHERE content LIKE '%deserted%'") == [(0,)]


async def test_text_typed_after_the_open_text_is_kept(client: LanguageClient,
                                                      db: Path) -> None:
    """An editor that kept keys a killed server never got opens with them at the end:
    they are the human's working text."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = demo_uri(db)
    rendered = await _rendered(editor, uri)
    editor.open(uri, rendered + " Keys the dead server missed.")
    await editor.wait_for(lambda: _state(db) == [("[]", " Keys the dead server missed.")])
    assert editor.texts[uri] == rendered + " Keys the dead server missed."
    assert json.loads(_state(db)[0][0]) == []
