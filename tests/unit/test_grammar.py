"""The arrow-command parser: seed 000's syntax, seed 002's variants, natural language,
typos, and the errors (with hints) for what cannot be parsed."""

from __future__ import annotations

import pytest

from loom.commands.canonical import to_text
from loom.commands.grammar import parse
from loom.commands.syntax import (
    Annotate,
    Command,
    Continue,
    Drop,
    Edit,
    Help,
    LinkTarget,
    List,
    MakeLink,
    Memory,
    ParseError,
    PinBlock,
    Read,
    Recall,
    Respond,
    ShowTree,
    StashBlock,
    Switch,
    Think,
    View,
    Write,
)


def _node(ref: str) -> LinkTarget:
    return LinkTarget(kind="node", node=ref)


# Every syntax form seed 000 lists (and its examples), with the model it must produce.
SEED_000: list[tuple[str, Command]] = [
    ("→ view a7x2", View(node="a7x2")),
    ("→ view a7x2 full", View(node="a7x2", detail="full")),
    ("→ view a7x2 with-annotations", View(node="a7x2", detail="with-annotations")),
    ("→ view branch:b3k9 as:prose", View(branch="b3k9", as_="prose")),
    ("→ view branch:b3k9 as:nodes", View(branch="b3k9", as_="nodes")),
    ("→ list a7x2 continuations", List(node="a7x2", what="continuations")),
    ("→ list a7x2 annotations", List(node="a7x2", what="annotations")),
    ("→ list a7x2 links", List(node="a7x2", what="links")),
    ("→ tree", ShowTree()),
    ("→ tree from:a7x2 depth:3", ShowTree(from_="a7x2", depth=3)),
    ("→ tree summary", ShowTree(summary=True)),
    ("→ switch to b3k9", Switch(node="b3k9")),
    ('→ switch to x9y3 in tree:"earlier draft"', Switch(node="x9y3", tree="earlier draft")),
    ("→ continue", Continue()),
    ("→ continue from a7x2", Continue(from_="a7x2")),
    ("→ continue from b3k9 n:3 tokens:40", Continue(from_="b3k9", n=3, tokens=40)),
    ("→ continue from b3k9 n:2", Continue(from_="b3k9", n=2)),
    ('→ respond a7x2 "text"', Respond(node="a7x2", content="text")),
    ('→ respond a7x2 "text" as:context', Respond(node="a7x2", content="text", as_="context")),
    ('→ respond a7x2 "do it" as:instruction',
     Respond(node="a7x2", content="do it", as_="instruction")),
    ('→ annotate a7x2 "this is where the tone shifts"',
     Annotate(node="a7x2", content="this is where the tone shifts")),
    ('→ annotate b3k9 "promising direction"', Annotate(node="b3k9", content="promising direction")),
    ("→ link a7x2 to b3k9", MakeLink(node="a7x2", target=_node("b3k9"))),
    ('→ link a7x2 to doc:"character notes"',
     MakeLink(node="a7x2", target=LinkTarget(kind="doc", doc="character notes"))),
    ('→ link a7x2 to doc:"character notes" §motivation',
     MakeLink(node="a7x2",
              target=LinkTarget(kind="doc", doc="character notes", section="motivation"))),
    ('→ link a7x2 to tree:"earlier draft" node:x9y3',
     MakeLink(node="a7x2", target=LinkTarget(kind="tree", tree="earlier draft", node="x9y3"))),
    ('→ link a7x2 to x9y3 note:"same scene, different approach"',
     MakeLink(node="a7x2", target=_node("x9y3"), note="same scene, different approach")),
    ('→ edit a7x2 "revised content here"', Edit(node="a7x2", content="revised content here")),
    ('→ read doc:"character notes"', Read(doc="character notes")),
    ('→ read doc:"character notes" summary', Read(doc="character notes", summary=True)),
    ('→ read doc:"chapter 3" lines:1-50', Read(doc="chapter 3", lines=(1, 50))),
    ('→ read doc:"character notes" section:motivation',
     Read(doc="character notes", section="motivation")),
    ('→ write doc:"notes" append "new insight"', Write(doc="notes", content="new insight")),
    ('→ write doc:"notes" at:end "conclusion"',
     Write(doc="notes", mode="at", at="end", content="conclusion")),
    ('→ write doc:"notes" replace:motivation "…"',
     Write(doc="notes", mode="replace", section="motivation", content="…")),
    ("→ pin a7x2", PinBlock(node="a7x2")),
    ('→ pin doc:"character notes"', PinBlock(doc="character notes")),
    ('→ pin doc:"character notes" section:motivation',
     PinBlock(doc="character notes", section="motivation")),
    ('→ stash "marie insight" "Marie\'s reluctance stems from..."',
     StashBlock(label="marie insight", content="Marie's reluctance stems from...")),
    ('→ stash "key reference" content-of:47', StashBlock(label="key reference", content_of="47")),
    ('→ stash "alternative" content-of:c4m2', StashBlock(label="alternative", content_of="c4m2")),
    ('→ stash "early discussion" summary-of:r001-a7x2',
     StashBlock(label="early discussion", summary_of=("r001", "a7x2"))),
    ('→ recall "marie insight"', Recall(label="marie insight")),
    ("→ drop pin:a7x2", Drop(pin="a7x2")),
    ("→ drop pin:r001", Drop(pin="r001")),
    ('→ drop stash:"old notes"', Drop(stash="old notes")),
    ("→ memory", Memory()),
    ("→ memory trace", Memory(what="trace")),
    ("→ memory stashed", Memory(what="stashed")),
    ("→ help", Help()),
    ("→ help view", Help(tool="view")),
    ("→ think", Think()),
]

