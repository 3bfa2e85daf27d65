"""The collaborator in the editor: ``loom.askCollaborator`` runs a turn of the real agent
against a scripted chat model (the local fake OpenAI server), its commands go through the
real executor, and the turn shows in ``loom://conversation/collaborator/TREE``."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.fake_provider import OPENAI_CHAT, FakeProvider, openai_chat_stream
from tests.lsp.conftest import (
    Editor,
    fake_model_session,
    open_demo,
    sql,
)

fake, client = fake_model_session("collaborator", "fake-chat", "collaborator", LOOM_SUBJECT="none")



async def command(editor: Editor, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return await editor.client.workspace_execute_command_async(  # type: ignore[no-any-return]
        lsp.ExecuteCommandParams(command=name, arguments=[args]))


async def test_ask_runs_a_turn_and_shows_the_conversation(editor: Editor,
                                                          fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    tree, tip = uri.split("/")[-2:]
    fake.script(OPENAI_CHAT,
                openai_chat_stream(f'→ annotate {tip} "the clock matters"\n'),
                openai_chat_stream("I noted that the clock matters."))
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    ask_lens = [lens for lens in lenses if lens.command.title == "Ask the collaborator"]
    assert len(ask_lens) == 1
    assert ask_lens[0].command.command == "loom.askCollaborator"
    assert ask_lens[0].command.arguments[0]["uri"] == uri

    res = await command(editor, "loom.askCollaborator",
                        {"uri": uri, "message": "What should I keep?"})
    assert res["ok"], res
    assert res["message"] == "I noted that the clock matters."
    turn = res["data"]["turn"]
    assert sql(editor.db, "SELECT n.content, p.name FROM node n JOIN participant p "
                          "ON p.id = n.author_id WHERE n.kind = 'annotation' AND "
                          "n.content = 'the clock matters'") == [
        ("the clock matters", "collaborator")]
    assert sql(editor.db, "SELECT id, tree, stop_reason FROM agent_turn") == [
        (turn, tree, "done")]
    assert sql(editor.db, "SELECT count(*) FROM change WHERE kind = 'agent.turn' "
                          "AND entity = ?", turn) == [(1,)]
    statuses = [p for m, p in editor.notifications if m == "loom/status"]
    collab = [dict(p)["collaborator"] if isinstance(p, dict) else p.collaborator
              for p in statuses]
    collab = [c if isinstance(c, dict) else dict(c._asdict()) for c in collab if c]
    assert any(c["busy"] and c["name"] == "collaborator" for c in collab)
    assert not collab[-1]["busy"] and collab[-1]["depth"] is not None

    conv = f"loom://conversation/collaborator/{tree}"
    text = (await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=conv))).text
    assert text.startswith("Conversation with collaborator")
    assert "What should I keep?" in text
    assert f'→ annotate {tip} "the clock matters"' in text
    command_at = text.index(f'→ annotate {tip} "the clock matters"')
    assert text[command_at:].splitlines()[1].strip().startswith("✓")
    assert "I noted that the clock matters." in text
    read = await editor.request("loom/read", {"uri": conv})
    assert read["readOnly"] is True


async def test_a_second_ask_while_busy_conflicts_and_stop_ends_the_turn(
        editor: Editor, fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    slow = " ".join(f"word{i}" for i in range(80))
    fake.script(OPENAI_CHAT, openai_chat_stream(slow, event_delay_s=0.1))
    first = asyncio.ensure_future(command(editor, "loom.askCollaborator", {"uri": uri}))
    await editor.wait_for(lambda: len(fake.requests_to(OPENAI_CHAT)) == 1)
    second = await command(editor, "loom.askCollaborator", {"uri": uri, "message": "Also?"})
    assert not second["ok"]
    assert second["message"].startswith("✗ CONFLICT: the collaborator is busy")
    stopped = await command(editor, "loom.stopCollaborator", {})
    assert stopped["ok"], stopped
    res = await asyncio.wait_for(first, 5)
    assert res["data"]["stopReason"] == "stopped", res
    assert sql(editor.db, "SELECT stop_reason FROM agent_turn") == [("stopped",)]
    again = await command(editor, "loom.stopCollaborator", {})
    assert not again["ok"]


async def test_an_annotation_addressed_to_it_triggers_a_turn(editor: Editor,
                                                             fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    _tree, tip = uri.split("/")[-2:]
    fake.script(OPENAI_CHAT, openai_chat_stream("The clock is a quiet signal; keep it."))
    editor.append(uri, f'\n→ annotate {tip} "@collaborator is the stopped clock too obvious?"')
    line = editor.doc(uri).line_count - 1
    res = await command(editor, "loom.run", {"uri": uri, "line": line})
    assert res["ok"], res
    await editor.wait_for(lambda: sql(editor.db, "SELECT count(*) FROM agent_turn")[0][0] == 1,
                          timeout=20)
    trigger, = sql(editor.db, "SELECT trigger FROM agent_turn")[0]
    assert trigger == "annotation"
    asked = fake.requests_to(OPENAI_CHAT)[0].json["messages"][-1]["content"]
    assert "is the stopped clock too obvious?" in asked
    await editor.wait_for(lambda: any("Collaborator: The clock is a quiet signal"
                                      in m.message for m in editor.client.messages))


async def test_approval_mode_asks_the_human_and_a_no_writes_nothing(
        client: LanguageClient, editor: Editor, fake: FakeProvider) -> None:
    asked: list[str] = []

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def decide(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem:
        asked.append(params.message)
        return lsp.MessageActionItem(title="Deny")

    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"collaboratorApproval": True}}))
    uri = await open_demo(editor)
    _tree, tip = uri.split("/")[-2:]
    by_collaborator = ("SELECT count(*) FROM node n JOIN participant p ON p.id = n.author_id "
                       "WHERE p.name = 'collaborator'")
    before = sql(editor.db, by_collaborator)
    fake.script(OPENAI_CHAT, openai_chat_stream(f'→ annotate {tip} "cut this"\n'),
                openai_chat_stream("Understood, I left it."))
    res = await command(editor, "loom.askCollaborator", {"uri": uri})
    assert res["ok"], res
    assert asked and f'→ annotate {tip} "cut this"' in asked[0]
    assert sql(editor.db, by_collaborator) == before  # the demo's own notes, nothing new
    fed_back = fake.requests_to(OPENAI_CHAT)[1].json["messages"][-1]["content"]
    assert "PERMISSION_DENIED" in fed_back


async def test_autonomous_mode_takes_a_turn_after_the_human_pauses(
        client: LanguageClient, editor: Editor, fake: FakeProvider) -> None:
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        settings={"loom": {"collaboratorAutonomous": True, "collaboratorSettle": 1}}))
    uri = await open_demo(editor)
    fake.script(OPENAI_CHAT, openai_chat_stream("Nice pause. The clock could return later."))
    editor.append(uri, " She listened.")
    saved = await editor.request("loom/save", {"uri": uri, "text": editor.texts[uri]})
    assert saved["ok"]
    assert sql(editor.db, "SELECT count(*) FROM agent_turn") == [(0,)]  # not while typing
    await editor.wait_for(lambda: sql(editor.db, "SELECT count(*) FROM agent_turn")[0][0] == 1,
                          timeout=20)
    assert sql(editor.db, "SELECT trigger FROM agent_turn") == [("autonomous",)]


async def test_status_follows_where_the_collaborator_moves(editor: Editor,
                                                           fake: FakeProvider) -> None:
    """``loom/status`` remembers the collaborator's place (a newcomer's is a walk down the
    tree) until something changes in the tree: a switch shows at once."""
    uri = await open_demo(editor)
    fake.script(OPENAI_CHAT, openai_chat_stream("I will wait."))
    assert (await command(editor, "loom.askCollaborator",
                          {"uri": uri, "message": "Wait."}))["ok"]

    async def place() -> tuple[str, int]:
        status = await editor.request("loom/status", {"uri": uri})
        return status["collaborator"]["node"], status["collaborator"]["depth"]

    first = await place()
    assert first == await place()  # asked again: the same, from memory
    fake.script(OPENAI_CHAT, openai_chat_stream("→ switch to root\n"),
                openai_chat_stream("I am at the start."))
    assert (await command(editor, "loom.askCollaborator",
                          {"uri": uri, "message": "Go to the start."}))["ok"]
    root = sql(editor.db, "SELECT n.local_id FROM node n JOIN tree t ON t.root = n.id")[0][0]
    assert await place() == (root, 0) != first
