"""Undo across a move of the view: a sibling switch or a branch
rewrites the buffer; the editor's undo brings the old branch's text back. That is the move
undone — the view goes back, nothing is written, a save finds nothing to commit — and a
redo is the move again. Before, the old text was taken as the human's edit of the new
branch and a save made versions of it (``dqnw2j'``) and a node reading "The"."""

from __future__ import annotations

from lsprotocol import types as lsp

from loom.lsp.documents import minimal_edit
from tests.lsp.conftest import Editor, open_demo, sql


def undo_to(editor: Editor, uri: str, text: str) -> None:
    """What an editor's undo sends: the one change that brings ``text`` back."""
    edit = minimal_edit(editor.texts[uri], text)
    assert edit is not None
    editor.replace(uri, *edit)


def tip(editor: Editor) -> str:
    return sql(editor.db, "SELECT n.local_id FROM position p JOIN participant h ON h.id = "
                          "p.participant JOIN node n ON n.id = p.tip "
                          "WHERE h.name = 'human'")[0][0]


async def run(editor: Editor, command: str, args: dict) -> dict:  # type: ignore[type-arg]
    return await editor.client.workspace_execute_command_async(  # type: ignore[no-any-return]
        lsp.ExecuteCommandParams(command=command, arguments=[args]))


async def test_undo_after_a_sibling_switch_goes_back_and_writes_nothing(
        editor: Editor) -> None:
    uri = await open_demo(editor)
    nodes = sql(editor.db, "SELECT count(*) FROM node")
    before, tip_before = editor.texts[uri], tip(editor)
    lid = sql(editor.db, "SELECT local_id FROM node WHERE content LIKE "
                         "'%windows seemed to watch%'")[0][0]
    res = await run(editor, "loom.cycleSibling", {"uri": uri, "node": lid, "delta": 1})
    assert res["ok"], res
    await editor.wait_for(lambda: "walnut trees had dropped" in editor.texts[uri])
    after, tip_after = editor.texts[uri], tip(editor)
    assert tip_after != tip_before
    # Ctrl+Z / u: the old branch's text is back; the view follows it back
    undo_to(editor, uri, before)
    await editor.wait_for(lambda: tip(editor) == tip_before)
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"] and "nothing to commit" in saved["message"], saved
    assert editor.texts[uri] == before
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes  # no versions, no "The"
    # Ctrl+Shift+Z / Ctrl-R: the switch again
    undo_to(editor, uri, after)
    await editor.wait_for(lambda: tip(editor) == tip_after)
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"] and "nothing to commit" in saved["message"], saved
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes
    # typing after the move is typing, as always
    editor.append(uri, " She smiled.")
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"] and "nothing to commit" not in saved["message"], saved
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' She smiled.'") == [(1,)]


async def test_undo_after_a_branch_goes_back(editor: Editor) -> None:
    uri = await open_demo(editor)
    nodes = sql(editor.db, "SELECT count(*) FROM node")
    before, tip_before = editor.texts[uri], tip(editor)
    lid = sql(editor.db, "SELECT local_id FROM node WHERE content LIKE "
                         "'%windows seemed to watch%'")[0][0]
    res = await run(editor, "loom.branch", {"uri": uri, "node": lid})
    assert res["ok"], res
    await editor.wait_for(lambda: editor.texts[uri] != before)
    assert tip(editor) == lid
    undo_to(editor, uri, before)
    await editor.wait_for(lambda: tip(editor) == tip_before)
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"] and "nothing to commit" in saved["message"], saved
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes
