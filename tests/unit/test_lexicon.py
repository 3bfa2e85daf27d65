"""The lexicon, and every arrow form through each of its readers: the grammar, ``extract``,
the session's commit, reference finding and completion."""

from __future__ import annotations

import json
import re

import pytest

from loom.commands import lexicon
from loom.commands.canonical import to_text
from loom.commands.catalogue import TOOLS
from loom.commands.context import Actor
from loom.commands.extract import extract
from loom.commands.grammar import parse
from loom.commands.syntax import List, ParseError, Think, View
from loom.lsp.documents import OpenDoc, OpenDocuments
from loom.lsp.features.completion import complete
from loom.lsp.features.editing import commit_command
from loom.lsp.features.refs import ref_at, refs_in_line, verb_at
from loom.memory import operational as mem
from loom.store.schema import Node
from loom.uris import node_uri
from tests.conftest import REPO

INDENTS = ["", "  ", "\t", "    ", "\u00a0"]
NEAR_MISSES = ["- >", "—>", "–>", "= >", ">", "--->", "<-", "←", "⇐", "~>", "x→"]


# --------------------------------------------------------------------------- lexicon


@pytest.mark.parametrize("arrow", lexicon.ARROWS)
@pytest.mark.parametrize("indent", INDENTS)
def test_every_arrow_after_any_indentation_opens_a_command_line(arrow: str, indent: str) -> None:
    line = f"{indent}{arrow} view a7x2"
    assert lexicon.is_command_line(line)
    assert lexicon.split_line(line) == (indent, arrow, " view a7x2")
    assert lexicon.split_line(line).body_start == len(indent) + len(arrow)
    assert parse(line) == View(node="a7x2")


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_near_misses_are_not_command_lines(near: str) -> None:
    line = f"{near} view a7x2"
    assert not lexicon.is_command_line(line)
    assert lexicon.split_line(line) == ("", "", line)


def test_a_line_break_is_not_indentation() -> None:
    assert not lexicon.is_command_line("\n→ view a7x2")
    assert not lexicon.is_command_line("\r→ view a7x2")


def test_the_longest_arrow_wins() -> None:
    assert lexicon.split_line("--> view").arrow == "-->"
    assert lexicon.split_line("->> view") == ("", "->", "> view")


@pytest.mark.parametrize(("line", "closes"), [
    ("←", True), ("<-", True), ("  ←  ", True), ("\t<-", True),
    ("← done", False), ("<--", False), ("→", False), ("", False),
])
def test_closers(line: str, closes: bool) -> None:
    assert lexicon.is_closer(line) is closes


def test_verbs_come_from_the_catalogue() -> None:
    assert tuple(t.name for t in TOOLS) == lexicon.VERB_NAMES
    assert lexicon.verb_named("show") == "view"
    assert lexicon.verb_named("Go  To") == "switch"
    assert lexicon.verb_named("frobnicate") is None


def test_every_catalogue_flag_has_a_description() -> None:
    for tool in TOOLS:
        offered = {f.name for f in lexicon.flags(tool.name)}
        assert offered == {f.name for f in tool.flags}, tool.name
        for flag in lexicon.flags(tool.name):
            assert flag.description, (tool.name, flag.name)


# Options the grammar reads only to explain a mistake: never offered.
UNOFFERED = {("drop", "lines")}


def test_every_catalogue_option_is_described_or_deliberately_unoffered() -> None:
    for tool in TOOLS:
        offered = {o.name for o in lexicon.options(tool.name)}
        canonical = {o.name for o in tool.options}
        assert offered | {k for v, k in UNOFFERED if v == tool.name} == canonical, tool.name
        for option in lexicon.options(tool.name):
            assert option.description, (tool.name, option.name)


def test_memory_offers_every_catalogue_flag() -> None:
    assert [f.name for f in lexicon.flags("memory")] == ["trace", "stashed", "errors", "state"]


def test_value_hints_read_the_catalogue() -> None:
    assert lexicon.value_hints("continue", "n") == ("1", "2", "3", "5", "10")
    assert lexicon.value_hints("view", "as") == ("prose", "nodes")
    assert lexicon.value_hints("respond", "as") == ("continuation", "context", "instruction")
    assert lexicon.value_hints("stash", "label") == ()


