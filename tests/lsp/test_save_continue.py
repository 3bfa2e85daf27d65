"""A save on a ``→ continue`` line (Neovim's `:w` timed out after 10 s
and lost the line and the streamed text; VS Code showed "Saving…" for 45 s): the save
answers at once, the generation runs on its own, streams in, lands in the tree and says
so; cancelling it keeps the typed text and writes no continuation."""

from __future__ import annotations

from lsprotocol import types as lsp

from loom.lsp.documents import minimal_edit
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_completion_stream
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql

fake, client = fake_model_session("save-continue", "fake-base", "subject")

SLOW = " ".join(f"word{i}" for i in range(40))


async def test_a_save_on_a_continue_line_answers_at_once_and_the_generation_lands(
        editor: Editor, fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" " + SLOW, " Other."],
                                                             event_delay_s=0.1))
    uri = await open_demo(editor)
    editor.append(uri, " She went in.\n→ continue n:2 tokens:40")
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    # answered while the model still streams: nothing of it in the tree yet
    assert res["ok"] and res["data"]["generating"], res
    assert res["message"].startswith("✓ generating 2 continuations…"), res
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(0,)]
    # the line is gone, the typed text is a node, the continuation streams in and lands
    await editor.wait_for(lambda: "→ continue" not in editor.texts[uri])
    await editor.wait_for(lambda: "word3" in editor.texts[uri], timeout=20)
    await editor.wait_for(lambda: sql(editor.db, "SELECT count(*) FROM generation") == [(2,)],
                          timeout=30)
    assert sql(editor.db, "SELECT author_type FROM node WHERE content = ' She went in.'") \
        == [("human",)]
    await editor.wait_for(lambda: editor.texts[uri].endswith(SLOW))
    await editor.wait_for(lambda: any(m.message.startswith("✓ 2 continuations from")
                                      for m in editor.client.messages))


async def test_a_generation_a_save_started_can_be_cancelled(editor: Editor,
                                                             fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" " + SLOW],
                                                             event_delay_s=0.1))
    uri = await open_demo(editor)
    editor.append(uri, " Then silence.\n→ continue n:1")
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"] and res["data"]["generating"], res
    await editor.wait_for(lambda: "word2" in editor.texts[uri], timeout=20)
    cancelled = await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="loom.cancel", arguments=[{}]))
    assert cancelled["ok"]
    await editor.wait_for(lambda: any("generation cancelled" in m.message
                                      for m in editor.client.messages), timeout=20)
    await editor.wait_for(lambda: "word" not in editor.texts[uri])
    assert editor.texts[uri].endswith(" Then silence.")
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(0,)]
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' Then silence.'") \
        == [(1,)]


async def test_undo_after_a_generation_lands_goes_back_and_keeps_the_continuations(
        editor: Editor, fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" The door was open."]))
    uri = await open_demo(editor)
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.continue", arguments=[{"uri": uri, "n": 1}]))
    assert res["ok"], res
    await editor.wait_for(lambda: editor.texts[uri].endswith(" The door was open."))
    nodes = sql(editor.db, "SELECT count(*) FROM node")
    edit = minimal_edit(editor.texts[uri], editor.texts[uri][:-len(" The door was open.")])
    assert edit is not None
    editor.replace(uri, *edit)  # Ctrl+Z: the landing undone
    await editor.wait_for(lambda: any("↶ back at" in (getattr(p, "message", None) or "")
                                      for m, p in editor.notifications
                                      if m == "loom/status"))
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"] and "nothing to commit" in saved["message"], saved
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes  # the continuation stays
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' The door was open.'") \
        == [(1,)]


async def test_siblings_cycled_the_moment_a_saved_generation_lands_show_in_the_buffer(
        editor: Editor, fake: FakeProvider) -> None:
    """The Neovim journey: ]s pressed as soon as the continuations showed said "✓ switched
    to … (2/3)" while the buffer kept the first one."""
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [" One went left.", " Two went right.", " Three stayed."]))
    uri = await open_demo(editor)
    editor.append(uri, "\n\nShe called out.\n→ continue n:3 tokens:12")
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"] and res["data"]["generating"], res
    await editor.wait_for(lambda: editor.texts[uri].endswith(" One went left."), timeout=20)
    cycled = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.cycleSibling", arguments=[{"uri": uri, "node": sql(
            editor.db, "SELECT id FROM node WHERE content = ' One went left.'")[0][0],
            "delta": 1}]))
    assert cycled["ok"], cycled
    await editor.wait_for(lambda: editor.texts[uri].endswith(" Two went right."), timeout=10)


async def test_a_move_while_the_model_writes_is_refused_and_loses_nothing(
        editor: Editor, fake: FakeProvider) -> None:
    """Siblings cycled while a generation streams into the path: its continuations are not
    nodes yet, and a move would be undone by the landing; it is refused with a word."""
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" " + SLOW, " Other."],
                                                             event_delay_s=0.1))
    uri = await open_demo(editor)
    editor.append(uri, " Then.\n→ continue n:2 tokens:40")
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    await editor.wait_for(lambda: "word2" in editor.texts[uri], timeout=20)
    mine = sql(editor.db, "SELECT id FROM node WHERE content = ' Then.'")[0][0]
    moved = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.cycleSibling", arguments=[{"uri": uri, "node": mine, "delta": 1}]))
    assert not moved["ok"] and moved["message"].startswith(
        "✗ CONFLICT: a generation is writing into this path"), moved
    await editor.wait_for(lambda: editor.texts[uri].endswith(SLOW), timeout=30)
    await editor.wait_for(lambda: sql(editor.db, "SELECT count(*) FROM generation") == [(2,)])


async def test_did_save_is_no_second_save_for_an_editor_that_saves_through_loom_save(
        editor: Editor) -> None:
    """VS Code (file-system documents) saves through loom/save, then sends didSave; the
    server ran the save again on it (its command lines, its commit). For such an editor a
    didSave is not a save: only loom/save is."""
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"documentProvider": "fileSystem"}}))
    uri = await open_demo(editor)
    editor.append(uri, '\n→ annotate root "once"')
    editor.client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), text=editor.texts[uri]))
    await editor.request("loom/status", {"uri": uri})  # (the didSave is handled by now)
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = 'once'") == [(0,)]
    res = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert res["ok"], res
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = 'once'") == [(1,)]