# Seed 002's forms (numeric ids, `summary`, `branch 8.2`, …) and the spec notes' ids.
SEED_002: list[tuple[str, Command]] = [
    ("→ view 23", View(node="23")),
    ("→ view 23 summary", View(node="23", detail="summary")),
    ("→ view 23 with-links", View(node="23", detail="with-links")),
    ("→ list 47 continuations", List(node="47", what="continuations")),
    ("→ tree from:20 depth:5", ShowTree(from_="20", depth=5)),
    ("→ continue from 47 n:3 tokens:40", Continue(from_="47", n=3, tokens=40)),
    ('→ annotate 47 "key turning point in the argument"',
     Annotate(node="47", content="key turning point in the argument")),
    ("→ link 47 to 23", MakeLink(node="47", target=_node("23"))),
    ('→ link 47 to doc:"research" note:"supports the theory"',
     MakeLink(node="47", target=LinkTarget(kind="doc", doc="research"),
              note="supports the theory")),
    ('→ edit 47 "revised content here"', Edit(node="47", content="revised content here")),
    ("→ switch to 23", Switch(node="23")),
    ("→ switch to branch 8.2", Switch(node="8.2")),
    ("→ jump tree:7 node:23", Switch(node="23", tree="7")),
    ('→ read doc:"research" summary', Read(doc="research", summary=True)),
    ('→ pin doc:"character notes" section:2', PinBlock(doc="character notes", section="2")),
    ('→ stash "early discussion" summary-of:12-34',
     StashBlock(label="early discussion", summary_of=("12", "34"))),
    ("→ memory errors", Memory(what="errors")),
    ("→ view branch:8 as:prose", View(branch="8", as_="prose")),
    ("→ view ann-3", View(node="ann-3")),
    ("→ view a7x2'", View(node="a7x2'")),
    ('→ edit a7x2\'\' "third version"', Edit(node="a7x2''", content="third version")),
]


@pytest.mark.parametrize(("line", "expected"), SEED_000 + SEED_002)
def test_seed_forms(line: str, expected: Command) -> None:
    assert parse(line) == expected


@pytest.mark.parametrize(("line", "expected"), [
    ("→ view a7x2", View(node="a7x2")),
    ("view a7x2", View(node="a7x2")),
    ("-> view a7x2", View(node="a7x2")),
    ("->view a7x2", View(node="a7x2")),
    ("=> view a7x2", View(node="a7x2")),
    ("⟶ view a7x2", View(node="a7x2")),
    ("➜ view a7x2", View(node="a7x2")),
    ("    → view a7x2", View(node="a7x2")),
    ("\t→view a7x2   ", View(node="a7x2")),
])
def test_the_arrow_is_optional_and_any_arrow_will_do(line: str, expected: Command) -> None:
    assert parse(line) == expected


