"""Generation streams into the buffer: the real server, the real OpenAI SDK, and a local
HTTP server speaking the OpenAI wire format."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.e2e.fake_provider import (
    OPENAI_COMPLETIONS,
    FakeProvider,
    error_reply,
    openai_completion_stream,
)
from tests.lsp.conftest import (
    Editor,
    fake_model_session,
    open_demo,
    sql,
)

fake, client = fake_model_session("generation", "fake-base", "subject")



async def test_continue_streams_into_the_buffer(editor: Editor, fake: FakeProvider) -> None:
    texts = [" The door was open.", " Nobody answered."]
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(texts, event_delay_s=0.05))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    editor.append(uri, " She called out.")
    edits: list[str] = []
    original_replace = editor.replace

    def spy(u: str, s: int, e: int, new: str) -> None:
        edits.append(new)
        original_replace(u, s, e, new)

    editor.replace = spy  # type: ignore[method-assign]
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.continue", arguments=[{"uri": uri, "n": 2, "tokens": 20}]))
    assert res["ok"], res
    assert editor.texts[uri] == before + " She called out." + texts[0]
    assert len(edits) >= 2  # it arrived in pieces, then was confirmed
    # the working buffer became a human node, the two continuations model nodes
    assert sql(editor.db, "SELECT author_type FROM node WHERE content = ' She called out.'") \
        == [("human",)]
    made = sql(editor.db, "SELECT n.content, g.model, g.completion_index FROM node n JOIN "
                          "generation g ON g.node = n.id ORDER BY g.completion_index")
    assert [(c, i) for c, _m, i in made] == [(texts[0], 0), (texts[1], 1)]
    assert {m for _c, m, _i in made} == {"fake-base"}
    request = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert request["prompt"].endswith("twenty past four. She called out.")
    assert request["n"] == 2 and request["max_tokens"] == 20
    # typing after it continues from the new node
    lenses = await editor.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert any(lens.command.title.startswith("◀ 1/2 ▶") for lens in lenses)


async def test_model_error_is_a_diagnostic_and_loses_nothing(editor: Editor,
                                                             fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, error_reply(500), error_reply(500))
    uri = await open_demo(editor)
    editor.append(uri, " Then silence.")
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.continue", arguments=[{"uri": uri, "n": 1}]))
    assert not res["ok"] and "MODEL_ERROR" in res["message"]
    assert editor.texts[uri].endswith(" Then silence.")
    await editor.wait_for(lambda: uri in editor.client.diagnostics)
    assert editor.client.diagnostics[uri][0].code == "MODEL_ERROR"
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content = ' Then silence.'") == [(1,)]
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(0,)]


async def test_cancel_stops_a_generation_and_keeps_the_text(editor: Editor,
                                                            fake: FakeProvider) -> None:
    import asyncio

    words = [f" word{i}" for i in range(60)]
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["".join(words)],
                                                             event_delay_s=0.1))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    task = asyncio.ensure_future(editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="loom.continue", arguments=[{"uri": uri, "n": 1}])))
    await editor.wait_for(lambda: "word" in editor.texts[uri])  # it is streaming in
    cancelled = await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="loom.cancel", arguments=[{}]))
    assert cancelled["ok"]
    res = await task
    # what the user asked for: no error, and a word on what happened
    assert res["ok"] and res["data"]["cancelled"], res
    assert res["message"] == "✓ generation cancelled: nothing was added"
    await editor.wait_for(lambda: editor.texts[uri] == before)  # the partial text is gone
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(0,)]


async def test_cancel_request_stops_the_generation_and_writes_nothing(
        editor: Editor, fake: FakeProvider) -> None:
    """``$/cancelRequest`` of ``loom.continue`` answers RequestCancelled and cancels the
    work: the model stream stops, the streamed text goes, no node is committed."""
    import asyncio

    words = [f" word{i}" for i in range(60)]
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(["".join(words)],
                                                             event_delay_s=0.1))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    nodes = sql(editor.db, "SELECT count(*) FROM node")
    protocol = editor.client.protocol
    request = asyncio.ensure_future(protocol.send_request_async(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(command="loom.continue", arguments=[{"uri": uri, "n": 1}]),
        msg_id="continue-to-cancel"))
    await editor.wait_for(lambda: "word" in editor.texts[uri])  # it is streaming in
    protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="continue-to-cancel"))
    with pytest.raises(Exception) as answered:
        await request
    assert getattr(answered.value, "code", None) == lsp.LSPErrorCodes.RequestCancelled
    # the worker stopped (the server is free again) and wrote nothing
    async def idle() -> bool:
        return not (await editor.request("loom/status", {"uri": uri}))["generating"]

    deadline = asyncio.get_running_loop().time() + 10
    while not await idle():
        assert asyncio.get_running_loop().time() < deadline, "the generation ran on"
        await asyncio.sleep(0.05)
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(0,)]
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes
    await editor.wait_for(lambda: editor.texts[uri] == before)  # the partial text is gone
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1