# What each verb needs besides a node to be a whole command.
NODE_TEMPLATES = {
    "view": "→ view {}", "list": "→ list {}", "tree": "→ tree {}", "switch": "→ switch to {}",
    "continue": "→ continue from {}", "respond": '→ respond {} "text"',
    "annotate": '→ annotate {} "text"', "link": "→ link {} to b3k9", "edit": '→ edit {} "text"',
    "pin": "→ pin {}", "drop": "→ drop {}", "split": "→ split {} at:5",
}
NO_NODE_TEMPLATES = {
    "read": '→ read doc:"notes" {}', "write": '→ write doc:"notes" {} "text"',
    "stash": '→ stash "label" {} "text"', "memory": "→ memory {}", "help": "→ help {}",
    "recall": '→ recall "label" {}',
}


def test_node_verbs_are_the_verbs_the_grammar_gives_a_bare_node() -> None:
    assert set(NODE_TEMPLATES) | set(NO_NODE_TEMPLATES) | {"think"} == set(lexicon.VERB_NAMES)
    for verb, template in NODE_TEMPLATES.items():
        assert lexicon.takes_nodes(verb)
        got = parse(template.format("qz7k"))
        assert not isinstance(got, ParseError), (verb, got)
        assert "qz7k" in to_text(got), verb
    for verb, template in NO_NODE_TEMPLATES.items():
        assert not lexicon.takes_nodes(verb)
        got = parse(template.format("qz7k"))
        assert isinstance(got, ParseError) or "qz7k" not in to_text(got), (verb, got)


# A whole command with a node as the value of ``key:`` (the ``{}``).
REF_OPTION_TEMPLATES = {
    ("view", "branch"): "→ view branch:{}", ("view", "node"): "→ view node:{}",
    ("tree", "from"): "→ tree from:{}", ("switch", "node"): "→ switch node:{}",
    ("continue", "from"): "→ continue from:{}", ("link", "node"): '→ link a7x2 to tree:"t" node:{}',
    ("pin", "node"): "→ pin node:{}", ("stash", "content-of"): '→ stash "l" content-of:{}',
    ("drop", "pin"): "→ drop pin:{}",
}


def test_options_taking_nodes_are_the_ones_the_grammar_resolves_as_nodes() -> None:
    node_keys = {(t.name, key) for t in TOOLS for key in {o.name for o in t.options}
                 if lexicon.value_kind(t.name, key) == "node"}
    assert node_keys == set(REF_OPTION_TEMPLATES)
    for (verb, key), template in REF_OPTION_TEMPLATES.items():
        got = parse(template.format("qz7k"))
        assert not isinstance(got, ParseError) and "qz7k" in to_text(got), (verb, key)
        if (verb, key) == ("drop", "pin"):
            continue  # a pin may also be a document, kept as typed
        bad = parse(template.format("not-a-node!"))
        assert isinstance(bad, ParseError) and "expects a node id" in bad.message, (verb, key)
    assert lexicon.value_kind("stash", "summary-of") == "range"
    assert {"from", "branch", "pin", "content-of", "summary-of", "node"} <= (
        lexicon.REF_OPTION_NAMES)


@pytest.mark.parametrize(("text", "kept"), [
    ("Some words.\n→ view a7x2\nmore", "Some words."),
    ("Some words.\n  ⇒ view a7x2", "Some words."),
    ("Some words.\n--> view a7x2", "Some words."),
    ("→ view a7x2", ""),
    ("\n\n→ view a7x2", ""),
    ("Words - > not a command\nstill prose", "Words - > not a command\nstill prose"),
])
def test_prose_before_commands(text: str, kept: str) -> None:
    assert lexicon.prose_before_commands(text) == kept


# --------------------------------------------------------------------------- extract


@pytest.mark.parametrize("arrow", lexicon.ARROWS)
@pytest.mark.parametrize("indent", INDENTS)
def test_extract_finds_every_arrow_form(arrow: str, indent: str) -> None:
    text = f"Looking.\n{indent}{arrow} view a7x2\n{indent}{arrow} list a7x2 annotations\nDone."
    prose, batch, after = extract(text)
    assert (prose.kind, batch.kind, after.kind) == ("prose", "batch", "prose")
    assert batch.commands == [(1, View(node="a7x2")), (2, List(node="a7x2", what="annotations"))]
    think = extract(f"{indent}{arrow} think\nthe tone shifts\n{indent}←")
    assert [(s.kind, s.content, s.closed) for s in think] == [
        ("think", "the tone shifts", True)]


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_extract_leaves_near_misses_in_the_prose(near: str) -> None:
    (prose,) = extract(f"Looking.\n{near} view a7x2")
    assert prose.kind == "prose"


