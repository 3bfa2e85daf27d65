"""One way into the tree: every request and command that can change the workspace or
write a file runs through the executor, with the editor session's participant.

A participant who may read but not write (``loom_aware`` and ``doc_read``; one without
``loom_aware`` cannot even read a path: ``test_read_path.py``) tries each of them in a
real server: each answers ``✗ PERMISSION_DENIED`` (or, for a node of another tree, an
error naming it), the database is unchanged, and no file is written."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import NO_MODEL_ENV, SERVER, Editor, make_demo, sql, start_session

WATCHED = ("tree", "node", "edge", "edge_source", "document", "link", "position", "pin",
           "stash", "branch_lock", "participant")


def digest(db: Path) -> str:
    """Every table a write could touch, hashed (buffer state is the editor's scratch)."""
    con = sqlite3.connect(db)
    try:
        h = hashlib.sha256()
        for table in WATCHED:
            for row in con.execute(f"SELECT * FROM {table} ORDER BY 1"):
                h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        con.close()


@pytest.fixture
def reader_db(tmp_path: Path) -> Path:
    path = tmp_path / "loom.db"
    make_demo(path)
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(path))
    ws.ensure_participant("reader", "human", "human", ["loom_aware", "doc_read"])
    other = ws.create_tree("Elsewhere", root_content="Another story.")
    ws.db.close()
    (tmp_path / "other-tree-root").write_text(other.root or "")
    return path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=NO_MODEL_ENV),
                    params=["visual_studio_code", "neovim"])
async def reader(request: Any, lsp_client: LanguageClient, reader_db: Path):  # type: ignore[no-untyped-def]
    async for _ in start_session(request, lsp_client, reader_db, participant="reader",
                                 workspace=reader_db.parent / "workspace"):
        yield


def _uri(db: Path) -> str:
    tree, tip = sql(db, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                        "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                        "WHERE h.name = 'human'")[0]
    return f"loom://path/{tree}/{tip}"


async def _cmd(editor: Editor, name: str, args: dict[str, Any]) -> dict[str, Any]:
    from tests.lsp.conftest import plain

    return plain(await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[args])))


def _denied(answer: dict[str, Any]) -> bool:
    return answer["ok"] is False and "PERMISSION_DENIED" in answer["message"]


async def test_every_write_is_refused_without_the_permission(reader: LanguageClient,
                                                             reader_db: Path) -> None:
    editor: Editor = reader.editor  # type: ignore[attr-defined]
    db = reader_db
    uri = _uri(db)
    text = (await editor.request("loom/read", {"uri": uri}))["text"]
    editor.open(uri, text)
    before = digest(db)
    tree = uri.split("/")[3]
    root = sql(db, "SELECT root FROM tree WHERE id = ?", tree)[0][0]
    other_root = (db.parent / "other-tree-root").read_text()
    workspace = db.parent / "workspace"
    workspace.mkdir(exist_ok=True)
    outside = db.parent / "outside.json"
    inside = workspace / "inside.json"
    export_src = db.parent / "tree.json"
    export_src.write_text(json.dumps({"format": "open-loom", "version": "2.0", "trees": []}))

    checks: dict[str, dict[str, Any]] = {}
    # typing committed by a save (new text at the end, an edited node)
    editor.append(uri, " Typed by a reader.")
    editor.replace(uri, 0, 3, "Thé")
    checks["loom/save (path)"] = await editor.request(
        "loom/save", {"uri": uri, "text": editor.texts[uri]})
    checks["loom.commit"] = await _cmd(editor, "loom.commit", {"uri": uri})
    checks["loom.continue"] = await _cmd(editor, "loom.continue", {"uri": uri, "n": 2})
    checks["loom.branch"] = await _cmd(editor, "loom.branch", {"uri": uri, "node": root})
    checks["loom.cycleSibling"] = await _cmd(editor, "loom.cycleSibling",
                                             {"uri": uri, "line": 0, "character": 60})
    checks["loom.annotate"] = await _cmd(editor, "loom.annotate",
                                         {"uri": uri, "node": root, "text": "a note"})
    checks["loom.askCollaborator"] = await _cmd(editor, "loom.askCollaborator",
                                                {"uri": uri, "message": "annotate the root"})
    checks["loom/save (doc)"] = await editor.request(
        "loom/save", {"uri": "loom://doc/character%20notes", "text": "Overwritten."})
    checks["loom/newTree"] = await editor.request("loom/newTree", {"title": "Mine"})
    checks["loom/import (content)"] = await editor.request(
        "loom/import", {"content": export_src.read_text(), "name": "tree.json"})
    checks["loom/import (path outside)"] = await editor.request(
        "loom/import", {"path": str(export_src)})
    checks["loom/export (outside the workspace)"] = await editor.request(
        "loom/export", {"tree": tree, "format": "md", "path": str(outside)})
    checks["loom/export (inside the workspace)"] = await editor.request(
        "loom/export", {"tree": tree, "format": "md", "path": str(inside)})
    for name, answer in checks.items():
        assert _denied(answer), (name, answer)
    # a node of another tree is not reachable by id from this document, even as a move
    cross = await _cmd(editor, "loom.branch", {"uri": uri, "node": other_root})
    assert cross["ok"] is False and ("CROSS_TREE" in cross["message"]
                                      or "PERMISSION_DENIED" in cross["message"]), cross
    # a command line typed and run
    editor.append(uri, f'\n→ annotate {root[-6:].lower()} "x"')
    line = editor.doc(uri).line_count - 1
    ran = await _cmd(editor, "loom.run", {"uri": uri, "line": line})
    assert ran["ok"] is False, ran
    assert digest(db) == before
    assert not outside.exists() and not inside.exists()
    # the typed text is still pending, not lost
    assert "Typed by a reader." in editor.texts[uri]


async def test_writes_work_with_the_permission_and_exports_stay_in_the_workspace(
        client: LanguageClient, db: Path, tmp_path: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = _uri(db)
    tree = uri.split("/")[3]
    outside = tmp_path / "elsewhere" / "out.md"
    outside.parent.mkdir()
    res = await editor.request("loom/export", {"tree": tree, "format": "md",
                                               "path": str(outside)})
    assert _denied(res) and not outside.exists()
    # without a path the client gets the text and writes the file itself
    res = await editor.request("loom/export", {"tree": tree, "format": "md"})
    assert res["ok"] and "The house stood empty" in res["text"]
    # another loom's file: its text, and what that loom cannot hold in the message
    res = await editor.request("loom/export", {"tree": tree, "format": "socketteer"})
    assert res["ok"] and json.loads(res["text"])["root"]["text"].startswith("The house")
    assert "not in the file (socketteer/loom cannot hold it):" in res["message"], res
    # a binary one (a Tapestry weave) as base64, for the editor to write
    res = await editor.request("loom/export", {"tree": tree, "format": "tapestry"})
    assert res["ok"] and "text" not in res and res["extension"] == ".tapestry", res
    assert len(base64.b64decode(res["base64"])) > 100
    made = await editor.request("loom/newTree", {"title": "Fresh"})
    assert made["ok"] and made["uri"].startswith("loom://path/"), made
    assert sql(db, "SELECT count(*) FROM tree WHERE title = 'Fresh'") == [(1,)]
    # every one of them is in the human's trace
    traced = [r[0] for r in sql(db, "SELECT command FROM trace_entry t JOIN participant p "
                                    "ON p.id = t.participant WHERE p.name = 'human'")]
    assert any(c.startswith("→ export") for c in traced)
    assert any(c.startswith('→ new tree "Fresh"') for c in traced)
