"""Token probabilities in the editor, through the real server, the real OpenAI
SDK and a local HTTP server speaking the completions wire format with ``logprobs``: the
stored tokens spell each node; hover shows the alternatives; the probability view colours
model text; a code action branches from an alternative and continues; a path's
continuations are inline suggestions to cycle and accept, whole or in part."""

from __future__ import annotations

import asyncio
from typing import Any, Union

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from loom.model import tokens as T
from tests.e2e.fake_provider import (
    OPENAI_COMPLETIONS,
    FakeProvider,
    LogprobToken,
    openai_logprob_stream,
)
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql

# " The cat sat on the mat." with what the model weighed at each token
CAT: list[LogprobToken] = [
    (" The", -0.1, [(" The", -0.1), (" A", -2.6)]),
    (" cat", -0.7, [(" cat", -0.7), (" dog", -1.1), (" fox", -3.0)]),
    (" sat", -1.6, [(" lay", -0.9), (" sat", -1.6), (" stood", -2.3)]),
    (" on", -0.05, [(" on", -0.05)]),
    (" the", -0.2, [(" the", -0.2), (" a", -1.9)]),
    (" mat", -3.5, [(" rug", -0.6), (" floor", -1.4), (" mat", -3.5)]),
    (".", -0.01, [(".", -0.01)]),
]
DOG: list[LogprobToken] = [(" A", -1.0, [(" A", -1.0)]), (" dog", -0.5, [(" dog", -0.5)]),
                           (" barked.", -0.3, [(" barked.", -0.3)])]
AFTER_LAY: list[LogprobToken] = [(" down", -0.4, [(" down", -0.4)]),
                                 (" to", -0.9, [(" to", -0.9)]), (" sleep.", -0.2, [])]


def text_of(tokens: list[LogprobToken]) -> str:
    return "".join(t for t, _lp, _alts in tokens)




fake, client = fake_model_session("probabilities", "fake-base", "subject")


async def command(editor: Editor, name: str, args: dict[str, Any]) -> Any:
    return await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[args]))


async def generate(editor: Editor, fake: FakeProvider) -> tuple[str, int]:
    """Open the demo's path and continue it with two continuations; the offset where the
    first (now in the buffer) starts."""
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    uri = await open_demo(editor)
    start = len(editor.texts[uri])
    res = await command(editor, "loom.continue", {"uri": uri, "n": 2, "tokens": 20})
    assert res["ok"], res
    # (the last streamed edit may still be on its way when the command answers)
    await editor.wait_for(lambda: editor.texts[uri][start:] == text_of(CAT))
    assert fake.requests_to(OPENAI_COMPLETIONS)[0].json["logprobs"] == 5
    return uri, start


async def hover(editor: Editor, uri: str, offset: int) -> str:
    got = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, offset)))
    assert got is not None
    return got.contents.value


async def test_stored_tokens_spell_each_node_and_hover_shows_the_alternatives(
        editor: Editor, fake: FakeProvider) -> None:
    uri, start = await generate(editor, fake)
    rows = sql(editor.db, "SELECT n.content, t.k, t.count, t.data FROM node n JOIN node_tokens t "
                          "ON t.node = n.id ORDER BY n.content")
    assert [(c, k, n) for c, k, n, _d in rows] == [(text_of(DOG), 5, 3), (text_of(CAT), 5, 7)]
    for content, _k, _n, data in rows:
        assert "".join(t.text for t in T.decode(data)[1]) == content
    sat = start + text_of(CAT).index(" sat") + 2
    shown = await hover(editor, uri, sat)
    assert shown.startswith("**`␣sat`** · 20.2%")
    # columns in a fenced block (Neovim's hover float shows a Markdown table as its source)
    assert "|" not in shown.split("\n---\n")[0]
    block = shown.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert block[0].split() == ["token", "p"]
    assert "▸ ␣sat    20.2%" in block and "  ␣lay    40.7%" in block, block
    assert len({len(line) for line in block}) == 1  # the percentages line up on the right
    assert shown.index("␣lay") < shown.index("␣stood")  # most likely first
    assert "\n---\n" in shown and "[" in shown.split("\n---\n")[1]  # the card below
    # model text without token data (the demo's) and human text: the ordinary card, no
    # note about probabilities on every hover
    demo_model = editor.texts[uri].index("Inside, the kitchen")
    shown = await hover(editor, uri, demo_model + 3)
    assert "probabilit" not in shown.lower() and "Inside, the kitchen" in shown
    assert "token" not in (await hover(editor, uri, 5)).split("\n---\n")[0].lower()
    # asked for alternatives there, the answer says why there are none (a greyed action)
    at = editor.pos(uri, demo_model + 3)
    asked = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=lsp.Range(at, at),
        context=lsp.CodeActionContext(diagnostics=[],
                                      trigger_kind=lsp.CodeActionTriggerKind.Invoked)))
    assert [(a.title, a.disabled.reason) for a in asked] == [
        ("Alternatives", "no token probabilities: no generation record (imported or written "
                         "without one)")]
    automatic = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=lsp.Range(at, at),
        context=lsp.CodeActionContext(diagnostics=[],
                                      trigger_kind=lsp.CodeActionTriggerKind.Automatic)))
    assert not automatic  # no lightbulb for nothing


