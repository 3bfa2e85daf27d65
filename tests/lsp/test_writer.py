"""The writer's loom through the protocol: edits Loom makes leave the document
clean, generations end with a finished message and survive their tab closing."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.fake_provider import (
    OPENAI_COMPLETIONS,
    FakeProvider,
    openai_completion_stream,
)
from tests.lsp.conftest import (
    Editor,
    fake_model_session,
    open_demo,
    plain,
    sql,
)

fake, client = fake_model_session("writer", "fake-base", "subject")


async def run(editor: Editor, command: str, args: dict[str, Any]) -> Any:
    return await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command, arguments=[args]))


def cleans(editor: Editor, uri: str) -> list[int]:
    found = [plain(p) for kind, p in editor.notifications if kind == "loom/clean"]
    return [p["version"] for p in found if p["uri"] == uri]


async def test_a_sibling_switch_leaves_the_document_clean(editor: Editor) -> None:
    uri = await open_demo(editor)
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    cycle = next(lens for lens in lenses if lens.command.title.startswith("◀"))
    res = await run(editor, "loom.cycleSibling", cycle.command.arguments[0])
    assert res["ok"], res
    # once the client has the new text, the server says it holds nothing uncommitted
    await editor.wait_for(lambda: editor.versions[uri] in cleans(editor, uri))


async def test_typed_text_is_never_declared_clean(editor: Editor) -> None:
    uri = await open_demo(editor)
    editor.append(uri, " She went in.")
    await asyncio.sleep(0.3)
    await run(editor, "loom.annotate", {"uri": uri, "node": "root", "text": "a note"})
    await asyncio.sleep(0.3)
    assert editor.versions[uri] not in cleans(editor, uri)
    # committing it makes the shown text the tree's
    res = await run(editor, "loom.commit", {"uri": uri})
    assert res["ok"], res
    await editor.wait_for(lambda: editor.versions[uri] in cleans(editor, uri))


async def test_continue_answers_when_it_has_finished(editor: Editor,
                                                     fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [" The door was open.", " Nobody answered.", " A dog barked."]))
    uri = await open_demo(editor)
    res = await run(editor, "loom.continue", {"uri": uri, "n": 3})
    assert res["ok"], res
    head = res["message"].splitlines()[0]
    assert head.startswith("✓ 3 continuations from ["), res["message"]
    assert "generating" not in res["message"]
    await editor.wait_for(lambda: editor.versions[uri] in cleans(editor, uri))
    status = plain([p for kind, p in editor.notifications if kind == "loom/status"][-1])
    assert not status["generating"] and status["message"] == head


async def test_a_generation_survives_its_tab_closing(editor: Editor,
                                                     fake: FakeProvider) -> None:
    words = "".join(f" word{i}" for i in range(30))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([words], event_delay_s=0.05))
    uri = await open_demo(editor)
    task = asyncio.ensure_future(run(editor, "loom.continue", {"uri": uri, "n": 1}))
    await editor.wait_for(lambda: "word" in editor.texts[uri])
    editor.client.text_document_did_close(lsp.DidCloseTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    res = await task
    assert res["ok"], res
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ?", words) == [(1,)]
    await editor.wait_for(lambda: any("its tab was closed" in m.message
                                      for m in editor.client.messages))


async def _close_tab_mid_stream(editor: Editor, fake: FakeProvider
                                ) -> tuple[str, str, asyncio.Future[Any]]:
    """A generation of 30 words streaming into the demo path, whose last tab then closes:
    the words, the path's URI and the running continue request."""
    words = "".join(f" word{i}" for i in range(30))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([words], event_delay_s=0.05))
    uri = await open_demo(editor)
    task = asyncio.ensure_future(run(editor, "loom.continue", {"uri": uri, "n": 1}))
    await editor.wait_for(lambda: "word" in editor.texts[uri])
    editor.client.protocol.notify("loom/tabClosed", {"uri": uri})
    return words, uri, task


async def test_a_generation_whose_last_tab_closed_says_where_it_went(
        editor: Editor, fake: FakeProvider) -> None:
    """VS Code keeps a document open after its last tab closes ("Don't Save"): the client
    says so with loom/tabClosed, the continuation lands and a message says where it is."""
    words, _uri, task = await _close_tab_mid_stream(editor, fake)
    res = await task
    assert res["ok"], res
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ?", words) == [(1,)]
    await editor.wait_for(lambda: any("its tab was closed" in m.message
                                      for m in editor.client.messages))