@pytest.mark.parametrize(("line", "ref"), [
    ("→ view A7X2", "a7x2"),
    ("→ view [a7x2]", "a7x2"),
    ("→ view [B3K9]", "b3k9"),
    ("→ view a7x2'", "a7x2'"),
    ("→ view a7x2’", "a7x2'"),  # a curly prime is a prime
    ("→ view a7x2''", "a7x2''"),
    ("→ view ann-3", "ann-3"),
    ("→ view 47", "47"),
    ("→ view 8.2", "8.2"),
    ("→ view #47", "47"),
    ("→ view kzmqhb", "kzmqhb"),
    ("→ view [tree]", "tree"),  # brackets make any word a node id
])
def test_node_references_are_kept_as_typed_strings(line: str, ref: str) -> None:
    assert parse(line) == View(node=ref)


NATURAL: list[tuple[str, Command]] = [
    ("→ view node a7x2", View(node="a7x2")),
    ("→ show a7x2", View(node="a7x2")),
    ("→ show me node a7x2", View(node="a7x2")),
    ("→ show me the node a7x2", View(node="a7x2")),
    ("→ please view a7x2", View(node="a7x2")),
    ("→ could you show me a7x2?", View(node="a7x2")),
    ("→ can you inspect a7x2 please", View(node="a7x2")),
    ("→ view a7x2 please", View(node="a7x2")),
    ("→ view a7x2, thanks!", View(node="a7x2")),
    ("→ view a7x2.", View(node="a7x2")),
    ("→ kindly display a7x2", View(node="a7x2")),
    ("→ I'd like to see a7x2", View(node="a7x2")),
    ("→ go ahead and view a7x2", View(node="a7x2")),
    ("→ now let me look at a7x2 in full", View(node="a7x2", detail="full")),
    ("→ view the full a7x2", View(node="a7x2", detail="full")),
    ("→ view a7x2 with annotations", View(node="a7x2", detail="with-annotations")),
    ("→ view a7x2's annotations", View(node="a7x2", detail="with-annotations")),
    ("→ show me the annotations on a7x2", View(node="a7x2", detail="with-annotations")),
    ("→ view branch b3k9 as prose", View(branch="b3k9", as_="prose")),
    ("→ VIEW A7X2 FULL", View(node="a7x2", detail="full")),
    ("→ view `a7x2`", View(node="a7x2")),
    ('→ view "a7x2"', View(node="a7x2")),
    ("→ list continuations of a7x2", List(node="a7x2", what="continuations")),
    ("→ list annotations", List(what="annotations")),
    ("→ list the links for a7x2", List(node="a7x2", what="links")),
    ("→ list a7x2 children", List(node="a7x2", what="continuations")),
    ("→ list", List()),
    ("→ show the tree", ShowTree()),
    ("→ tree from a7x2 depth 2", ShowTree(from_="a7x2", depth=2)),
    ("→ tree a7x2", ShowTree(from_="a7x2")),
    ("→ go to b3k9", Switch(node="b3k9")),
    ("→ goto b3k9", Switch(node="b3k9")),
    ("→ jump to b3k9", Switch(node="b3k9")),
    ("→ navigate to node b3k9", Switch(node="b3k9")),
    ("→ move to b3k9", Switch(node="b3k9")),
    ('→ switch to x9y3 in tree "earlier draft"', Switch(node="x9y3", tree="earlier draft")),
    ("→ let's continue from b3k9 with n:3", Continue(from_="b3k9", n=3)),
    ("→ continue from b3k9, 3 continuations", Continue(from_="b3k9", n=3)),
    ("→ continue from b3k9 n=3", Continue(from_="b3k9", n=3)),
    ("→ continue from b3k9 n: 3", Continue(from_="b3k9", n=3)),
    ("→ continue from:b3k9 n:3", Continue(from_="b3k9", n=3)),
    ("→ continue n:3", Continue(n=3)),
    ("→ continue b3k9", Continue(from_="b3k9")),
    ("→ continue from b3k9 with 40 tokens", Continue(from_="b3k9", tokens=40)),
    ("→ generate three continuations from b3k9", Continue(from_="b3k9", n=3)),
    ("→ gen 2 alternatives", Continue(n=2)),
    ("→ keep going from a7x2", Continue(from_="a7x2")),
    ("→ extend a7x2", Continue(from_="a7x2")),
    ("→ continue from b3k9 temperature:0.8", Continue(from_="b3k9", temperature=0.8)),
    ("→ continue from 47", Continue(from_="47")),
    ('→ respond to a7x2 with "hello there"', Respond(node="a7x2", content="hello there")),
    ('→ reply a7x2 "hi"', Respond(node="a7x2", content="hi")),
    ('→ respond a7x2 "x" as context', Respond(node="a7x2", content="x", as_="context")),
    ('→ respond a7x2 "x" as:primary', Respond(node="a7x2", content="x")),
    ('→ add a note to a7x2: "hello"', Annotate(node="a7x2", content="hello")),
    ('→ note a7x2 "hello"', Annotate(node="a7x2", content="hello")),
    ('→ comment on a7x2 "hello"', Annotate(node="a7x2", content="hello")),
    ('→ annotate a7x2: "hello"', Annotate(node="a7x2", content="hello")),
    ("→ connect a7x2 with b3k9", MakeLink(node="a7x2", target=_node("b3k9"))),
    ("→ link a7x2 b3k9", MakeLink(node="a7x2", target=_node("b3k9"))),
    ("→ link a7x2 -> b3k9", MakeLink(node="a7x2", target=_node("b3k9"))),
    ("→ add link from a7x2 to b3k9", MakeLink(node="a7x2", target=_node("b3k9"))),
    ('→ link a7x2 to b3k9 "same scene"', MakeLink(node="a7x2", target=_node("b3k9"),
                                               note="same scene")),
    ('→ link a7x2 to doc:"x" section:m',
     MakeLink(node="a7x2", target=LinkTarget(kind="doc", doc="x", section="m"))),
    ('→ revise a7x2 "better"', Edit(node="a7x2", content="better")),
    ('→ read "character notes"', Read(doc="character notes")),
    ('→ read doc "character notes" summary', Read(doc="character notes", summary=True)),
    ('→ read doc:"x" §motivation', Read(doc="x", section="motivation")),
    ('→ read doc:"x" lines 3-7', Read(doc="x", lines=(3, 7))),
    ('→ read doc:"x" lines:12', Read(doc="x", lines=(12, 12))),
    ('→ read doc:notes', Read(doc="notes")),
    ('→ append "x" to doc:"notes"', Write(doc="notes", content="x")),
    ('→ write "x" to doc:"notes"', Write(doc="notes", content="x")),
    ('→ write doc:"notes" "x"', Write(doc="notes", content="x")),
    ('→ write doc:"notes" at the end "x"', Write(doc="notes", mode="at", at="end", content="x")),
    ('→ write doc:"notes" at:12 "x"', Write(doc="notes", mode="at", at="12", content="x")),
    ('→ write doc:"notes" replace section:motivation "x"',
     Write(doc="notes", mode="replace", section="motivation", content="x")),
    ("→ pin a7x2 to memory", PinBlock(node="a7x2")),
    ("→ keep a7x2", PinBlock(node="a7x2")),
    ('→ pin doc:"x" §m', PinBlock(doc="x", section="m")),
    ('→ save "label" "content"', StashBlock(label="label", content="content")),
    ('→ stash "key reference" content-of 47', StashBlock(label="key reference", content_of="47")),
    ("→ recall marie insight", Recall(label="marie insight")),
    ("→ recall the marie insight please", Recall(label="marie insight")),
    ('→ retrieve "theme notes"', Recall(label="theme notes")),
    ("→ unpin a7x2", Drop(pin="a7x2")),
    ("→ drop a7x2", Drop(pin="a7x2")),
    ('→ forget stash "old notes"', Drop(stash="old notes")),
    ('→ drop "old notes"', Drop(stash="old notes")),
    ('→ drop doc:"character notes" §motivation', Drop(pin='doc:"character notes" §motivation')),
    ('→ drop pin:doc:"character notes"', Drop(pin='doc:"character notes"')),
    ("→ show memory", Memory()),
    ("→ memory history", Memory(what="trace")),
    ("→ help me with annotate", Help(tool="annotate")),
    ("→ help show", Help(tool="view")),
    ("→ help tools", Help()),
    ("→ help me", Help()),
]


