"""``→ help``: seed 000's pages, character for character, and the catalogue behind them."""

from __future__ import annotations

import pytest

from loom.commands.catalogue import (
    CATALOGUE,
    PERMISSIONS,
    RESERVED,
    TOOLS,
    synonym_table,
)
from loom.commands.grammar import parse
from loom.commands.help import render_help_overview, render_help_tool
from loom.commands.syntax import VERBS

# Seed 000, "help", Return (overview).
SEED_OVERVIEW = """\
Available tools (your permissions: loom_aware, loom_write, doc_read):

Navigation: view, list, tree, switch
Content: respond, annotate, link, edit, continue*
Documents: read
Memory: pin, stash, recall, drop, memory
Meta: help, think

* requires loom_generate permission (you don't have this)

→ help [tool] for details on any tool"""

# Seed 000, "help", Return (specific tool), without the echoed "→ help view" line.
SEED_VIEW_PAGE = """\
view — Inspect a node's content and metadata

Syntax:
  → view [localId]
  → view [localId] full
  → view [localId] with-annotations

Returns summary by default. Use 'full' for complete content."""


# Loom's overview: the seed's, with the tools Loom adds after the seed's in their category
# (split, for the token probabilities).
LOOM_OVERVIEW = SEED_OVERVIEW.replace("continue*\n", "continue*, split\n")


def test_overview_is_the_seeds() -> None:
    assert render_help_overview({"loom_aware", "loom_write", "doc_read"}) == LOOM_OVERVIEW


def test_overview_lists_permissions_in_canonical_order_whatever_the_input_order() -> None:
    text = render_help_overview(["doc_read", "loom_write", "loom_aware"])
    assert text == LOOM_OVERVIEW


def test_overview_with_every_permission_has_no_stars_and_no_footnote() -> None:
    assert render_help_overview(set(PERMISSIONS)) == """\
Available tools (your permissions: loom_aware, loom_write, loom_generate, doc_read, doc_write):

Navigation: view, list, tree, switch
Content: respond, annotate, link, edit, continue, split
Documents: read, write
Memory: pin, stash, recall, drop, memory
Meta: help, think

→ help [tool] for details on any tool"""


def test_each_missing_tree_permission_gets_its_own_mark() -> None:
    assert render_help_overview({"loom_aware", "doc_read"}) == """\
Available tools (your permissions: loom_aware, doc_read):

Navigation: view, list, tree, switch
Content: respond*, annotate*, link*, edit*, continue**, split*
Documents: read
Memory: pin, stash, recall, drop, memory
Meta: help, think

* requires loom_write permission (you don't have this)
** requires loom_generate permission (you don't have this)

→ help [tool] for details on any tool"""


def test_document_tools_without_permission_are_left_out_with_their_category() -> None:
    text = render_help_overview({"loom_aware", "loom_write", "loom_generate"})
    assert "Documents" not in text
    assert "*" not in text
    text = render_help_overview({"loom_aware", "doc_write"})  # doc_write alone: write only
    assert "Documents: write\n" in text


def test_view_page_is_the_seeds() -> None:
    assert render_help_tool("view") == SEED_VIEW_PAGE


def test_think_page_shows_the_block_form() -> None:
    assert render_help_tool("think") == """\
think — A scratchpad for reasoning, collapsed in UI and excluded from subject model context

Syntax:
  → think
  [multi-line content]
  ←

Everything between → think and ← stays in your memory, collapsed in the UI."""


@pytest.mark.parametrize("verb", VERBS)
def test_every_tool_has_a_page_with_its_syntax(verb: str) -> None:
    page = render_help_tool(verb)
    assert page is not None
    head, blank, syntax, *rest = page.split("\n")
    assert head.startswith(f"{verb} — ") and blank == "" and syntax == "Syntax:"
    assert rest[0].startswith(f"  → {verb}")
    assert rest[-2] == "" and rest[-1] == CATALOGUE[verb].note


def test_unknown_tool_has_no_page() -> None:
    assert render_help_tool("dance") is None
    assert render_help_tool(" VIEW ") == SEED_VIEW_PAGE


def test_catalogue_covers_the_verbs_with_the_seeds_permissions() -> None:
    assert tuple(sorted(t.name for t in TOOLS)) == tuple(sorted(VERBS))
    permission = {t.name: t.permission for t in TOOLS}
    assert {v for v, p in permission.items() if p == "loom_write"} == {
        "respond", "annotate", "link", "edit", "split"}
    assert permission["continue"] == "loom_generate"
    assert permission["read"] == "doc_read" and permission["write"] == "doc_write"
    assert {v for v, p in permission.items() if p == "loom_aware"} == {
        "view", "list", "tree", "switch", "pin", "stash", "recall", "drop", "memory", "help",
        "think"}


def test_no_synonym_names_two_verbs_and_every_synonym_parses_to_its_verb() -> None:
    table = synonym_table()  # raises if a phrase names two verbs
    assert table["show"] == "view" and table["go to"] == "switch"
    assert table["generate"] == "continue" and table["note"] == "annotate"
    for tool in TOOLS:
        for phrase in tool.synonyms:
            if tool.name in ("help", "think"):
                continue
            result = parse(f"→ {phrase}")
            verb = getattr(result, "verb", None)
            if verb is None:  # a verb that needs arguments says so, under its own name
                assert tool.name in result.message or tool.name in (result.hint or "")
            else:
                assert verb == tool.name, phrase


