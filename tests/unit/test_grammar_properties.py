"""Properties of the parser: it never raises, and canonical text reads back unchanged."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loom.commands.canonical import doc_ref_text, to_text
from loom.commands.catalogue import RESERVED
from loom.commands.grammar import COMMAND_TYPES, parse
from loom.commands.syntax import (
    VERBS,
    Annotate,
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

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"

local_ids = st.text(alphabet=CROCKFORD, min_size=3, max_size=8)
refs = st.one_of(
    local_ids,
    st.sampled_from(sorted(w for w in RESERVED if len(w) >= 3 and set(w) <= set(CROCKFORD))),
    st.integers(0, 9999).map(str),
    st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.integers(1, 999).map(lambda n: f"ann-{n}"),
).flatmap(lambda r: st.integers(0, 2).map(lambda primes: r + "'" * primes))
texts = st.text(max_size=40)
names = st.text(max_size=20)
bare = st.from_regex(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]{0,10}[A-Za-z0-9_])?", fullmatch=True)
sections = st.one_of(bare, names)
opt = st.none
ints = st.integers(-1000, 10**12)


def _think_contents() -> st.SearchStrategy[str]:
    line = st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=30).filter(
        lambda s: s.strip() not in ("←", "<-")
    )
    return st.lists(line, min_size=1, max_size=4).map("\n".join)


link_targets = st.one_of(
    st.builds(LinkTarget, kind=st.just("node"), node=refs),
    st.builds(LinkTarget, kind=st.just("doc"), doc=names, section=opt() | sections),
    st.builds(LinkTarget, kind=st.just("tree"), tree=names, node=opt() | refs),
)

commands = st.one_of(
    st.builds(View, node=opt() | refs, branch=opt() | refs,
              detail=st.sampled_from(["summary", "full", "with-annotations", "with-links"]),
              as_=opt() | st.sampled_from(["prose", "nodes"])),
    st.builds(List, node=opt() | refs,
              what=st.sampled_from(["continuations", "annotations", "links"])),
    st.builds(ShowTree, from_=opt() | refs, depth=opt() | ints, summary=st.booleans()),
    st.builds(Switch, node=refs, tree=opt() | names),
    st.builds(Continue, from_=opt() | refs, n=opt() | ints, tokens=opt() | ints,
              temperature=opt() | st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(Respond, node=refs, content=texts,
              as_=st.sampled_from(["continuation", "context", "instruction"])),
    st.builds(Annotate, node=refs, content=texts),
    st.builds(MakeLink, node=refs, target=link_targets, note=opt() | texts),
    st.builds(Edit, node=refs, content=texts),
    st.builds(Read, doc=names, summary=st.booleans(),
              lines=opt() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
              section=opt() | sections),
    st.one_of(
        st.builds(Write, doc=names, mode=st.just("append"), content=texts),
        st.builds(Write, doc=names, mode=st.just("at"), at=sections, content=texts),
        st.builds(Write, doc=names, mode=st.just("replace"), section=sections, content=texts),
    ),
    st.one_of(
        st.builds(PinBlock, node=refs),
        st.builds(PinBlock, doc=names, section=opt() | sections),
    ),
    st.one_of(
        st.builds(StashBlock, label=names, content=texts),
        st.builds(StashBlock, label=names, content_of=refs),
        st.builds(StashBlock, label=names, summary_of=st.tuples(refs, refs)),
    ),
    st.builds(Recall, label=names),
    st.one_of(
        st.builds(Drop, pin=refs, stash=opt() | names),
        st.builds(Drop, pin=st.builds(doc_ref_text, names, opt() | sections),
                  stash=opt() | names),
        st.builds(Drop, stash=names),
    ),
    st.builds(Memory, what=st.sampled_from(["state", "trace", "stashed", "errors"])),
    st.builds(Help, tool=opt() | st.sampled_from(VERBS)),
    st.builds(Think, content=st.one_of(
        st.just(""), texts.map(str.strip).filter(lambda s: "\n" not in s), _think_contents(),
    )),
)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
@example(Think(content=":x"))
@example(Think(content="  indented\nsecond"))
@example(Think(content="trailing newline\n"))
@example(Annotate(node="a7x2", content="C:\\path and \\n and \\\" and \n real"))
@example(Annotate(node="the", content="“curly” «guillemets» ‘single’ 'straight'"))
@example(Respond(node="a7x2''", content="", as_="instruction"))
@example(StashBlock(label="", summary_of=("ann", "3")))
@example(StashBlock(label="x", summary_of=("ann-3", "ann-4")))
@example(Drop(pin='doc:"a \\"b\\"" section:"act 2"', stash="s"))
@example(MakeLink(node="more", target=LinkTarget(kind="tree", tree="t", node="tree")))
@example(Continue(from_="3", n=-1, tokens=0, temperature=1e-05))
@example(Write(doc="d", mode="at", at="end.", content="c"))
@example(View(node="summary", detail="full"))
def test_canonical_text_parses_back_to_the_same_command(cmd: object) -> None:
    text = to_text(cmd)  # type: ignore[arg-type]
    assert parse(text) == cmd, text


@given(commands)
def test_canonical_text_is_one_line_except_think_blocks(cmd: object) -> None:
    text = to_text(cmd)  # type: ignore[arg-type]
    assert text.startswith("→ ")
    if not isinstance(cmd, Think):
        assert "\n" not in text and "\r" not in text


def _check(result: object) -> None:
    assert isinstance(result, (ParseError, *COMMAND_TYPES))
    if isinstance(result, ParseError):
        assert not result.message.startswith("internal parser error"), result.message


@settings(max_examples=1000)
@given(st.text(max_size=120))
def test_any_text_gives_a_command_or_a_parse_error(line: str) -> None:
    _check(parse(line))


VOCAB = sorted(
    RESERVED | set(VERBS)
    | {"→", "->", "a7x2", "B3K9", "[a7x2]", "a7x2'", "ann-3", "47", "8.2", "n:", "n=3", "3",
       "n:x", "tokens:", "depth:-1", "lines:1-50", "lines:x", "doc:", 'doc:"x"', "§m", "at:end",
       "replace:s", "pin:a7x2", "stash:", "content-of:", "summary-of:a-b", "summary-of:r001-a7x2",
       '"', "'", "“", "”", "«", "»", "‘", "’", '"quoted text"', "'single'", "\\", '\\"', ",",
       "?", ".", ":", "←", "as:", "as:prose", "tree:", 'tree:"t"', "node:", "from:", "[", "]",
       "temperature:nan", "temperature:1e400", "temp:0.5", "n:99999999999999999999999"}
)


@settings(max_examples=1000)
@given(st.lists(st.sampled_from(VOCAB), max_size=10).map(" ".join))
def test_sentences_of_grammar_words_never_break_the_parser(line: str) -> None:
    _check(parse(line))


def test_a_classifier_that_raises_leaves_the_parse_error() -> None:
    def broken(text: str, candidates: list[str]) -> None:
        raise RuntimeError("model down")

    result = parse("→ lint a7x2", classifier=broken)  # type: ignore[arg-type]
    assert isinstance(result, ParseError)