@pytest.mark.parametrize(("line", "expected"), NATURAL)
def test_natural_language_variants(line: str, expected: Command) -> None:
    assert parse(line) == expected


@pytest.mark.parametrize(("line", "content"), [
    ('→ annotate a7x2 "straight"', "straight"),
    ("→ annotate a7x2 “curly double”", "curly double"),
    ("→ annotate a7x2 ‘curly single’", "curly single"),
    ("→ annotate a7x2 «guillemets»", "guillemets"),
    ("→ annotate a7x2 'single'", "single"),
    ("→ annotate a7x2 'it's an apostrophe'", "it's an apostrophe"),
    ("→ annotate a7x2 ‘Marie’s turn’", "Marie’s turn"),
    ('→ annotate a7x2 "she said \\"no\\""', 'she said "no"'),
    ('→ annotate a7x2 "the \'other\' style"', "the 'other' style"),
    ('→ annotate a7x2 "curly “inside” straight"', "curly “inside” straight"),
    ("→ annotate a7x2 “straight \"inside\" curly”", 'straight "inside" curly'),
    ('→ annotate a7x2 "back\\\\slash"', "back\\slash"),
    ('→ annotate a7x2 "line\\nbreak"', "line\nbreak"),
    ('→ annotate a7x2 "C:\\path"', "C:\\path"),  # an unknown escape keeps its backslash
    ('→ annotate a7x2 "keep   spacing  "', "keep   spacing  "),
    ('→ annotate a7x2 "trailing punctuation stays inside."', "trailing punctuation stays inside."),
    ('→ annotate a7x2 ""', ""),
])
def test_quoted_content(line: str, content: str) -> None:
    assert parse(line) == Annotate(node="a7x2", content=content)