async def test_the_probability_view_colours_model_tokens(editor: Editor,
                                                         fake: FakeProvider) -> None:
    uri, start = await generate(editor, fake)
    legend = editor.server_capabilities.semantic_tokens_provider.legend  # type: ignore[attr-defined]
    names = list(legend.token_modifiers)
    assert names[2:] == list(T.BUCKET_NAMES)

    async def modifiers_at(offset: int) -> set[str]:
        data = (await editor.client.text_document_semantic_tokens_full_async(
            lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))).data
        doc, line, col = editor.doc(uri), 0, 0
        want = doc.position_at(offset)
        for i in range(0, len(data), 5):
            dl, dc, length, _typ, mods = data[i:i + 5]
            line, col = line + dl, (col + dc if dl == 0 else dc)
            if line == want[0] and col <= want[1] < col + length:
                return {n for b, n in enumerate(names)
                        if mods & (1 << b) and n in T.BUCKET_NAMES}
        return set()

    mat = start + text_of(CAT).index(" mat") + 1
    assert await modifiers_at(mat) == set()  # off by default
    res = await command(editor, "loom.toggleProbabilities", {})
    assert res["ok"] and res["data"]["on"] is True
    assert await modifiers_at(mat) == {"probVeryLow"}  # p = 3%
    assert await modifiers_at(start + 2) == {"probVeryHigh"}  # " The", p = 90%
    assert await modifiers_at(start + text_of(CAT).index(" sat") + 1) == {"probMid"}
    # typing asks again: only an edit of the previous result comes back
    full = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    editor.append(uri, " And")
    delta = await editor.client.text_document_semantic_tokens_full_delta_async(
        lsp.SemanticTokensDeltaParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                      previous_result_id=full.result_id))
    (edit,) = delta.edits
    assert len(edit.data or []) <= 10
    data = list(full.data)
    data[edit.start:edit.start + edit.delete_count] = edit.data or []
    again = await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert data == list(again.data)
    assert (await command(editor, "loom.toggleProbabilities", {"on": False}))["data"] == {
        "on": False}
    assert await modifiers_at(mat) == set()


def read_code_actions_as_editors_do(client: LanguageClient) -> None:
    """lsprotocol's client reads every code action that has a command as a bare Command
    (losing its kind); editors tell them apart by the command's type."""
    conv = client.protocol._converter  # type: ignore[attr-defined]

    def hook(obj: Any, _type: Any) -> Any:
        bare = isinstance(obj.get("command"), str)
        return conv.structure(obj, lsp.Command if bare else lsp.CodeAction)

    conv.register_structure_hook(Union[lsp.Command, lsp.CodeAction], hook)  # noqa: UP007


async def test_branch_from_an_alternative_and_continue(editor: Editor,
                                                       fake: FakeProvider) -> None:
    read_code_actions_as_editors_do(editor.client)
    uri, start = await generate(editor, fake)
    sat = start + text_of(CAT).index(" sat")
    actions = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(editor.pos(uri, sat + 2), editor.pos(uri, sat + 2)),
        context=lsp.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in actions]
    assert titles[:2] == ["Continue from here with ‘␣lay’ (40.7%)",
                          "Continue from here with ‘␣stood’ (10.0%)"]
    assert titles[-1].startswith("Split [") and titles[-1].endswith("here, before ‘␣sat’")
    lay = actions[0]
    assert lay.kind == lsp.CodeActionKind.RefactorRewrite and lay.is_preferred
    for only, count in (([lsp.CodeActionKind.RefactorRewrite], len(actions)),
                        ([lsp.CodeActionKind.QuickFix], 0)):
        got = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(editor.pos(uri, sat + 2), editor.pos(uri, sat + 2)),
            context=lsp.CodeActionContext(diagnostics=[], only=only)))
        assert len(got or []) == count, only
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([AFTER_LAY]))
    res = await command(editor, lay.command.command, lay.command.arguments[0])
    assert res["ok"], res
    prefix = editor.texts[uri][:sat]
    assert editor.texts[uri] == prefix + " lay" + text_of(AFTER_LAY)
    # the tree: the original kept (hidden), its halves, the alternative, its continuation
    nodes = dict(sql(editor.db, "SELECT content, pruned FROM node WHERE author_type = 'model' "
                                "AND tree_id = (SELECT tree_id FROM node WHERE content = ?)",
                     text_of(CAT)))
    assert nodes[text_of(CAT)] == 1
    assert nodes[" The cat"] == 0 and nodes[" sat on the mat."] == 0
    assert nodes[" lay"] == 0 and nodes[text_of(AFTER_LAY)] == 0
    assert fake.requests_to(OPENAI_COMPLETIONS)[1].json["prompt"].endswith(" The cat lay")
    head = sql(editor.db, "SELECT id FROM node WHERE content = ' The cat'")[0][0]
    kids = sql(editor.db, "SELECT n.content FROM edge_source s JOIN node n ON n.id = s.target "
                          "WHERE s.node = ? ORDER BY n.id", head)
    assert [k for (k,) in kids] == [" sat on the mat.", " lay"]
    # the alternative is the model's text, with what the model weighed at that place
    shown = await hover(editor, uri, sat + 2)
    assert shown.startswith("**`␣lay`** · 40.7%") and "\n  ␣stood " in shown


