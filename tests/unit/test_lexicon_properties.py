"""Properties: the grammar, ``extract`` and the editor agree on what a command line is.

Lines are built from random indentation, any arrow form (or none, or a near miss such as
``- >``) and random words, verbs and synonyms among them. Whatever they are:

* the editor's ``is_command_line`` says exactly "after horizontal whitespace, the line
  starts with one of the lexicon's arrows" (checked against plain string methods);
* the grammar reads a command line as its arrow plus the rest: it parses the line as it
  parses the text after the arrow, whichever arrow was used;
* every line the grammar parses into a command when it has an arrow is a command line;
* ``extract`` puts exactly the command lines into batches, and ``prose_before_commands``
  stops at the first of them.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from loom.commands.catalogue import FILLER, TOOLS
from loom.commands.extract import extract
from loom.commands.grammar import parse
from loom.commands.lexicon import (
    ARROWS,
    is_command_line,
    prose_before_commands,
    split_line,
)
from loom.commands.syntax import ParseError, Think

# Not arrows: look-alikes, and no arrow at all ("").
NEAR_MISSES = ("- >", "—>", "–>", "= >", ">", "--->", "<-", "←", "⇐", "~>", "=", "-", "")
# Horizontal whitespace of several kinds, never a line break.
indents = st.text(alphabet=" \t\u00a0\u2003\u3000", max_size=4)
heads = st.one_of(st.sampled_from(ARROWS), st.sampled_from(NEAR_MISSES))
seps = st.sampled_from(["", " ", "  ", "\t"])
phrases = [p for t in TOOLS if t.name != "think" for p in (t.name, *t.synonyms)
           if p.split()[0] not in {"thinking", "reflect", "ponder", "thought", "thoughts"}]
vocabulary = sorted({*phrases, *FILLER, *(f for t in TOOLS for f in t.flag_words),
                     "a7x2", "b3k9", "ann-3", "from:a7x2", "n:3", "tokens:40", "§motivation"})
# Free words: no quotes (a quote may run over lines in extract), no line breaks.
free = st.text(alphabet=st.characters(blacklist_characters="\"'“”‘’«»\n\r`~",
                                      blacklist_categories=("Cs",)), min_size=1, max_size=12)
words = st.lists(st.one_of(st.sampled_from(vocabulary), free), max_size=6)
bodies = st.builds(" ".join, words)
lines = st.builds(lambda i, h, s, b: i + h + s + b, indents, heads, seps, bodies)


def _starts_with_arrow(line: str) -> bool:
    """The definition, spelt without the lexicon's regex."""
    i = 0
    while i < len(line) and line[i].isspace() and line[i] not in "\r\n":
        i += 1
    return any(line.startswith(arrow, i) for arrow in ARROWS)


@given(lines)
@example("  ⇒ view a7x2")
@example("--> view a7x2")
@example("- > view a7x2")
@example("\u00a0➜ vi")
def test_command_lines_are_lines_that_start_with_an_arrow(line: str) -> None:
    assert is_command_line(line) is _starts_with_arrow(line)
    indent, arrow, body = split_line(line)
    assert indent + arrow + body == line
    assert (arrow != "") is is_command_line(line)


@given(lines)
def test_the_grammar_reads_a_command_line_as_its_arrow_and_the_rest(line: str) -> None:
    if is_command_line(line):
        assert parse(line) == parse(split_line(line).body)


@given(indents, st.sampled_from(ARROWS), seps, bodies)
def test_every_arrow_means_the_same(indent: str, arrow: str, sep: str, body: str) -> None:
    line = indent + arrow + sep + body
    got = parse(line)
    assert got == parse("→ " + body)
    if not isinstance(got, ParseError):  # the grammar parses it, so the editor runs it
        assert is_command_line(line)


@given(indents, st.sampled_from(NEAR_MISSES), seps, bodies)
def test_near_misses_are_prose_to_everyone(indent: str, near: str, sep: str, body: str) -> None:
    line = indent + near + sep + body
    if not _starts_with_arrow(line):  # a body may itself begin with an arrow
        assert not is_command_line(line)
        assert prose_before_commands(line) == (line if line.strip() else "")


def _is_think(line: str) -> bool:
    return is_command_line(line) and isinstance(parse(line), Think)


@given(st.lists(st.one_of(lines, bodies, st.just("")), max_size=8))
def test_extract_batches_exactly_the_command_lines(text_lines: list[str]) -> None:
    # a think block swallows the lines after it: those are checked elsewhere
    cut = next((i for i, line in enumerate(text_lines) if _is_think(line)), len(text_lines))
    text_lines = text_lines[:cut]
    text = "\n".join(text_lines)
    batched: list[int] = []
    for seg in extract(text):
        if seg.kind == "batch":
            assert [n for n, _ in seg.commands] == list(range(seg.start_line, seg.end_line + 1))
            batched += [n for n, _ in seg.commands]
        else:
            assert seg.kind == "prose"
            assert not any(is_command_line(line) for line in seg.text.split("\n"))
    assert batched == [i for i, line in enumerate(text_lines) if is_command_line(line)]
    for n in batched:
        assert extract(text_lines[n])[0].commands == [(0, parse(text_lines[n]))]
    kept = prose_before_commands(text)
    first = next((i for i in batched), len(text_lines))
    before = "\n".join(text_lines[:first])
    assert kept == (before if before.strip() else "")
