"""A ``.loom`` file on disk (a ``file:`` URI, as Neovim and VS Code open one): its command
lines work in the writer's current tree, as in a ``loom:`` buffer. Completion offers the
verbs and the tree's node ids, hover shows a node's text, go-to-definition opens its path,
and running a line runs it (through the executor) and leaves the line where it is: the file
is the person's. Before, the server answered nothing in such a file."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.lsp.conftest import Editor, sql

STORY = "The house stood empty at the end of the lane."


def _file(tmp_path: Path, text: str) -> tuple[str, str]:
    path = tmp_path / "notes.loom"
    path.write_text(text, encoding="utf-8")
    return path.as_uri(), text


async def test_a_loom_file_on_disk_completes_hovers_jumps_and_runs(
        client: LanguageClient, db: Path, tmp_path: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    root = sql(db, "SELECT n.local_id FROM node n JOIN tree t ON t.root = n.id")[0][0]
    uri, text = _file(tmp_path, f"my plan for the story\n→ view {root}\n→ view ")
    editor.open(uri, text)

    got = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, len(text))))
    labels = [i.label for i in (got.items if got is not None else [])]
    assert root in labels, labels  # the current tree's node ids

    on_ref = editor.pos(uri, text.index(root) + 2)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=on_ref))
    assert hover is not None and STORY in str(hover.contents), hover

    where = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=on_ref))
    target = where[0] if isinstance(where, list) else where
    assert target is not None and target.uri.startswith("loom://path/"), where

    # typing goes on in the file as in any buffer: the server follows it
    editor.append(uri, f"\n→ annotate {root} \"a quiet start\"")
    ran = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.run", arguments=[{"uri": uri, "line": 3}]))
    assert ran["ok"], ran
    assert sql(db, "SELECT count(*) FROM node WHERE content = 'a quiet start'") == [(1,)]
    assert editor.texts[uri].endswith('"a quiet start"')  # the line stays: the file's own
    assert editor.edited == []  # and the server edited nothing in it

    # a line of the file that is not a command says so
    bad = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.run", arguments=[{"uri": uri, "line": 0}]))
    assert not bad["ok"] and "not a → command" in bad["message"], bad


async def test_closing_a_loom_file_forgets_it(client: LanguageClient, db: Path,
                                              tmp_path: Path) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri, text = _file(tmp_path, "→ view ")
    editor.open(uri, text)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    got = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, len(text))))
    assert got is None or not got.items
    # nothing of it was kept as a buffer of the workspace
    assert sql(db, "SELECT count(*) FROM buffer_state WHERE uri = ?", uri) == [(0,)]
