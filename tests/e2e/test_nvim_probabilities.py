"""What the model almost wrote, in a real headless Neovim with the plugin: the
subject model is a local HTTP server speaking the OpenAI completions wire format with
logprobs (through the real SDK, in the real server). Hover shows a token's alternatives;
the alternative's code action splits the node and continues from the alternative; the
probability view colours model text; ghost-text suggestions cycle and accept."""

# ruff: noqa: F811 - the Neovim fixtures come from test_nvim_plugin (see the import)
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_provider import (
    OPENAI_COMPLETIONS,
    FakeProvider,
    LogprobToken,
    openai_logprob_stream,
)
from tests.e2e.test_nvim_plugin import (  # noqa: F401 - fixtures
    Demo,
    Editor,
    demo,
    editor,
    template,
    wait_for,
)

pytestmark = pytest.mark.nvim

CAT: list[LogprobToken] = [
    (" The", -0.1, [(" The", -0.1), (" A", -2.6)]),
    (" cat", -0.7, [(" cat", -0.7), (" dog", -1.1)]),
    (" sat", -1.6, [(" lay", -0.9), (" sat", -1.6), (" stood", -2.3)]),
    (" on", -0.05, [(" on", -0.05)]),
    (" the", -0.2, [(" the", -0.2)]),
    (" mat.", -3.5, [(" rug.", -0.6), (" mat.", -3.5)]),
]
DOG: list[LogprobToken] = [(" A", -1.0, [(" A", -1.0)]), (" dog", -0.5, [(" dog", -0.5)]),
                           (" barked.", -0.3, [(" barked.", -0.3)])]
AFTER_LAY: list[LogprobToken] = [(" down", -0.4, [(" down", -0.4)]),
                                 (" to sleep.", -0.2, [(" to sleep.", -0.2)])]


