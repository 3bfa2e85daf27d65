"""Typed text survives what other participants and editors do: an editor opening
a path with the wrong text, and another participant versioning the node being typed in."""

from __future__ import annotations

import json
import subprocess
import sys
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


ROOT = "The house stood empty at the end of the lane."


def _cli_edit_root(db: Path, content: str) -> None:
    """Another participant (here the CLI) saves a version of the root."""
    tree = sql(db, "SELECT id FROM tree")[0][0]
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), "do", tree,
                          f'→ edit root "{content}"'], capture_output=True, text=True,
                         check=True)
    assert out.stdout.startswith("✓ created version"), out


def _root_ids(db: Path) -> list[tuple[str, str, str]]:
    """(id, label, content) of the root and its versions, oldest first."""
    return sql(db, "SELECT id, label, content FROM node WHERE kind = 'root' "
                   "ORDER BY version_number")


async def _type_into_root(editor: Editor, db: Path, start: int, end: int,
                          new: str) -> tuple[str, str]:
    uri = demo_uri(db)
    editor.open(uri, await _rendered(editor, uri))
    assert editor.texts[uri].startswith(ROOT)
    editor.replace(uri, start, end, new)
    mine = ROOT[:start] + new + ROOT[end:]
    root = _root_ids(db)[0][0]
    await editor.wait_for(lambda: _state(db) and json.loads(_state(db)[0][0]) == [
        {"node": root, "content": mine}])
    return uri, mine


def _statuses(editor: Editor) -> list[str]:
    return [p.message if hasattr(p, "message") else p.get("message")  # type: ignore[union-attr]
            for kind, p in editor.notifications if kind == "loom/status"]


async def test_a_pending_edit_is_rebased_onto_their_version(client: LanguageClient,
                                                            db: Path) -> None:
    """Edits that do not touch each other merge: the buffer shows their version with the
    human's edit re-applied, kept as pending text of it, and the human is told."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri, _mine = await _type_into_root(editor, db, 9, 9, " old")
    theirs = "The house stood empty at the end of the long lane."
    _cli_edit_root(db, theirs)
    merged = "The house old stood empty at the end of the long lane."
    await editor.wait_for(lambda: editor.texts[uri].startswith(merged + " She hadn't"))
    await editor.wait_for(lambda: any("re-applied" in m.message for m in client.messages))
    await editor.wait_for(lambda: any(m and "re-applied" in m for m in _statuses(editor)))
    version = _root_ids(db)[1]
    assert version[2] == theirs
    await editor.wait_for(lambda: json.loads(_state(db)[0][0]) == [
        {"node": version[0], "content": merged}])  # kept as an edit of their version
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    assert [c for _i, _l, c in _root_ids(db)] == [ROOT, theirs, merged]
    assert sql(db, "SELECT edited_from FROM node WHERE content = ?", merged) == [
        (version[0],)]


async def test_a_conflicting_edit_is_kept_as_its_own_version(client: LanguageClient,
                                                             db: Path) -> None:
    """Edits of the same words do not merge: the human's text stays in the buffer as a
    pending edit of the node it was typed into, and saving makes it a version beside
    theirs. Neither side is lost, and the human is told."""
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri, mine = await _type_into_root(editor, db, 16, 21, "silent")
    theirs = "The house stood deserted at the end of the lane."
    _cli_edit_root(db, theirs)
    await editor.wait_for(lambda: any("conflicts" in m.message for m in client.messages))
    await editor.wait_for(lambda: any(m and "kept as your own version" in m
                                      for m in _statuses(editor)))
    assert editor.texts[uri].startswith(mine + " She hadn't")
    original = _root_ids(db)[0][0]
    assert json.loads(_state(db)[0][0]) == [{"node": original, "content": mine}]
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    assert [c for _i, _l, c in _root_ids(db)] == [ROOT, theirs, mine]
    assert sql(db, "SELECT edited_from FROM node WHERE content = ?", mine) == [(original,)]
    assert editor.texts[uri].startswith(mine + " She hadn't")