@pytest.mark.parametrize(("line", "expected"), [
    ("→ veiw a7x2", View(node="a7x2")),
    ("→ vew a7x2", View(node="a7x2")),
    ('→ anotate a7x2 "x"', Annotate(node="a7x2", content="x")),
    ("→ swtich to b3k9", Switch(node="b3k9")),
    ("→ contineu from b3k9 n:2", Continue(from_="b3k9", n=2)),
    ("→ lsit a7x2 links", List(node="a7x2", what="links")),
    ("→ tre summary", ShowTree(summary=True)),
    ("→ hlep view", Help(tool="view")),
    ("→ help veiw", Help(tool="view")),
    ("→ view a7x2 ful", View(node="a7x2", detail="full")),
    ("→ view a7x2 sumary", View(node="a7x2", detail="summary")),
    ("→ view a7x2 with-anotations", View(node="a7x2", detail="with-annotations")),
    ("→ memory trce", Memory(what="trace")),
    ("→ list a7x2 anotations", List(node="a7x2", what="annotations")),
    ("→ continue from b3k9 toknes:40", Continue(from_="b3k9", tokens=40)),
    ('→ respond a7x2 "x" as:contxt', Respond(node="a7x2", content="x", as_="context")),
    ("→ thnik about the ending", Think(content="about the ending")),
])
def test_confident_typos_are_corrected(line: str, expected: Command) -> None:
    assert parse(line) == expected


def _error(line: str) -> ParseError:
    result = parse(line)
    assert isinstance(result, ParseError), result
    return result


def test_an_ambiguous_verb_is_an_error_naming_both() -> None:
    err = _error("→ lint a7x2")
    assert err.message == 'ambiguous command "lint": list or link?'
    assert err.candidates == ("list", "link")
    assert err.hint == "did you mean → list a7x2 continuations or → link [localId] to [target]?"