async def test_continuations_are_inline_suggestions(editor: Editor, fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    res = await command(editor, "loom.suggest", {"uri": uri, "n": 2})
    assert res["ok"], res
    assert editor.texts[uri] == before  # nothing streamed in: they are suggestions

    async def suggestions() -> list[lsp.InlineCompletionItem]:
        end = len(editor.texts[uri])
        got = await editor.client.text_document_inline_completion_async(
            lsp.InlineCompletionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=editor.pos(uri, end),
                context=lsp.InlineCompletionContext(
                    trigger_kind=lsp.InlineCompletionTriggerKind.Invoked)))
        return list(got.items) if got else []

    items = await suggestions()
    assert [i.insert_text for i in items] == [text_of(CAT), text_of(DOG)]
    # typing the beginning of one narrows them to it
    editor.append(uri, " A")
    assert [i.insert_text for i in await suggestions()] == [text_of(DOG)]
    editor.replace(uri, len(before), len(before) + 2, "")
    # accept the first word (as the Neovim plugin does: the server inserts it)
    res = await command(editor, "loom.acceptSuggestion",
                        {"uri": uri, "node": items[0].command.arguments[0]["node"],
                         "text": " The"})
    assert res["ok"], res
    assert editor.texts[uri] == before + " The"
    rest = await suggestions()
    assert [i.insert_text for i in rest] == [" cat sat on the mat."]
    # accept the rest as VS Code does: the editor inserts it, then runs the item's command
    editor.append(uri, rest[0].insert_text)
    res = await command(editor, rest[0].command.command, rest[0].command.arguments[0])
    assert res["ok"], res
    assert editor.texts[uri] == before + text_of(CAT)
    assert await suggestions() == []
    human, tip = sql(editor.db, "SELECT p.node, n.content FROM position p JOIN participant h "
                                "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                                "WHERE h.name = 'human'")[0]
    assert tip == " cat sat on the mat."
    # nothing was committed as the human's text, and the token data followed the split
    assert sql(editor.db, "SELECT count(*) FROM node WHERE author_type = 'human' AND "
                          "content LIKE '%cat%'") == [(0,)]
    assert (await hover(editor, uri, len(before) + 6)).startswith("**`␣cat`**")
    del human


@pytest.mark.parametrize("tab", ["during", "after", "over-during", "over-after"])
async def test_tab_right_after_a_word_accepts_the_rest(editor: Editor, fake: FakeProvider,
                                                      tab: str) -> None:
    """ctrl+right, then Tab (VS Code) on the rest still shown: the item from before the
    word. Tab comes while the server splits (the second accept waits for the first, and the
    text Tab inserted meanwhile stays in the buffer) or once it has; VS Code sends the
    rest as an insertion, or ("over") as the whole item written over the word."""
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    assert (await command(editor, "loom.suggest", {"uri": uri, "n": 2}))["ok"]
    got = await editor.client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=editor.pos(uri, len(before)),
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Invoked)))
    assert got is not None
    shown = got.items[0]
    assert shown.insert_text == text_of(CAT)

    def send(args: dict[str, Any]) -> Any:  # sent now (before what follows), answered later
        return asyncio.wrap_future(editor.client.protocol.send_request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command="loom.acceptSuggestion", arguments=[args])))

    editor.append(uri, " The")  # ctrl+right: VS Code inserts the word, the extension tells
    word = send({"uri": uri, "inserted": True, "text": " The"})
    if tab.endswith("after"):
        await word
    # Tab: the rest of the item shown
    if tab.startswith("over"):
        editor.replace(uri, len(before), len(before) + len(" The"), text_of(CAT))
    else:
        editor.append(uri, " cat sat on the mat.")
    rest = send(shown.command.arguments[0])
    first, second = await word, await rest
    assert first["ok"], first
    assert second["ok"], second
    await editor.wait_for(lambda: editor.texts[uri] == before + text_of(CAT))
    assert sql(editor.db, "SELECT n.content FROM position p JOIN participant h ON h.id = "
                          "p.participant JOIN node n ON n.id = p.tip WHERE h.name = 'human'"
               ) == [(" cat sat on the mat.",)]
    # the server's copy of the buffer is the client's: the token under " sat" hovers
    sat = len(before) + len(" The cat s")
    assert (await hover(editor, uri, sat)).startswith("**`␣sat`**")
    # split once, at the word: the suggestion (kept, pruned) became the word and the rest
    assert sql(editor.db, "SELECT content, pruned FROM node WHERE content LIKE '%cat sat%' "
                          "OR content = ' The' ORDER BY content"
               ) == [(" The", 0), (" The cat sat on the mat.", 1), (" cat sat on the mat.", 0)]


