"""Who may read: every read of a tree's text checks
``loom_aware``, in one place (``permissions.require_read``), whatever asks for it.

A participant with only ``doc_read`` was refused ``→ view``, ``→ tree``, ``→ search`` and
export, yet got the tree's text from seven other read paths. Each of them is tried here in
a real server (with VS Code's and Neovim's capabilities): each refuses, or answers with
nothing of the tree, while a document (what ``doc_read`` grants) still reads. Opening a
path as that participant made a ``collaborator`` holding all six permissions; it makes
none now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import NO_MODEL_ENV, SERVER, Editor, make_demo, plain, sql, start_session

SECRET = "The house stood empty"  # the demo tree's first words: never shown to the reader


@pytest.fixture
def reader_db(tmp_path: Path) -> Path:
    path = tmp_path / "loom.db"
    make_demo(path)
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(path))
    ws.ensure_participant("reader", "human", "human", ["doc_read"])
    ws.db.close()
    return path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=NO_MODEL_ENV),
                    params=["visual_studio_code", "neovim"])
async def reader(request: Any, lsp_client: LanguageClient, reader_db: Path):  # type: ignore[no-untyped-def]
    async for _ in start_session(request, lsp_client, reader_db, participant="reader"):
        yield


def _uri(db: Path) -> tuple[str, str]:
    tree, tip = sql(db, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                        "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                        "WHERE h.name = 'human'")[0]
    return f"loom://path/{tree}/{tip}", tree


def _refused(answer: Any) -> bool:
    text = str(answer)
    return "PERMISSION_DENIED" in text and "loom_aware not enabled" in text \
        and SECRET not in text


async def test_every_read_of_a_trees_text_needs_loom_aware(reader: LanguageClient,
                                                          reader_db: Path) -> None:
    editor: Editor = reader.editor  # type: ignore[attr-defined]
    db = reader_db
    participants = sql(db, "SELECT name, permissions FROM participant ORDER BY name")
    uri, tree = _uri(db)
    root = sql(db, "SELECT local_id FROM node WHERE id = (SELECT root FROM tree "
                   "WHERE id = ?)", tree)[0][0]

    async def cmd(name: str, args: dict[str, Any]) -> Any:
        return plain(await editor.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=name, arguments=[args])))

    checks: dict[str, Any] = {
        "loom/read (a path)": await editor.request("loom/read", {"uri": uri}),
        "loom/read (the overview)": await editor.request(
            "loom/read", {"uri": f"loom://tree/{tree}"}),
        "loom/picture": await editor.request("loom/picture", {"tree": tree}),
        "loom/nodeInfo": await editor.request("loom/nodeInfo", {"tree": tree, "node": root}),
        "loom.search": await cmd("loom.search", {"query": "house"}),
        "loom.siblings": await cmd("loom.siblings", {"uri": uri, "node": root}),
    }
    for name, answer in checks.items():
        assert _refused(answer), (name, answer)
    symbols = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(
        query="house"))
    assert not symbols, symbols
    # an editor that opens the path with text of its own still gets nothing of the tree
    editor.open(uri, "")
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(0, 2)))
    assert hover is None or SECRET not in str(hover)
    # what doc_read grants still reads
    doc = await editor.request("loom/read", {"uri": "loom://doc/character%20notes"})
    assert doc.get("text"), doc
    # the command line too
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), "--participant",
                          "reader", "tree", tree], capture_output=True, text=True,
                         env=NO_MODEL_ENV)
    assert out.returncode == 1 and "PERMISSION_DENIED: loom_aware not enabled" in out.stderr
    assert SECRET not in out.stdout
    # nobody was made or changed by the reader's session (a session that cannot make a
    # collaborator itself: tests/unit/test_details.py)
    assert sql(db, "SELECT name, permissions FROM participant ORDER BY name") == participants


def test_participant_names_are_compared_exactly(tmp_path: Path) -> None:
    """Item 12: " human " and "human" + a no-break space acted as the human."""
    from loom.app import default_participant

    assert default_participant(None, " human ") == " human "
    assert default_participant(None, "human\u00a0") == "human\u00a0"
    db = tmp_path / "loom.db"
    make_demo(db)
    for name in (" human ", "human\u00a0"):
        out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db),
                              "--participant", name, "do", "The House at the End of the "
                              "Lane", '→ annotate root "x"'], capture_output=True, text=True,
                             env=NO_MODEL_ENV)
        assert out.returncode == 1 and "does not exist" in out.stderr, (name, out)
    assert sql(db, "SELECT count(*) FROM node WHERE content = 'x'") == [(0,)]