def test_seed_syntax_lines_parse_once_placeholders_are_filled() -> None:
    fill = {"[localId]": "a7x2", "[n]": "3", "[count]": "3", "[max]": "40",
            "[content]": "x", "[new_content]": "x", "[edge_type]": "context",
            "[target]": "b3k9", "[description]": "d", "[name]": "notes",
            "[start]": "1", "[end]": "5", "[id]": "m", "[location]": "end", "[section]": "m",
            "[label]": "l", "[range]": "r001-a7x2", "[tool_name]": "view", "[treeId]": '"t"',
            "[offset]": "57", "[token]": " lay"}
    for tool in TOOLS:
        for form in tool.forms:
            line = form
            for placeholder, value in fill.items():
                line = line.replace(placeholder, value)
            result = parse(line)
            assert getattr(result, "verb", None) == tool.name, (form, result)


def test_reserved_words_include_the_filler() -> None:
    assert {"the", "me", "node", "full", "tree", "show"} <= RESERVED


def test_a_humans_overview_lists_the_reader_tools_too(app) -> None:  # type: ignore[no-untyped-def]
    """A writer's ``→ help`` named none of bookmark, tag, prune, search; the
    seed's overview (an agent's) stays to the letter."""
    from loom.commands.context import Actor

    tree = app.ws.create_tree("Help", root_content="Once.")
    out = app.executor.execute("→ help", Actor(app.ws.human(), tree)).text
    assert out.splitlines()[2:8] == [
        "Navigation: view, list, tree, switch",
        "Content: respond, annotate, link, edit, continue, split",
        "Documents: read, write",
        "Memory: pin, stash, recall, drop, memory",
        "Meta: help, think",
        "Reader: bookmark, unbookmark, tag, untag, rate, prune, unprune, regenerate, score, "
        "fill, explore, delete, undelete, rename, search",
    ]
    assert out.endswith("→ help [tool] for details on any tool")
    assert "Reader:" not in render_help_overview(["loom_aware", "loom_write", "doc_read"])
    # without loom_write, the reader's writes are starred like the seed's tools
    starred = render_help_overview(["loom_aware"], reader=True)
    assert "Reader: bookmark*, unbookmark*, tag*" in starred and "search\n" in starred


def test_tree_with_text_gives_a_model_the_tree_people_read(app) -> None:  # type: ignore[no-untyped-def]
    """→ tree gave the model bare ids five levels deep; the human's overview has
    each node's text and its notes. The seed's drawing stays as it is."""
    from loom.commands.context import Actor
    from loom.demo import create_demo

    tree = create_demo(app.ws)
    agent = app.ws.ensure_participant("collaborator", "model", "collaborator",
                                      PERMISSIONS, True)
    actor = Actor(agent, tree)
    out = app.executor.execute("→ tree with-text", actor).text
    lines = out.splitlines()
    assert lines[0].startswith('Tree: "The House at the End of the Lane"')
    assert any("The house stood empty at the end of the lane." in x for x in lines)
    assert any(x.endswith("(1 note)") for x in lines)
    assert "→ tree with-text" in render_help_tool("tree")
    assert parse("→ tree text").text is True  # type: ignore[union-attr]
    seed = app.executor.execute("→ tree", actor).text
    assert "The house stood empty" not in seed  # the seed's id-only drawing, unchanged


def _terms() -> list[tuple[str, str, str]]:
    from loom.commands.catalogue import TOOLS

    return [(t.name, "option", o.name) for t in TOOLS for o in t.options if o.description] + \
        [(t.name, "flag", f.name) for t in TOOLS for f in t.flags]


@pytest.mark.parametrize(("verb", "kind", "name"), _terms())
def test_every_option_and_flag_has_a_hover_page_from_its_declaration(verb: str, kind: str,
                                                                     name: str) -> None:
    """What a hover over an option or a flag shows (lsp/features/lookup.py): each one the
    catalogue declares, whoever adds it, read from its declaration, and found where it is
    typed (any spelling of an option, any word of a flag)."""
    from loom.commands.catalogue import TOOLS_BY_NAME
    from loom.commands.grammar import term_at
    from loom.commands.help import render_flag_help, render_option_help

    tool = TOOLS_BY_NAME[verb]
    if kind == "option":
        o = tool.option(name)
        assert o is not None
        page = render_option_help(verb, name)
        assert page is not None and page.startswith(f"{name}: — {o.description}")
        assert f"An option of → {verb}." in page
        typed = [f"{w}:1" for w in o.spellings() if ":" not in w]  # (pin:doc: is pin's)
    else:
        f = next(x for x in tool.flags if x.name == name)
        page = render_flag_help(verb, name)
        assert page is not None and page.startswith(f"{name} — {f.description}")
        typed = list(f.spellings())
    for word in typed:
        line = f"→ {verb} {word}"
        term = term_at(line, len(line) - 1)
        if term is not None:  # (a word the verb reads otherwise first is not its term)
            assert (term.kind, term.name) == (kind, name), (line, term)
    assert any(term_at(f"→ {verb} {w}", len(f"→ {verb} {w}") - 1) is not None for w in typed)
