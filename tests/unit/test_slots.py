"""``slot_at``: what is being typed at a column of a command line, for every verb."""

from __future__ import annotations

import pytest

from loom.commands.catalogue import TOOLS
from loom.commands.grammar import Slot, slot_at
from loom.commands.lexicon import ARROWS


def at(marked: str) -> Slot | None:
    """The slot at the ``|`` in ``marked`` (the bar itself is not part of the line)."""
    col = marked.index("|")
    return slot_at(marked[:col] + marked[col + 1:], col)


# (line with the cursor as |, kinds, verb, key, typed)
SLOTS: list[tuple[str, tuple[str, ...], str | None, str | None, str]] = [
    # the verb, after any arrow and politeness
    ("→ |", ("verb",), None, None, ""),
    ("→ vi|", ("verb",), None, None, "vi"),
    ("→ v|iew a7x2", ("verb",), None, None, "v"),
    ("→ please sh|", ("verb",), None, None, "sh"),
    ("→ could you |", ("verb",), None, None, ""),
    ("vi|", ("verb",), None, None, "vi"),
    # view
    ("→ view |", ("node", "flag", "option"), "view", None, ""),
    ("→ view a7|", ("node", "flag", "option"), "view", None, "a7"),
    ("→ view [a7|", ("node", "flag", "option"), "view", None, "a7"),
    ("→ view [a7x2|]", ("node", "flag", "option"), "view", None, "a7x2"),
    ("→ view a7x2 fu|", ("node", "flag", "option"), "view", None, "fu"),
    ('→ view "a7|', ("node",), "view", None, "a7"),
    ("→ view branch:|", ("node",), "view", "branch", ""),
    ("→ view branch:a7x2 as:pr|", ("value",), "view", "as", "pr"),
    ("→ show me |", ("node", "flag", "option"), "view", None, ""),
    ("→ view node |", ("node",), "view", "node", ""),
    # list
    ("→ list |", ("node", "flag"), "list", None, ""),
    ("→ list a7x2 ann|", ("node", "flag"), "list", None, "ann"),
    # tree
    ("→ tree |", ("node", "flag", "option"), "tree", None, ""),
    ("→ tree from:|", ("node",), "tree", "from", ""),
    ("→ tree from:a7x2 depth:|", ("value",), "tree", "depth", ""),
    ("→ tree levels:3|", ("value",), "tree", "depth", "3"),
    # switch
    ("→ switch to |", ("node", "option"), "switch", None, ""),
    ("→ go to a7|", ("node", "option"), "switch", None, "a7"),
    ('→ switch to a7x2 in tree:"ear|', ("tree",), "switch", "tree", "ear"),
    ("→ switch to a7x2 in tree |", ("tree",), "switch", "tree", ""),
    # continue
    ("→ continue |", ("node", "option"), "continue", None, ""),
    ("→ continue from |", ("node",), "continue", "from", ""),
    ("→ continue from the b3|", ("node",), "continue", "from", "b3"),
    ("→ continue n:|", ("value",), "continue", "n", ""),
    ("→ continue count:|", ("value",), "continue", "n", ""),
    ("→ continue from a7x2 tokens:5|", ("value",), "continue", "tokens", "5"),
    ("→ generate temp:|", ("value",), "continue", "temperature", ""),
    # split
    ("→ split |", ("node", "option"), "split", None, ""),
    ("→ split a7x2 at:|", ("value",), "split", "at", ""),
    ('→ split a7x2 at:5 alt:"|', ("text",), "split", "alt", ""),
    # respond
    ("→ respond |", ("node", "option"), "respond", None, ""),
    ('→ respond a7x2 "hel|', ("text",), "respond", None, "hel"),
    ('→ respond a7x2 "x" as:|', ("value",), "respond", "as", ""),
    # annotate
    ("→ annotate |", ("node",), "annotate", None, ""),
    ('→ annotate a7x2 "the tone |', ("text",), "annotate", None, "the tone "),
    ("→ add a note |", ("node",), "annotate", None, ""),
    # link
    ("→ link a7x2 to |", ("node", "option"), "link", None, ""),
    ('→ link a7x2 to doc:"ch|', ("doc",), "link", "doc", "ch"),
    ('→ link a7x2 to doc: "ch|', ("doc",), "link", "doc", "ch"),
    ('→ link a7x2 to doc:"x" section:|', ("section",), "link", "section", ""),
    ('→ link a7x2 to doc:"x" §mot|', ("section",), "link", "section", "mot"),
    ('→ link a7x2 to tree:"t" node:|', ("node",), "link", "node", ""),
    ('→ link a7x2 to b3k9 note:"|', ("text",), "link", "note", ""),
    ('→ link a7x2 to b3k9 "because|', ("text",), "link", None, "because"),
    # edit
    ("→ edit |", ("node",), "edit", None, ""),
    ('→ edit a7x2 "new |', ("text",), "edit", None, "new "),
    # read
    ('→ read doc:"|', ("doc",), "read", "doc", ""),
    ('→ read "ch|', ("doc",), "read", None, "ch"),
    ('→ read doc "ch|', ("doc",), "read", "doc", "ch"),
    ('→ read doc:"x" |', ("flag", "option"), "read", None, ""),
    ('→ read doc:"x" lines:|', ("value",), "read", "lines", ""),
    ('→ read doc:"x" §|', ("section",), "read", "section", ""),
    # write
    ("→ write |", ("flag", "option"), "write", None, ""),
    ('→ write doc:"x" at:|', ("value",), "write", "at", ""),
    ('→ write doc:"x" replace:|', ("section",), "write", "replace", ""),
    ('→ write doc:"x" append "more |', ("text",), "write", None, "more "),
    # pin
    ("→ pin |", ("node", "option"), "pin", None, ""),
    ('→ pin doc:"no|', ("doc",), "pin", "doc", "no"),
    # stash
    ("→ stash |", ("option",), "stash", None, ""),
    ('→ stash "|', ("text",), "stash", None, ""),
    ('→ stash "plan" content-of:|', ("node",), "stash", "content-of", ""),
    ('→ stash "plan" summary-of:r001-a7|', ("node",), "stash", "summary-of", "a7"),
    ('→ stash "plan" summary-of:r0|', ("node",), "stash", "summary-of", "r0"),
    # recall
    ("→ recall |", ("stash",), "recall", "label", ""),
    ('→ recall "pl|', ("stash",), "recall", "label", "pl"),
    ("→ recall stash:pl|", ("stash",), "recall", "label", "pl"),
    # drop
    ("→ drop |", ("node", "option"), "drop", None, ""),
    ('→ drop stash:"pl|', ("stash",), "drop", "stash", "pl"),
    ('→ drop "pl|', ("stash",), "drop", None, "pl"),
    ("→ drop pin:|", ("node",), "drop", "pin", ""),
    ('→ drop pin:doc:"no|', ("doc",), "drop", "doc", "no"),
    # memory
    ("→ memory |", ("flag",), "memory", None, ""),
    ("→ memory st|", ("flag",), "memory", None, "st"),
    # help
    ("→ help |", ("tool",), "help", None, ""),
    ("→ help vi|", ("tool",), "help", None, "vi"),
    # think
    ("→ think |", ("text",), "think", None, ""),
    ("→ let me think ab|", ("text",), "think", None, "ab"),
]


