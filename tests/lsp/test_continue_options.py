"""Every option of `→ continue`, from the editors (issue 44, item 5): ``loom.continue``
takes the options as the writer typed them and the server reads them with the grammar of
a typed `→ continue` line (its ✗ errors too), so an editor's prompt needs no list of
option names; and a hover over an option or a flag of a command line explains it from
the catalogue. The real server, with VS Code's and Neovim's capabilities, and a local
server speaking OpenAI's wire format as the subject model."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.grammar import parse
from loom.render.formats import error
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql

fake, client = fake_model_session("continue-options", "fake-base", "subject")


async def _continue(editor: Editor, **args: Any) -> dict[str, Any]:
    return await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(  # type: ignore[no-any-return]
        command="loom.continue", arguments=[args]))


async def test_loom_continue_sends_the_options_typed(editor: Editor, fake: FakeProvider) -> None:
    """VS Code's prompt read only n: and tokens:, Neovim's only N and TOKENS: temperature,
    top_p, seed or models could not be asked from an editor."""
    uri = await open_demo(editor)
    res = await _continue(editor, uri=uri, n=3,
                          options="temperature:0.7 n:2   top_p:0.9 tokens:20 stop:\"\\n\"")
    assert res["ok"] and res["message"].startswith("✓ 2 continuations"), res
    (asked,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert (asked["temperature"], asked["top_p"], asked["n"], asked["max_tokens"],
            asked["stop"]) == (0.7, 0.9, 2, 20, ["\n"]), asked  # the options win over n=3


async def test_options_are_refused_as_the_typed_line_is(editor: Editor,
                                                        fake: FakeProvider) -> None:
    """What `→ continue OPTIONS` would not take is the grammar's ✗, word for word, and
    nothing is asked of the model or committed; a near-miss is read, and said."""
    uri = await open_demo(editor)
    editor.append(uri, " She called out.")
    nodes = sql(editor.db, "SELECT count(*) FROM node")  # type: ignore[arg-type]
    typed = parse("→ continue n:2 bogus:1")
    assert isinstance(typed, syntax.ParseError)
    res = await _continue(editor, uri=uri, options="n:2 bogus:1")
    assert not res["ok"] and res["message"] == error("INVALID_SYNTAX", typed.message,
                                                     typed.hint), res
    for options, start in (("→ continue n:2", "✗ INVALID_SYNTAX: options, not a command"),
                           ("from root n:1", "✗ INVALID_SYNTAX: Continue continues the end"),
                           ("n:abc", '✗ INVALID_SYNTAX: n must be a whole number, got "abc"'),
                           ("n:11", "✗ LIMIT_EXCEEDED")):
        res = await _continue(editor, uri=uri, options=options)
        assert not res["ok"] and res["message"].startswith(start), (options, res)
    assert fake.requests_to(OPENAI_COMPLETIONS) == []
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes  # type: ignore[arg-type]
    res = await _continue(editor, uri=uri, options="n:1 temprature:0.5")
    assert res["ok"], res
    assert res["message"].splitlines()[0].endswith("(read as → continue n:1 temperature:0.5)")
    (asked,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert asked["temperature"] == 0.5, asked


async def _hover(editor: Editor, uri: str, at: int) -> lsp.Hover | None:
    return await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, at)))


async def test_hover_explains_an_option_or_a_flag_of_a_command_line(
        editor: Editor, fake: FakeProvider) -> None:
    """Hovering `temperature:` in a `→ continue` line answered null (verbs had their help
    page; options and flags nothing): now each says what it is, from the catalogue."""
    uri = await open_demo(editor)
    editor.append(uri, "\n→ continue n:2 temp:0.7\n→ view root full\n→ continue from root")
    text = editor.texts[uri]
    for word, says in (("temp:", "temperature: — sampling temperature (0-2)"),
                       ("0.7", "Its value: a number from 0 to 2."),
                       ("n:2", "n: — how many (1-10)"),
                       ("full", "full — complete content"),
                       ("from", "from: — node to continue from")):
        at = text.rindex(word) + 1
        got = await _hover(editor, uri, at)
        assert got is not None, word
        assert isinstance(got.contents, lsp.MarkupContent) and says in got.contents.value, (
            word, got.contents)
        token = text.rindex("temp:0.7") if word in ("temp:", "0.7") else text.rindex(word)
        assert got.range is not None and got.range.start == editor.pos(uri, token), word
    # the verb keeps its help page, and a word that is nothing of the verb has no hover
    verb = await _hover(editor, uri, text.rindex("view") + 1)
    assert verb is not None and "view — Inspect" in verb.contents.value  # type: ignore[union-attr]
    editor.append(uri, "\n→ continue n:2 bogus:1")
    assert await _hover(editor, uri, editor.texts[uri].rindex("bogus") + 1) is None


async def test_a_prompt_can_say_what_the_options_read_as_while_they_are_typed(
        editor: Editor, fake: FakeProvider) -> None:
    """``loom/continueOptions``: the command the options read as (a typo's reading
    said), or the ✗ the typed line gets, limits included; nothing runs."""
    await open_demo(editor)
    said = await editor.request("loom/continueOptions", {"options": "n:2  temp:0.7"})
    assert said["ok"] and said["message"] == "✓ → continue n:2 temperature:0.7", said
    assert said["data"] == {"reads_as": "→ continue n:2 temperature:0.7", "corrected": False}
    said = await editor.request("loom/continueOptions", {"options": "temprature:0.7"})
    assert said["message"] == "✓ read as → continue temperature:0.7", said
    assert said["data"]["corrected"] is True, said
    for options, start in (("n:2 bogus:1", '✗ INVALID_SYNTAX: unknown option "bogus:"'),
                           ("n:11", "✗ LIMIT_EXCEEDED")):
        said = await editor.request("loom/continueOptions", {"options": options})
        assert not said["ok"] and said["message"].startswith(start), said
    assert fake.requests == []


async def test_a_loom_file_hovers_an_option_too(editor: Editor, fake: FakeProvider,
                                                tmp_path: Any) -> None:
    """docs/lsp.md: a `.loom` file's `→` lines hover a verb, an option or a flag as a
    path does."""
    uri = (tmp_path / "notes.loom").as_uri()
    editor.open(uri, "→ continue n:2 top_p:0.9\n")
    got = await _hover(editor, uri, editor.texts[uri].index("top_p") + 2)
    assert got is not None and "top_p: — only the likeliest tokens" in got.contents.value  # type: ignore[union-attr]