def text_of(tokens: list[LogprobToken]) -> str:
    return "".join(t for t, _lp, _alts in tokens)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The subject model for the server the editor starts (set before Neovim is)."""
    with FakeProvider() as server:
        config = tmp_path / "loom.toml"
        config.write_text(
            '[profiles.fake]\nprovider = "openai-compatible"\nmodel = "fake-base"\n'
            f'base_url = "{server.openai_base_url}"\nmax_attempts = 1\n\n'
            '[defaults]\nsubject = "fake"\n', encoding="utf-8")
        monkeypatch.setenv("LOOM_CONFIG", str(config))
        monkeypatch.setenv("LOOM_API_KEY", "sk-test-not-a-secret")
        monkeypatch.setenv("LOOM_NO_KEYRING", "1")
        monkeypatch.setenv("LOOM_SUMMARIES", "off")
        yield server


def end_of_text(ed: Editor, text: str) -> bool:
    return ed.text.endswith(text)


def ghost(ed: Editor) -> str:
    """The suggestion shown at the end of the buffer (virtual text), "" when none."""
    return ed.lua("""
        local ns = vim.api.nvim_get_namespaces()['loom_suggest']
        local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
          for _, chunk in ipairs(m[4].virt_text or {}) do out[#out + 1] = chunk[1] end
          for _, line in ipairs(m[4].virt_lines or {}) do
            out[#out + 1] = '\\n'
            for _, chunk in ipairs(line) do out[#out + 1] = chunk[1] end
          end
        end
        return table.concat(out)""")


def generate(ed: Editor, demo: Demo, fake: FakeProvider) -> str:
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    ed.open(demo.uri(demo.tip))
    before = ed.text
    ed.cmd("Loom continue 2")
    wait_for(lambda: end_of_text(ed, text_of(CAT)), 15, "the continuation in the buffer")
    # the streamed text can show before the generation's nodes are committed
    wait_for(lambda: demo.scalar("SELECT count(*) FROM node_tokens") == 2, 15,
             "both continuations' token data stored")
    return before


def test_hover_and_branch_from_an_alternative(fake: FakeProvider, editor: Editor,
                                              demo: Demo) -> None:
    before = generate(editor, demo, fake)
    editor.set_cursor_on("sat on the mat")
    # the streamed text is provisional (no hover) until the generation's last edit lands
    shown = wait_for(lambda: (editor.request("textDocument/hover") or {}).get("contents"), 15,
                     "a hover on the landed continuation")["value"]
    assert shown.startswith("**`␣sat`** · 20.2%") and "\n  ␣lay " in shown
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([AFTER_LAY]))
    editor.lua("""vim.lsp.buf.code_action({ apply = true, filter = function(a)
        return a.title:find('‘␣lay’', 1, true) ~= nil end })""")
    want = before + " The cat lay" + text_of(AFTER_LAY)
    wait_for(lambda: editor.text == want, 15, "the branch from ' lay', continued")
    # the tree: the original kept, hidden; its halves; the alternative; its continuation
    assert demo.scalar("SELECT pruned FROM node WHERE content = ?", text_of(CAT)) == 1
    head = demo.scalar("SELECT id FROM node WHERE content = ' The cat'")
    kids = demo.scalar("SELECT group_concat(n.content, '|') FROM edge_source s JOIN node n "
                       "ON n.id = s.target WHERE s.node = ?", head)
    assert sorted(kids.split("|")) == [" lay", " sat on the mat."]
    assert demo.scalar("SELECT n.content FROM position p JOIN participant h ON h.id = "
                       "p.participant JOIN node n ON n.id = p.tip WHERE h.name = 'human'") \
        == text_of(AFTER_LAY)
    wait_for(lambda: editor.lua("return vim.bo.modified") is False, 5, "a clean buffer")


def test_probability_colours_and_ghost_text_suggestions(fake: FakeProvider, editor: Editor,
                                                        demo: Demo) -> None:
    before = generate(editor, demo, fake)
    # the probability view colours model tokens, confident to surprising
    editor.cmd("Loom probabilities on")

    def mods_at(needle: str) -> list[str]:
        row, col = editor.set_cursor_on(needle)
        toks = editor.lua("return vim.lsp.semantic_tokens.get_at_pos(0, ...) or {}", row - 1,
                          col)
        return [m for t in toks for m, on in (t.get("modifiers") or {}).items() if on]

    wait_for(lambda: "probVeryLow" in mods_at(" mat."), 10, "a surprising token coloured")
    assert "probVeryHigh" in mods_at("The cat sat")
    colour = editor.lua("return vim.api.nvim_get_hl(0, { name = '@lsp.mod.probVeryLow', "
                        "link = false })")
    assert colour.get("fg") is not None
    editor.cmd("Loom probabilities off")
    wait_for(lambda: not mods_at(" mat.") or "probVeryLow" not in mods_at(" mat."), 10,
             "the colours gone")
    # the bare toggle (before: its argument went as a JSON array, refused),
    # on and off again, and no "assertion failed!" from the semantic tokens client
    editor.cmd("Loom probabilities")
    wait_for(lambda: "probVeryLow" in mods_at(" mat."), 10, "the toggle to colour again")
    editor.cmd("Loom probabilities")
    wait_for(lambda: not mods_at(" mat.") or "probVeryLow" not in mods_at(" mat."), 10,
             "the toggle to take them away")
    said = editor.nvim.command_output("messages")
    assert "INVALID_SYNTAX" not in said and "assertion failed" not in said, said
    # a fresh path end: suggestions from the model, shown as ghost text
    editor.cmd("Loom commit")
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([DOG, CAT]))
    editor.cmd("Loom suggest 2")
    wait_for(lambda: ghost(editor).startswith(text_of(DOG)), 15, "the first suggestion")
    assert editor.text == before + text_of(CAT)  # nothing inserted yet
    editor.nvim.input("<M-]>")
    wait_for(lambda: ghost(editor).startswith(text_of(CAT)), 5, "the second suggestion")
    assert "(2/2)" in ghost(editor)
    editor.nvim.input("<M-[>")
    wait_for(lambda: ghost(editor).startswith(text_of(DOG)), 5, "back to the first")
    editor.nvim.input("<M-Right>")  # accept a word
    wait_for(lambda: editor.text == before + text_of(CAT) + " A", 10, "the word accepted")
    wait_for(lambda: ghost(editor).startswith(" dog barked."), 10, "the rest offered")
    editor.nvim.input("<M-l>")  # accept the rest
    wait_for(lambda: editor.text == before + text_of(CAT) + text_of(DOG), 10, "all of it")
    wait_for(lambda: ghost(editor) == "", 5, "no more suggestions")
    assert demo.scalar("SELECT n.content FROM position p JOIN participant h ON h.id = "
                       "p.participant JOIN node n ON n.id = p.tip WHERE h.name = 'human'") \
        == " dog barked."
    assert demo.scalar("SELECT count(*) FROM node WHERE author_type = 'human' AND content "
                       "LIKE '%dog%'") == 0
