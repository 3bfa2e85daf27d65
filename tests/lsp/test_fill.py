"""Fill from a selection through a language server with VS Code's and Neovim's
capabilities (``loom.fill``): the span of one node streams the first alternative in place,
the path then shows it as a version of the node with the text around the span and every
node after it unchanged, the sibling picker lists the versions, picking another swaps only
the span; a selection across nodes is refused and a cancel leaves the text as it was."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from tests.e2e.fake_provider import LLAMA_INFILL, FakeProvider, llama_infill_stream
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql

fake, client = fake_model_session("fill", "fake-base", "subject")

SPAN = "Her hand found the latch"


async def command(editor: Editor, name: str, **args: Any) -> dict[str, Any]:
    return await editor.client.workspace_execute_command_async(  # type: ignore[no-any-return]
        lsp.ExecuteCommandParams(command=name, arguments=[args]))


def select(editor: Editor, uri: str, text: str) -> dict[str, int]:
    at = editor.texts[uri].index(text)
    start, end = editor.pos(uri, at), editor.pos(uri, at + len(text))
    return {"line": start.line, "character": start.character, "endLine": end.line,
            "endCharacter": end.character}


async def test_a_selection_is_filled_and_its_versions_swap_only_the_span(
        editor: Editor, fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    before = editor.texts[uri]
    assert SPAN in before
    said = {1: "Her fingers closed on the cold iron", 2: "She reached for the bolt"}
    fake.set_default(LLAMA_INFILL, lambda r: llama_infill_stream(said[r.json["seed"]]))
    done = await command(editor, "loom.fill", uri=uri, n=2, seed=1,
                         **select(editor, uri, SPAN))
    assert done["ok"], done
    assert done["message"].startswith("✓ filling 26-50 of ["), done["message"]
    await editor.wait_for(lambda: said[1] in editor.texts[uri])
    assert editor.texts[uri] == before.replace(SPAN, said[1])  # the rest as it was
    # the model wrote the span alone: it is model text, the node's other words stay human
    tokens = (await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))).data
    spans, line, col = [], 0, 0
    for i in range(0, len(tokens), 5):
        line += tokens[i]
        col = tokens[i + 1] if tokens[i] else col + tokens[i + 1]
        spans.append((line, col, tokens[i + 2], tokens[i + 3]))

    def kind_at(offset: int) -> int:
        p = editor.pos(uri, offset)
        return next(t for ln, c, n, t in spans if ln == p.line and c <= p.character < c + n)

    text = editor.texts[uri]
    assert kind_at(text.index(said[1]) + 3) == 0  # loomModel
    assert kind_at(text.index("She stopped at the gate") + 3) == 1  # loomHuman
    assert kind_at(text.index(" before her mind did") + 3) == 1
    sent = fake.requests_to(LLAMA_INFILL)[0].json
    assert sent["input_prefix"].endswith("She stopped at the gate. ")
    assert sent["input_suffix"].startswith(" before her mind did.")
    # the sibling picker lists the node's versions beside it; the other swaps the span
    first, second = done["data"]["created"]
    listed = await command(editor, "loom.siblings", uri=uri, node=first)
    versions = [s["id"] for s in listed["data"]["siblings"] if s["versionOf"]]
    assert {first, second} <= set(versions), listed
    picked = await command(editor, "loom.switchTo", uri=uri, node=second)
    assert picked["ok"], picked
    await editor.wait_for(lambda: said[2] in editor.texts[uri])
    assert editor.texts[uri] == before.replace(SPAN, said[2])
    rows = sql(editor.db, "SELECT params FROM generation WHERE node = ?", second)
    assert '"replaced": "Her hand found the latch"' in rows[0][0]
    # its hover says which span it replaced, and how
    at = editor.texts[uri].index(said[2])
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, at + 2)))
    assert hover is not None
    card = hover.contents.value  # type: ignore[union-attr]
    assert 'Filled: characters 26-50 of [' in card, card
    assert 'in place of "Her hand found the latch"' in card and "strategy infill" in card
    assert "Version 2 of 2 from one request" in card, card


async def test_a_selection_across_two_nodes_is_refused(editor: Editor,
                                                       fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    text = editor.texts[uri]
    at = text.index("She stopped at the gate.")
    a, b = editor.pos(uri, at - 10), editor.pos(uri, at + 5)
    got = await command(editor, "loom.fill", uri=uri, line=a.line, character=a.character,
                        endLine=b.line, endCharacter=b.character)
    assert not got["ok"] and "select a span within one node's text" in got["message"]
    assert fake.requests_to(LLAMA_INFILL) == [] and editor.texts[uri] == text


async def test_a_fill_streams_into_the_span_and_a_cancel_puts_the_text_back(
        editor: Editor, fake: FakeProvider) -> None:
    import asyncio

    uri = await open_demo(editor)
    before = editor.texts[uri]
    fake.set_default(LLAMA_INFILL, llama_infill_stream(
        "Slowly, very slowly, one finger at a time, she found it", event_delay_s=0.25))
    task = asyncio.ensure_future(command(editor, "loom.fill", uri=uri,
                                         **select(editor, uri, SPAN)))
    await editor.wait_for(lambda: "Slowly, very" in editor.texts[uri], 10)  # streaming
    assert SPAN not in editor.texts[uri]
    assert (await command(editor, "loom.cancel"))["ok"]
    got = await task
    assert got["ok"] and got["message"] == "✓ fill cancelled: nothing was added", got
    await editor.wait_for(lambda: editor.texts[uri] == before, 10)
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content LIKE '%Slowly, very%'"
               ) == [(0,)]