# ------------------------------------------------------------- the editor's readers


@pytest.mark.parametrize("arrow", lexicon.ARROWS)
@pytest.mark.parametrize("indent", INDENTS)
def test_refs_and_verbs_on_every_arrow_form(arrow: str, indent: str) -> None:
    line = f"{indent}{arrow} view a7x2 branch:b3k9"
    assert [r.text for r in refs_in_line(line)] == ["a7x2", "b3k9"]
    verb = line.index("view")
    assert verb_at(line, verb + 1) == "view"
    ref = ref_at(line, line.index("a7x2") + 1)
    assert ref is not None and line[ref.start:ref.end] == "a7x2"


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_bare_ids_on_near_misses_are_prose(near: str) -> None:
    assert refs_in_line(f"{near} view a7x2") == []


def test_verb_at_names_the_canonical_verb() -> None:
    assert verb_at("→ show a7x2", 3) == "view"
    assert verb_at("→ frobnicate a7x2", 3) is None


def test_ref_options_are_references_other_values_are_not() -> None:
    line = "→ stash summary-of:r001-a7x2 content_of:b3k9 label:c4m2"
    assert [r.text for r in refs_in_line(line)] == ["r001", "a7x2", "b3k9"]


@pytest.fixture
def editor(app):  # type: ignore[no-untyped-def]
    """An open path document of a one-node tree, with a document and a stash."""
    ws = app.ws
    tree = ws.create_tree("Story", root_content="The house stood empty.")
    root = Node.get_by_id(tree.root)
    ws.create_document("character notes", "Marie.")
    human = ws.human()
    mem.put_stash(ws, human, tree, "plan", "first the gate", 4, "literal")
    docs = OpenDocuments(ws, human, "utf-16")
    docs.app = app  # type: ignore[attr-defined]
    uri = node_uri(tree, root)
    text, _ = docs.text_for(uri)
    return docs, docs.did_open(uri, text), tree, root


def _commit_working(docs: OpenDocuments, doc: OpenDoc, working: str) -> list[str]:
    """What committing the buffer makes, as the editor does it: a commit command run by
    the executor."""
    end = len(doc.text)
    docs.did_change(doc, end, end, working)
    cmd = commit_command(doc)
    assert cmd is not None
    result = docs.app.executor.execute(cmd, Actor(docs.participant, doc.tree))  # type: ignore[attr-defined]
    assert result.ok, result.text
    return [Node.get_by_id(i).content for i in result.data["created"]]


@pytest.mark.parametrize("arrow", lexicon.ARROWS)
@pytest.mark.parametrize("indent", INDENTS)
def test_commit_keeps_command_lines_out_of_the_buffer(editor, arrow: str,  # type: ignore[no-untyped-def]
                                                      indent: str) -> None:
    docs, doc, _, root = editor
    assert _commit_working(docs, doc, f" It was late.\n{indent}{arrow} view {root.local_id}") == [
        " It was late."]


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_commit_keeps_near_misses_as_prose(editor, near: str) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _, _ = editor
    text = f" It was late.\n{near} view a7x2"
    assert _commit_working(docs, doc, text) == [text]


def _complete(editor, line: str) -> list:  # type: ignore[no-untyped-def]
    docs, doc, tree, _ = editor
    return complete(docs, doc, tree, line, len(line))


@pytest.mark.parametrize("arrow", lexicon.ARROWS)
@pytest.mark.parametrize("indent", INDENTS)
def test_completion_after_every_arrow_form(editor, arrow: str, indent: str) -> None:  # type: ignore[no-untyped-def]
    items = _complete(editor, f"{indent}{arrow} vi")
    view = next(i for i in items if i.label == "view")
    assert view.insert == "→ view "
    assert (view.replace_start, view.replace_end) == (len(indent), len(indent + arrow) + 3)
    _, _, _, root = editor
    nodes = _complete(editor, f"{indent}{arrow} view {root.local_id[:3]}")
    assert root.local_id in [i.label for i in nodes]


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_no_completion_on_near_misses(editor, near: str) -> None:  # type: ignore[no-untyped-def]
    assert _complete(editor, f"{near} vi") == []


def test_completion_offers_every_catalogue_flag(editor) -> None:  # type: ignore[no-untyped-def]
    for tool in TOOLS:
        line = f"→ {tool.name} " if tool.name != "read" else '→ read doc:"x" '
        labels = {i.label for i in _complete(editor, line)}
        assert {f.name for f in tool.flags} <= labels, tool.name
    assert {i.label for i in _complete(editor, "→ memory st")} == {"state", "stashed"}