async def test_a_typed_split_line_runs_and_the_buffer_follows(editor: Editor,
                                                              fake: FakeProvider) -> None:
    uri, start = await generate(editor, fake)
    node = sql(editor.db, "SELECT local_id FROM node WHERE content = ?", text_of(CAT))[0][0]
    before = editor.texts[uri]
    editor.append(uri, f"\n→ split {node} at:8")
    line = editor.doc(uri).line_count - 1
    res = await command(editor, "loom.run", {"uri": uri, "line": line})
    assert res["ok"], res
    await editor.wait_for(lambda: editor.texts[uri] == before)  # the line ran and went away
    # the same text, now two nodes: the halves, the tail at the path's end
    ends = sql(editor.db, "SELECT n.content FROM position p JOIN participant h ON h.id = "
                          "p.participant JOIN node n ON n.id = p.tip WHERE h.name = 'human'")
    assert ends == [(" sat on the mat.",)]
    shown = await hover(editor, uri, start + 2)
    assert shown.startswith("**`␣The`**") and "\n  ␣A " in shown


@pytest.mark.parametrize("client_kind", ["neovim", "vscode"])
async def test_words_taken_one_by_one_grow_one_node(editor: Editor, fake: FakeProvider,
                                                    client_kind: str) -> None:
    """A suggestion taken a word at a time (ctrl+right, ctrl+right, …) is one
    node that grows, not a node per word each with its own marker; Tab then takes the
    rest. Neovim's plugin lets the server insert the word; VS Code inserts it itself."""
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    assert (await command(editor, "loom.suggest", {"uri": uri, "n": 2}))["ok"]
    cat = sql(editor.db, "SELECT id FROM node WHERE content = ?", text_of(CAT))[0][0]
    taken = ""
    labels = set()
    for word in (" The", " cat", " sat"):
        args: dict[str, Any] = {"uri": uri, "node": cat, "text": word}
        if client_kind == "vscode":
            editor.append(uri, word)
            args = {"uri": uri, "inserted": True, "text": word}
        res = await command(editor, "loom.acceptSuggestion", args)
        assert res["ok"], res
        taken += word
        await editor.wait_for(lambda t=taken: editor.texts[uri] == before + t)
        cat = sql(editor.db, "SELECT id FROM node WHERE content = ?",
                  text_of(CAT)[len(taken):])[0][0]
        labels.add(sql(editor.db, "SELECT label FROM node WHERE content = ?", taken)[0][0])
    # one head that grew (same node, same label), one tail, the original kept pruned
    assert len(labels) == 1
    assert sql(editor.db, "SELECT content, pruned FROM node WHERE content LIKE '%cat%' OR "
                          "content LIKE '%the mat.' ORDER BY content") == [
        (" The cat sat", 0), (" The cat sat on the mat.", 1), (" on the mat.", 0)]
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=editor.pos(uri, 0), end=editor.pos(uri, len(editor.texts[uri])))))
    marked = [h for h in hints or [] if editor.pos(uri, len(before)) == h.position]
    assert len(marked) <= 1  # no marker inside the words taken
    assert not [h for h in hints or []
                if editor.pos(uri, len(before)) < h.position < editor.pos(uri, len(before + taken))]
    # the tokens followed the moving cut: " sat" hovers as the model's token
    assert (await hover(editor, uri, len(before) + len(" The cat s"))).startswith("**`␣sat`**")
    # the rest, whole (Tab)
    got = await editor.client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=editor.pos(uri, len(editor.texts[uri])),
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Invoked)))
    assert got is not None and [i.insert_text for i in got.items] == [" on the mat."]
    editor.append(uri, " on the mat.")
    res = await command(editor, "loom.acceptSuggestion", got.items[0].command.arguments[0])
    assert res["ok"], res
    assert editor.texts[uri] == before + text_of(CAT)
    # the second word after a word of another suggestion cuts afresh (nothing moved)
    assert sql(editor.db, "SELECT count(*) FROM node WHERE content LIKE '%cat%' AND pruned = 0"
               ) == [(1,)]