def test_a_bare_node_id_asks_view_or_switch() -> None:
    err = _error("→ a7x2")
    assert err.hint == "did you mean → view a7x2 or → switch to a7x2?"
    assert err.candidates == ("view", "switch")


@pytest.mark.parametrize("line", [
    "→ dance with a7x2", "→ summon a7x2", "→ what's at a7x2?", '→ "just a string"',
])
def test_an_unknown_verb_is_an_error(line: str) -> None:
    err = _error(line)
    assert err.message.startswith(("unknown command", "no command"))
    assert err.hint


@pytest.mark.parametrize(("line", "message", "hint"), [
    ("→ annotate a7x2", "annotate needs the content in quotes",
     'use → annotate [localId] "[content]"'),
    ('→ annotate "x"', "annotate needs a node", 'use → annotate [localId] "[content]"'),
    ("→ annotate a7x2 great moment here", "annotate needs the content in quotes",
     'put the content in quotes: → annotate a7x2 "great moment here"'),
    ("→ switch", "switch needs a node",
     "use → switch to [localId] or → switch to [localId] in tree:[treeId]"),
    ("→ switch to", "switch needs a node",
     "use → switch to [localId] or → switch to [localId] in tree:[treeId]"),
    ('→ respond a7x2', "respond needs the content in quotes",
     'use → respond [localId] "[content]"'),
    ("→ edit a7x2", "edit needs the content in quotes", 'use → edit [localId] "[new_content]"'),
    ("→ read summary", "read needs a document", 'use → read doc:"[name]"'),
    ('→ write doc:"notes"', "write needs the content in quotes", None),
    ('→ stash "x"', "stash needs something to keep: quoted content, content-of: or summary-of:",
     None),
    ("→ recall", "recall needs a stash label", 'use → recall "[label]"'),
    ("→ drop", "drop needs a pin or a stash", None),
    ("→ link a7x2", "link needs a target", None),
])
def test_missing_arguments_give_the_syntax_as_hint(line: str, message: str,
                                                    hint: str | None) -> None:
    err = _error(line)
    assert err.message == message
    if hint is not None:
        assert err.hint == hint
    else:
        assert err.hint and err.hint.startswith("use → ")


@pytest.mark.parametrize(("line", "message"), [
    ("→ continue n:abc", 'n must be a whole number, got "abc"'),
    ("→ continue n:3.5", 'n must be a whole number, got "3.5"'),
    ("→ continue from b3k9 tokens:forty", 'tokens must be a whole number, got "forty"'),
    ("→ tree depth:x", 'depth must be a whole number, got "x"'),
    ("→ continue temperature:hot", 'temperature must be a number, got "hot"'),
    ("→ continue temperature:nan", 'temperature must be a number, got "nan"'),
])
def test_numbers_must_be_numbers(line: str, message: str) -> None:
    assert _error(line).message == message


def test_limits_are_the_executors_job() -> None:
    assert parse("→ continue from a7x2 n:50") == Continue(from_="a7x2", n=50)
    assert parse("→ continue n:0") == Continue(n=0)


@pytest.mark.parametrize(("line", "start"), [
    ('→ annotate a7x2 "unterminated', 'unterminated quote: "unterminated'),
    ("→ annotate a7x2 “open curly", "unterminated quote: “open curly"),
    ("→ annotate a7x2 'open single", "unterminated quote: 'open single"),
    ('→ annotate a7x2 "ends in an escape\\"', "unterminated quote"),
])
def test_an_unterminated_quote_is_an_error_with_a_hint(line: str, start: str) -> None:
    err = _error(line)
    assert err.message.startswith(start)
    assert err.hint and "quote" in err.hint