def test_completion_offers_options_and_their_values(editor) -> None:  # type: ignore[no-untyped-def]
    labels = [i.label for i in _complete(editor, "→ tree ")]
    assert {"summary", "from:", "depth:"} <= set(labels)
    assert [i.label for i in _complete(editor, "→ continue n:")] == [
        "n:1", "n:2", "n:3", "n:5", "n:10"]
    assert [i.label for i in _complete(editor, "→ continue count:1")] == ["count:1", "count:10"]
    assert [i.label for i in _complete(editor, '→ respond a7x2 "x" as:')] == [
        "as:continuation", "as:context", "as:instruction"]
    assert [i.label for i in _complete(editor, "→ view a7x2 as:")] == ["as:prose", "as:nodes"]


def test_completion_of_names(editor) -> None:  # type: ignore[no-untyped-def]
    line = '→ read doc:"char'
    (doc,) = _complete(editor, line)
    assert (doc.label, doc.replace_start, doc.replace_end) == (
        'doc:"character notes"', line.index("doc:"), len(line))
    assert [i.label for i in _complete(editor, '→ read "char')] == ['"character notes"']
    assert [i.label for i in _complete(editor, "→ recall ")] == ['"plan"']
    assert [i.label for i in _complete(editor, '→ drop stash:"pl')] == ['stash:"plan"']
    assert [i.label for i in _complete(editor, '→ switch to a7x2 in tree:"St')] == [
        'tree:"Story"']


def test_completion_of_node_references(editor) -> None:  # type: ignore[no-untyped-def]
    _, _, _, root = editor
    lid = root.local_id
    (hit,) = [i for i in _complete(editor, f"→ continue from {lid[:3]}") if i.label == lid]
    assert "human" in hit.detail and "house stood empty" in hit.detail
    assert lid in [i.label for i in _complete(editor, "→ continue from ")]
    assert f"from:{lid}" in [i.label for i in _complete(editor, f"→ tree from:{lid[:3]}")]
    assert f"[{lid}]" in [i.label for i in _complete(editor, f"→ view [{lid[:3]}")]
    assert f"summary-of:r001-{lid}" in [
        i.label for i in _complete(editor, f'→ stash "s" summary-of:r001-{lid[:3]}')]


def test_completion_of_help_and_free_text(editor) -> None:  # type: ignore[no-untyped-def]
    assert [i.label for i in _complete(editor, "→ help vi")] == ["view"]
    assert _complete(editor, '→ annotate a7x2 "the tone') == []
    assert _complete(editor, "→ think about it") == []
    assert _complete(editor, "just prose → vi") == []


def test_completion_without_a_tree_offers_no_nodes(editor) -> None:  # type: ignore[no-untyped-def]
    docs, doc, _, _ = editor
    items = complete(docs, doc, None, "→ view ", 7)
    assert items and all(i.kind == "keyword" for i in items)


def test_think_block_on_every_arrow_is_one_think() -> None:
    for arrow in lexicon.ARROWS:
        assert parse(f"{arrow} think\nhmm\n<-") == Think(content="hmm")


# ------------------------------------------------------------ the clients' copies


def _alternatives(pattern: str) -> set[str]:
    """The alternatives of the first ``(?:a|b|…)`` group in a regular expression."""
    m = re.search(r"\(\?:([^()]*)\)", pattern)
    assert m is not None, pattern
    return set(m.group(1).split("|"))


def test_the_vscode_extension_knows_every_arrow() -> None:
    source = (REPO / "vscode-extension" / "src" / "args.ts").read_text(encoding="utf-8")
    m = re.search(r"function isArrowLine.*?return /(.*?)/\.test", source, re.S)
    assert m is not None
    assert _alternatives(m.group(1)) == set(lexicon.ARROWS)


def test_the_textmate_grammar_knows_every_arrow_and_closer() -> None:
    path = REPO / "grammars" / "loom-commands.tmLanguage.json"
    repo = json.loads(path.read_text(encoding="utf-8"))["repository"]
    for rule in ("think-block", "command-line"):
        assert _alternatives(repo[rule]["begin"]) == set(lexicon.ARROWS), rule
    closer = re.search(r"\((.*?)\)", repo["think-block"]["end"])
    assert closer is not None and set(closer.group(1).split("|")) == lexicon.CLOSERS
