"""Scoring the writer's words through the real server, the real OpenAI SDK and a local
server speaking the completions wire format with ``echo`` (VS Code's and Neovim's
capabilities): the toggle scores the path's text, the writer's words get the heatmap,
the hover and the alternatives model text has, the least likely span is an Information
diagnostic whose quick fix branches with the model's choice; scores another process
makes reach the open editor; off, the marks go."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from loom.model import tokens as T
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_echo
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql
from tests.lsp.test_probabilities import read_code_actions_as_editors_do

fake, client = fake_model_session("scoring", "fake-base", "subject")

PARAGRAPH = " Gulls wheeled over the fjord, and nobody spoke."


async def command(editor: Editor, name: str, args: dict[str, Any]) -> Any:
    return await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[args]))


async def modifiers_at(editor: Editor, uri: str, offset: int) -> set[str]:
    names = editor.server_capabilities.semantic_tokens_provider.legend.token_modifiers  # type: ignore[attr-defined]
    data = (await editor.client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))).data
    doc, line, col = editor.doc(uri), 0, 0
    want = doc.position_at(offset)
    for i in range(0, len(data), 5):
        dl, dc, length, _typ, mods = data[i:i + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        if line == want[0] and col <= want[1] < col + length:
            return {n for b, n in enumerate(names) if mods & (1 << b) and n in T.BUCKET_NAMES}
    return set()


def scored(editor: Editor) -> list[tuple[str, str]]:
    return sql(editor.db, "SELECT n.content, t.scorer FROM node n JOIN node_tokens t "  # type: ignore[arg-type]
                          "ON t.node = n.id WHERE t.scorer IS NOT NULL ORDER BY n.created")


async def test_toggle_scores_the_writers_words_marks_the_least_likely_and_branches(
        editor: Editor, fake: FakeProvider) -> None:
    read_code_actions_as_editors_do(editor.client)
    fake.set_default(OPENAI_COMPLETIONS, openai_echo(unlikely=("fjord",)))
    uri = await open_demo(editor)
    start = len(editor.texts[uri])
    editor.append(uri, PARAGRAPH)
    fjord = start + PARAGRAPH.index("fjord")
    assert await modifiers_at(editor, uri, fjord) == set()  # a writer's text: no colour
    res = await command(editor, "loom.toggleScores", {"uri": uri})
    assert res["ok"], res
    assert res["data"]["on"] is True and res["data"]["marked"] == 1, res
    assert "scored [" in res["message"] and "with fake (fake-base)" in res["message"]
    # the typed paragraph was committed as the human's node, then scored with the rest
    assert (PARAGRAPH, "fake (fake-base)") in scored(editor)
    (sent,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert sent["echo"] is True and sent["prompt"].endswith(PARAGRAPH)
    # the heatmap: the writer's words coloured as model text is
    assert await modifiers_at(editor, uri, fjord + 1) == {"probVeryLow"}
    assert await modifiers_at(editor, uri, start + 2) == {"probHigh"}  # " Gulls", p = 50%
    # the least likely span: an Information diagnostic under "fjord,"
    await editor.wait_for(lambda: any(d.code == "loom.score"
                                      for d in editor.client.diagnostics.get(uri, [])))
    (mark,) = [d for d in editor.client.diagnostics[uri] if d.code == "loom.score"]
    assert mark.severity == lsp.DiagnosticSeverity.Information and mark.source == "loom"
    assert mark.range.start == editor.pos(uri, fjord)
    assert mark.message == ("‘fjord,’ is unlikely here: 1 in 5,000 (fake (fake-base)); the "
                            "model's choice: ‘␣the’ (30.0%)")
    # hover: the token's table, and who scored it
    got = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, fjord)))
    assert got is not None and "**`␣fjord,`** · 0.02%" in got.contents.value
    assert "scored by fake (fake-base)" in got.contents.value
    # the quick fix: branch there with the model's choice
    actions = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=mark.range,
        context=lsp.CodeActionContext(diagnostics=[mark])))
    fix = next(a for a in actions if a.kind == lsp.CodeActionKind.QuickFix)
    assert fix.title == "Branch here with the model's choice ‘␣the’ (30.0%)"
    res = await command(editor, fix.command.command, fix.command.arguments[0])
    assert res["ok"], res
    before = PARAGRAPH[:PARAGRAPH.index(" fjord")]
    await editor.wait_for(lambda: editor.texts[uri][start:] == before + " the")
    (author,) = sql(editor.db, "SELECT author_type FROM node WHERE content = ' the'")  # type: ignore[arg-type]
    assert author == ("model",)
    # off: the marks go, and the colours are as they were (off)
    res = await command(editor, "loom.toggleScores", {"uri": uri, "on": False})
    assert res["ok"] and res["data"]["on"] is False
    await editor.wait_for(lambda: not any(d.code == "loom.score"
                                          for d in editor.client.diagnostics.get(uri, [])))
    assert await modifiers_at(editor, uri, start + 2) == set()


async def test_what_another_process_scores_reaches_the_open_editor(
        editor: Editor, fake: FakeProvider) -> None:
    """The store's caches are per process: a score written elsewhere (the CLI, the
    collaborator) comes through the change feed, and the open buffer's colours follow."""
    fake.set_default(OPENAI_COMPLETIONS, openai_echo(unlikely=("fjord",)))
    uri = await open_demo(editor)
    assert (await command(editor, "loom.toggleProbabilities", {"on": True}))["ok"]
    house = editor.texts[uri].index(" house") + 2  # (the text's first word: no probability)
    assert await modifiers_at(editor, uri, house) == set()  # the demo's words, unscored
    tree, tip = uri.split("/")[3], uri.split("/")[4]
    env = {**os.environ, "LOOM_CONFIG": str(Path(tempfile.gettempdir())
                                            / f"loom-lsp-scoring-{os.getpid()}.toml"),
           "LOOM_API_KEY": "sk-test-not-a-secret", "LOOM_NO_KEYRING": "1",
           "LOOM_SUMMARIES": "off"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "loom.cli", "--db", str(editor.db), "do", tree,
        f"→ score branch:{tip}", stdout=subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    assert out.decode().startswith("✓ scored ["), out
    deadline = asyncio.get_running_loop().time() + 10
    while await modifiers_at(editor, uri, house) != {"probHigh"}:
        assert asyncio.get_running_loop().time() < deadline, "the colours never came"
        await asyncio.sleep(0.1)


async def test_loom_cancel_stops_a_scoring_with_nothing_written(
        editor: Editor, fake: FakeProvider) -> None:
    echo = openai_echo()

    def slow(req: Any) -> Any:
        reply = echo(req)
        reply.delay_s = 5.0
        return reply

    fake.set_default(OPENAI_COMPLETIONS, slow)
    uri = await open_demo(editor)
    toggling = asyncio.ensure_future(command(editor, "loom.toggleScores", {"uri": uri}))
    await editor.wait_for(lambda: len(fake.requests_to(OPENAI_COMPLETIONS)) == 1)
    cancelled = await command(editor, "loom.cancel", {})
    assert cancelled["ok"] and cancelled["message"] == "✓ cancelling", cancelled
    res = await toggling
    assert res["ok"] and res["message"] == "✓ scoring stopped: nothing was written", res
    assert res["data"]["on"] is False  # a cancelled toggle leaves scoring off
    assert scored(editor) == []
