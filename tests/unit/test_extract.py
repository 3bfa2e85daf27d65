"""Finding arrow commands, batches and think blocks in a model's free text."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from loom.commands.extract import ReplySegment, extract
from loom.commands.syntax import Annotate, List, ParseError, Respond, View


def _kinds(segments: list[ReplySegment]) -> list[str]:
    return [s.kind for s in segments]


def test_seed_batch_is_one_batch_of_three() -> None:
    text = "→ view a7x2\n→ view b3k9\n→ list a7x2 annotations"
    (batch,) = extract(text)
    assert batch.kind == "batch"
    assert batch.commands == [
        (0, View(node="a7x2")),
        (1, View(node="b3k9")),
        (2, List(node="a7x2", what="annotations")),
    ]
    assert (batch.start_line, batch.end_line, batch.start, batch.end) == (0, 2, 0, len(text))
    assert batch.text == text


def test_prose_around_a_batch() -> None:
    text = "Let me look.\n→ view a7x2\n→ view b3k9\nThat helps."
    segments = extract(text)
    assert _kinds(segments) == ["prose", "batch", "prose"]
    prose, batch, after = segments
    assert prose.text == "Let me look." and (prose.start, prose.end) == (0, 12)
    assert (batch.start_line, batch.end_line) == (1, 2)
    assert text[batch.start:batch.end] == "→ view a7x2\n→ view b3k9"
    assert [line for line, _ in batch.commands] == [1, 2]
    assert after.text == "That helps." and after.start_line == after.end_line == 3


def test_a_blank_line_ends_a_batch() -> None:
    segments = extract("→ view a7x2\n\n→ view b3k9")
    assert _kinds(segments) == ["batch", "prose", "batch"]
    assert segments[1].text == ""
    assert segments[2].commands == [(2, View(node="b3k9"))]


def test_the_arrow_must_start_the_line() -> None:
    segments = extract("I would → view a7x2 here\n  → view b3k9")
    assert _kinds(segments) == ["prose", "batch"]
    assert segments[1].commands == [(1, View(node="b3k9"))]


def test_fenced_code_is_prose() -> None:
    text = "Example:\n```\n→ view a7x2\n```\n~~~text\n→ view b3k9\n~~~\n→ view c4m2"
    segments = extract(text)
    assert _kinds(segments) == ["prose", "batch"]
    assert segments[0].end_line == 6
    assert segments[1].commands == [(7, View(node="c4m2"))]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert _kinds(extract("```\n→ view a7x2\n→ view b3k9")) == ["prose"]


def test_unparseable_lines_stay_in_the_batch_as_errors() -> None:
    (batch,) = extract("→ view a7x2\n→ lint a7x2")
    assert batch.commands[0] == (0, View(node="a7x2"))
    line, error = batch.commands[1]
    assert line == 1 and isinstance(error, ParseError)


def test_seed_think_block() -> None:
    text = (
        "→ think\n"
        "I notice the human seems stuck on this scene. The problem might be that \n"
        "the motivation for the character's choice isn't clear yet. I could:\n"
        "1. Suggest exploring a branch where we see an earlier scene\n"
        "\n"
        "Let me try option 3 first.\n"
        "←\n"
        "→ continue from a7x2 n:3"
    )
    think, batch = extract(text)
    assert think.kind == "think" and think.closed
    assert (think.start_line, think.end_line) == (0, 6)
    assert think.content == "\n".join(text.split("\n")[1:6])
    assert think.text == "\n".join(text.split("\n")[:7])
    assert batch.kind == "batch" and batch.start_line == 7


def test_arrow_lines_inside_a_think_block_are_thought_not_commands() -> None:
    (think,) = extract("→ think\nmaybe:\n→ view a7x2\n<-")
    assert think.content == "maybe:\n→ view a7x2"
    assert think.closed


def test_an_unclosed_think_runs_to_the_end() -> None:
    (think,) = extract("→ think\nstill thinking\n→ view a7x2")
    assert think.content == "still thinking\n→ view a7x2"
    assert not think.closed
    assert think.end_line == 2


def test_a_one_line_think_and_a_think_with_text_on_its_first_line() -> None:
    segments = extract("→ think quick thought\n→ view a7x2")
    assert _kinds(segments) == ["think", "batch"]
    assert segments[0].content == "quick thought" and segments[0].closed
    (block,) = extract("→ think first line\nsecond line\n←")
    assert block.content == "first line\nsecond line"


def test_think_splits_a_batch() -> None:
    segments = extract("→ view a7x2\n→ think\nhm\n←\n→ view b3k9")
    assert _kinds(segments) == ["batch", "think", "batch"]


def test_quoted_content_may_run_over_lines() -> None:
    text = '→ respond a7x2 "para one\n\npara two" as:context\n→ view a7x2'
    (batch,) = extract(text)
    assert batch.commands == [
        (0, Respond(node="a7x2", content="para one\n\npara two", as_="context")),
        (3, View(node="a7x2")),
    ]
    assert (batch.start_line, batch.end_line) == (0, 3)


def test_an_unterminated_quote_that_never_closes_is_one_error() -> None:
    segments = extract('→ annotate a7x2 "never closed\nprose after')
    assert _kinds(segments) == ["batch", "prose"]
    line, error = segments[0].commands[0]
    assert line == 0 and isinstance(error, ParseError)


def test_crlf_and_trailing_newline() -> None:
    text = "hello\r\n→ annotate a7x2 \"x\"\r\n"
    prose, batch = extract(text)
    assert prose.text == "hello"
    assert batch.commands == [(1, Annotate(node="a7x2", content="x"))]
    assert text[batch.start:batch.end] == '→ annotate a7x2 "x"'


def test_empty_text_has_no_segments() -> None:
    assert extract("") == []


LINES = st.sampled_from([
    "→ view a7x2", "→ think", "←", "<-", "", "```", "prose line", "  → list a7x2 links",
    '→ respond a7x2 "open', 'close" as:context', "→ think inline", "→ lint", "~~~",
])


@given(st.lists(LINES, max_size=12).map("\n".join))
def test_segments_tile_the_text(text: str) -> None:
    segments = extract(text)
    if not text:
        assert segments == []
        return
    assert segments[0].start_line == 0 and segments[0].start == 0
    for before, after in pairwise(segments):
        assert after.start_line == before.end_line + 1
        assert text[before.end] == "\n" and after.start == before.end + 1
    assert segments[-1].end_line == len(text.split("\n")) - 1 - text.endswith("\n")
    for segment in segments:
        assert text[segment.start:segment.end] == segment.text
        if segment.kind == "batch":
            assert segment.commands
            assert all(segment.start_line <= line <= segment.end_line
                       for line, _ in segment.commands)