@pytest.mark.parametrize(("marked", "kinds", "verb", "key", "typed"), SLOTS)
def test_slot(marked: str, kinds: tuple[str, ...], verb: str | None, key: str | None,
              typed: str) -> None:
    slot = at(marked)
    assert slot is not None
    assert (slot.kinds, slot.verb, slot.key, slot.typed) == (kinds, verb, key, typed)


def test_every_verb_has_a_slot_after_it() -> None:
    covered = {verb for _, _, verb, _, _ in SLOTS}
    assert {t.name for t in TOOLS} <= covered
    for t in TOOLS:
        slot = at(f"→ {t.name} |")
        assert slot is not None and slot.verb == t.name


@pytest.mark.parametrize("marked", [
    "  |→ view a7x2",  # in the indentation
    "-|> view a7x2",  # inside the arrow
    "→ blah |",  # after an unknown verb
    "→ view foo:|",  # the value of an option view does not have
    "→ memory trace:|",  # memory has no options
])
def test_no_slot(marked: str) -> None:
    assert at(marked) is None


@pytest.mark.parametrize("arrow", ARROWS)
@pytest.mark.parametrize("indent", ["", "  ", "\t", "\u00a0"])
def test_the_verb_slot_after_every_arrow_starts_at_the_arrow(arrow: str, indent: str) -> None:
    line = f"{indent}{arrow} vi"
    slot = slot_at(line, len(line))
    assert slot is not None and slot.kinds == ("verb",) and slot.typed == "vi"
    assert slot.with_arrow and (slot.start, slot.end) == (len(indent), len(line))


def test_after_politeness_the_verb_slot_keeps_the_words_before_it() -> None:
    slot = at("→ please sh|")
    assert slot is not None and not slot.with_arrow
    assert (slot.start, slot.end) == (9, 11)


def test_ranges_cover_the_whole_token() -> None:
    line = '→ read doc:"char" full'
    slot = slot_at(line, line.index("char") + 2)
    assert slot is not None and slot.kinds == ("doc",) and slot.typed == "ch"
    assert line[slot.start:slot.end] == 'doc:"char"'
    assert (slot.head, slot.quote) == ("doc:", '"')
    open_quote = '→ read doc:"char'
    slot = slot_at(open_quote, len(open_quote))
    assert slot is not None and open_quote[slot.start:slot.end] == 'doc:"char'


def test_a_bracketed_reference_is_replaced_with_its_brackets() -> None:
    line = "→ view [a7]"
    slot = slot_at(line, line.index("]"))
    assert slot is not None and slot.quote == "["
    assert line[slot.start:slot.end] == "[a7]" and slot.typed == "a7"


def test_a_range_keeps_its_first_node() -> None:
    slot = at('→ stash "plan" summary-of:r001-a7|')
    assert slot is not None and slot.head == "summary-of:r001-"


def test_typing_an_option_name() -> None:
    line = "→ tree depth:3"
    slot = slot_at(line, line.index("th"))
    assert slot is not None and slot.kinds == ("option",) and slot.typed == "dep"
    assert line[slot.start:slot.end] == "depth:"


def test_a_slot_follows_the_grammar_on_options_given_twice() -> None:
    # ``from`` already has its value: the next bare word is an argument, not from's value
    slot = at("→ continue from a7x2 |")
    assert slot is not None and slot.key is None and slot.kinds == ("node", "option")