async def test_a_document_without_a_tab_gets_no_edits_but_a_reload(
        editor: Editor, fake: FakeProvider) -> None:
    """VS Code reopens a dirty document in a tab: once its last tab closed mid-stream, the
    server sends it no edit (no chunk, no final text); the continuation reaches it as a
    reload (loom/documentChanged, then loom/read has it), which its didChange adopts; with
    a tab again (loom/tabOpened), the server's changes are edits again."""
    _words, uri, task = await _close_tab_mid_stream(editor, fake)
    # answered after the notification: every edit sent before it has arrived by now
    await editor.request("loom/read", {"uri": uri})
    edits_before = editor.edited.count(uri)
    shown = editor.texts[uri]
    res = await task
    assert res["ok"], res
    await editor.wait_for(lambda: uri in [plain(p)["uri"] for k, p in editor.notifications
                                          if k == "loom/documentChanged"])
    assert editor.edited.count(uri) == edits_before, "an edit of a document with no tab"
    assert editor.texts[uri] == shown
    # the reload: VS Code reads the file again and sends what changed
    read = await editor.request("loom/read", {"uri": uri})
    assert read["text"].rstrip().endswith("word29"), read["text"][-80:]
    editor.replace(uri, 0, len(editor.texts[uri]), read["text"])
    await editor.wait_for(lambda: editor.versions[uri] in cleans(editor, uri))
    # a tab again: pruning the continuation takes it out by an edit, as ever
    editor.client.protocol.notify("loom/tabOpened", {"uri": uri})
    at = editor.pos(uri, editor.texts[uri].index("word0"))
    res = await run(editor, "loom.act", {"uri": uri, "line": at.line,
                                         "character": at.character, "action": "prune"})
    assert res["ok"], res
    await editor.wait_for(lambda: editor.edited.count(uri) > edits_before)
    await editor.wait_for(lambda: "word29" not in editor.texts[uri])


async def test_bookmarks_prune_and_search_from_the_editor(editor: Editor) -> None:
    """The reader's actions through loom.act (the arrow commands, as this participant),
    search through loom.search, and workspace/symbol listing trees, bookmarks and text."""
    uri = await open_demo(editor)
    text = editor.texts[uri]
    at = editor.pos(uri, text.index("windows seemed") + 3)
    res = await run(editor, "loom.act", {"uri": uri, "line": at.line, "character": at.character,
                                         "action": "bookmark", "value": "tone shift"})
    assert res["ok"] and res["message"].startswith("✓ bookmarked ["), res
    res = await run(editor, "loom.act", {"uri": uri, "line": at.line, "character": at.character,
                                         "action": "tag", "value": "dream, draft"})
    assert res["ok"] and "#dream #draft" in res["message"], res
    symbols = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=""))
    names = [s.name for s in symbols]
    assert "The House at the End of the Lane" in names and "★ tone shift" in names, names
    found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="walnut"))
    assert any("«walnut»" in s.name and s.location.uri.startswith("loom://path/")
               for s in found), [s.name for s in found]
    res = await run(editor, "loom.search", {"query": "kitchen ash"})
    assert res["ok"] and res["data"]["hits"][0]["treeTitle"] == "The House at the End of the Lane"
    assert "«kitchen»" in res["data"]["hits"][0]["snippet"]
    # prune the node the path goes through: the document follows, and stays clean
    gate = editor.pos(uri, text.index("She stopped at the gate") + 3)
    res = await run(editor, "loom.act", {"uri": uri, "line": gate.line,
                                         "character": gate.character, "action": "prune"})
    assert res["ok"], res
    await editor.wait_for(lambda: "She stopped at the gate" not in editor.texts[uri])
    await editor.wait_for(lambda: editor.versions[uri] in cleans(editor, uri))
    res = await run(editor, "loom.search", {"query": "gate"})
    assert not any("stopped at the «gate»" in h["snippet"] for h in res["data"]["hits"])
    # a rename without a title is refused, as the arrow command is
    res = await run(editor, "loom.act", {"uri": uri, "action": "rename", "value": ""})
    assert not res["ok"] and "INVALID_SYNTAX" in res["message"]