@pytest.mark.parametrize(("line", "fragment"), [
    ("→ view a7x2 full with-annotations", "choose one detail"),
    ("→ view a7x2 and b3k9", "view takes one node"),
    ("→ view a7x2 sideways", 'unknown option "sideways" for view'),
    ("→ view a7x2 wibble:3", 'unknown option "wibble:" for view'),
    ("→ view a7x2 as:poetry", "as must be one of prose|nodes"),
    ("→ continue 3", '"3" could be a node or a count'),
    ("→ continue from b3k9 n:3 n:4", "n: given twice"),
    ("→ link a7x2 to doc:\"x\" b3k9", "link to one target at a time"),
    ('→ stash "early" summary-of:r001', "summary-of: expects a range"),
    ("→ drop lines:3-7", "drop takes a pin or a stash"),
    ("→ memory everything", 'unknown option "everything" for memory'),
    ("→ help sdfsdf", 'no tool called "sdfsdf"'),
    ('→ open doc:"x"', "view works on nodes; documents are read"),
    ("→ read a7x2", "read works on documents; nodes are viewed"),
    ("→ please", "no command, only politeness"),
    ("→", "empty command"),
    ("", "empty command"),
    ("   ", "empty command"),
])
def test_errors(line: str, fragment: str) -> None:
    assert fragment in _error(line).message


def test_cross_verb_mistakes_point_at_the_right_verb() -> None:
    assert _error('→ open doc:"x"').hint == 'did you mean → read doc:"x"?'
    assert _error("→ read a7x2").hint == "did you mean → view a7x2?"
    assert _error("→ continue 3").hint == "did you mean → continue from 3 or → continue n:3?"
    assert _error("→ view a7x2 and b3k9").hint == "one per line: → view a7x2; → view b3k9"


@pytest.mark.parametrize(("line", "content"), [
    ("→ think", ""),
    ("→ think some thought", "some thought"),
    ("→ think: a colon first", "a colon first"),
    ('→ think don\'t "parse" this: view a7x2 n:x', 'don\'t "parse" this: view a7x2 n:x'),
    ("→ let me think about it", "about it"),
    ("→ think\nline one\nline two\n←", "line one\nline two"),
    ("→ think\nline one\n<-", "line one"),
    ("→ think\nunclosed", "unclosed"),
])
def test_think(line: str, content: str) -> None:
    assert parse(line) == Think(content=content)


class _Recorder:
    def __init__(self, answer: Command | None) -> None:
        self.answer = answer
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, text: str, candidates: list[str]) -> Command | None:
        self.calls.append((text, candidates))
        return self.answer


def test_the_classifier_is_asked_when_patterns_are_not_confident() -> None:
    classifier = _Recorder(View(node="a7x2"))
    assert parse("→ summon a7x2 please", classifier=classifier) == View(node="a7x2")
    assert classifier.calls[0][0] == "summon a7x2 please"
    assert "view" in classifier.calls[0][1]


def test_the_classifier_gets_the_ambiguous_candidates() -> None:
    classifier = _Recorder(None)
    assert isinstance(parse("→ lint a7x2", classifier=classifier), ParseError)
    assert classifier.calls == [("lint a7x2", ["list", "link"])]


@pytest.mark.parametrize("line", [
    "→ view a7x2", "→ veiw a7x2", "→ annotate a7x2", '→ annotate a7x2 "open', "→ continue n:x",
])
def test_the_classifier_is_not_asked_when_the_parser_is_sure(line: str) -> None:
    classifier = _Recorder(Help())
    result = parse(line, classifier=classifier)
    assert classifier.calls == []
    assert result != Help()


def test_a_classifier_answer_that_is_not_a_command_is_ignored() -> None:
    result = parse("→ summon a7x2", classifier=lambda text, cands: "view a7x2")  # type: ignore[arg-type,return-value]
    assert isinstance(result, ParseError)


def test_canonical_text_of_commands() -> None:
    assert to_text(View(node="a7x2", detail="full")) == "→ view a7x2 full"
    assert to_text(Annotate(node="a7x2", content='say "hi"')) == '→ annotate a7x2 "say \\"hi\\""'
    assert to_text(Switch(node="x9y3", tree="earlier draft")) == (
        '→ switch to x9y3 in tree:"earlier draft"'
    )
    assert to_text(Continue(from_="b3k9", n=3, tokens=40)) == (
        "→ continue from b3k9 n:3 tokens:40"
    )
    assert to_text(View(node="tree")) == "→ view [tree]"
    assert to_text(Think(content="a\nb")) == "→ think\na\nb\n←"
