"""The seeds' last details (issue 44, items 8–19). Each test failed before its fix and
quotes the seed (or SPEC-NOTES) it follows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from loom.app import App
from loom.commands import syntax
from loom.commands.context import Actor
from loom.store.schema import Node
from loom.store.workspace import Workspace
from tests.unit.test_conformance import relabel


@dataclass
class Chat:
    app: App
    ws: Workspace
    actor: Actor

    def run(self, line: str, actor: Actor | None = None) -> str:
        return self.app.executor.execute(line, actor or self.actor).text


@pytest.fixture
def chat(app: App) -> Chat:
    ws = app.ws
    tree = ws.create_tree("Marie", "dialogue", root_content="Let's study Marie.")
    relabel(ws.node(tree.root), "r001")
    return Chat(app, ws, Actor(ws.human(), tree))


def _chain(chat: Chat, parent: Node, count: int, prefix: str) -> list[Node]:
    ws, tree, h, m = chat.ws, chat.actor.tree, chat.ws.human(), chat.ws.subject()
    made = []
    for i in range(count):
        parent = relabel(ws.add_node(tree, parent, f"{prefix} {i}", h if i % 2 else m),
                         f"{prefix}{i:02d}")
        made.append(parent)
    return made


# ── item 8: every opening, wherever you stand ─────────────────────────────────


def test_tree_draws_every_opening_of_a_dialogue_tree_wherever_you_stand(chat: Chat) -> None:
    """Seed 001, dialogue mode: an edit "Creates branch, conversation continues from edit
    point"; the original's replies stay, so ``→ tree`` draws both openings. At the new
    root it drew only ``Root [r001']* (you are here) (leaf)`` (14 nodes gone); back under
    ``r001`` it left out ``r001'``."""
    root = chat.ws.node(chat.actor.tree.root)
    chain = _chain(chat, root, 3, "k")
    chat.ws.set_position(chat.actor.participant, chat.actor.tree, chain[-1])
    assert chat.run('→ edit r001 "A new opening."') == (
        "✓ created branch [r001'] from [r001]\n  conversation continues from edit point")
    assert chat.run("→ tree") == (
        'Tree: "Marie" (5 nodes, 0 branches)\n'
        "Root [r001] → [k00] → [k01] → [k02] (leaf)\n"
        "Root [r001']* (you are here) (leaf)\n"
        "\n"
        "* = current position")
    chat.run("→ switch to k02")
    assert chat.run("→ tree") == (
        'Tree: "Marie" (5 nodes, 0 branches)\n'
        "Root [r001] → [k00] → [k01] → [k02]* (you are here) (leaf)\n"
        "Root [r001'] (leaf)\n"
        "\n"
        "* = current position")
    # a reply under the new opening: its chain is drawn there, the original's stays
    chat.run("→ switch to r001'")
    chat.run('→ respond r001\' "Hello back."')
    out = chat.run("→ tree").splitlines()
    assert out[1] == "Root [r001] → [k00] → [k01] → [k02] (leaf)"
    assert out[2].startswith("Root [r001'] → [") and out[2].endswith(
        "]* (you are here) (leaf)")


# ── item 10: the current position stays in a capped drawing ───────────────────


def test_a_capped_branch_point_still_draws_where_you_are(chat: Chat) -> None:
    """Seed 000's drawing marks ``[a7x2]* (you are here)``. With 14 continuations and the
    14th current, ``→ tree`` drew 12, ``└→ ... 2 more`` and ``current position: [hsh73r]
    (not in this drawing)``; the position is drawn in its place among the others."""
    ws, tree, h = chat.ws, chat.actor.tree, chat.ws.human()
    root = ws.node(tree.root)
    kids = [relabel(ws.add_node(tree, root, f"reply {i}", h), f"c{i:02d}") for i in range(14)]
    ws.set_position(h, tree, kids[-1])
    out = chat.run("→ tree").splitlines()
    assert out[0] == 'Tree: "Marie" (15 nodes, 1 branch)'
    assert out[1] == "Root [r001]"
    assert out[2:14] == [f"     ├→ [c{i:02d}] (leaf)" for i in range(12)]
    assert out[14:] == ["     ├→ ... 1 more",
                        "     └→ [c13]* (you are here) (leaf)",
                        "",
                        "* = current position"]
    # deeper: the hidden continuation on your path is drawn, and followed down
    below = _chain(chat, kids[12], 2, "d")
    ws.set_position(h, tree, below[-1])
    out = chat.run("→ tree").splitlines()
    assert out[14:] == ["     ├→ [c12] → [d00] → [d01]* (you are here) (leaf)",
                        "     └→ ... 1 more",
                        "",
                        "* = current position"]


def test_a_long_line_of_descent_still_draws_where_you_are(chat: Chat) -> None:
    """The same promise at a leaf deep in a single line of replies: the drawing started at
    the root and stopped at depth 5, ``current position: … (not in this drawing)``."""
    root = chat.ws.node(chat.actor.tree.root)
    chain = _chain(chat, root, 9, "k")
    chat.ws.set_position(chat.actor.participant, chat.actor.tree, chain[-1])
    assert chat.run("→ tree") == (
        'Tree: "Marie" (10 nodes, 0 branches)\n'
        "Root [r001] → ... → [k03] → [k04] → [k05] → [k06] → [k07] → [k08]* (you are here)"
        " (leaf)\n"
        "\n"
        "* = current position")


# ── item 9: list shows a version in its original's place ──────────────────────


def test_list_continuations_shows_a_version_in_its_originals_place(app: App) -> None:
    """Seed 000, buffer mode: ``→ edit a7x2 "revised content here"`` → ``✓ created version
    [a7x2'] from [a7x2]``. ``tree``, ``as:nodes``, ``as:prose``, ``switch`` and the ambient
    line then use ``a7x2'``; ``→ list r001 continuations`` printed the replaced ``[a7x2]``
    with its old text."""
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("Lane", "buffer", root_content="The house stood empty.")
    root = relabel(ws.node(tree.root), "r001")
    a = relabel(ws.add_node(tree, root, " She came back.", h), "a7x2")
    relabel(ws.add_node(tree, root, " She stayed away.", ws.subject()), "c4m2")
    ws.add_node(tree, a, " The gate.", h)
    ws.set_position(h, tree, a)
    actor = Actor(h, tree)

    def run(line: str) -> str:
        return app.executor.execute(line, actor).text

    assert run('→ edit a7x2 "revised content here"') == (
        "✓ created version [a7x2'] from [a7x2]\n  downstream nodes preserved via hyperedge")
    assert run("→ list r001 continuations") == (
        "[r001] → 2 continuations:\n"
        "  [a7x2'] human · \"revised content here\"\n"
        "  [c4m2] model · \"She stayed away.\"")
    # a path through the original (the editor's exact id) shows the original there
    ws.set_position(h, tree, a, a)
    assert ws.position(h, tree)[0].id == a.id
    assert run("→ list r001 continuations").splitlines()[1] == (
        '  [a7x2] human · "She came back."')


# ── item 11: a permission comes with what it requires ────────────────────────


def test_users_add_gives_what_a_permission_requires_and_says_so(
        tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Seeds 000/001: ``loom_generate`` — "Requires: ``loom_aware``". ``loom users add w1
    --model --permissions loom_generate`` answered ``✓ w1 may now: loom_generate``, then
    ``→ continue`` as w1 was refused for ``loom_aware``: it is given with it, and said."""
    from loom.app import open_app
    from loom.cli import main
    from loom.model import permissions as perms

    db = tmp_path / "w.db"
    monkeypatch.delenv("LOOM_PARTICIPANT", raising=False)
    assert main(["--db", str(db), "users", "add", "w1", "--model", "--permissions",
                 "loom_generate"]) == 0
    assert capsys.readouterr().out == (
        "✓ added w1 (model, collaborator)\n"
        "✓ w1 may now: loom_aware, loom_generate\n"
        "  loom_aware too: loom_generate requires it\n")
    assert main(["--db", str(db), "users", "set", "w1", "--permissions", "docwrite"]) == 0
    assert capsys.readouterr().out == (
        "✓ w1 may now: doc_read, doc_write\n  doc_read too: doc_write requires it\n")
    app = open_app(db, use_default_subject=False)
    try:
        w1 = app.ws.participant("w1")
        assert perms.missing_for(perms.DOC_WRITE, w1.permissions) is None
        tree = app.ws.create_tree("T", "dialogue", root_content="Hi.")
        human = Actor(app.ws.human(), tree)
        # the same for every caller of grant (the editor's, the agents'): one place
        out = app.executor.execute(syntax.Grant(participant="w1",
                                             permissions=(perms.LOOM_GENERATE,)), human).text
        assert out == "✓ w1 may now: loom_aware, loom_generate\n  loom_aware too: " \
                      "loom_generate requires it"
        refused = app.executor.execute("→ continue", Actor(app.ws.participant("w1"), tree))
        assert "loom_aware" not in refused.text  # not refused for the requirement
    finally:
        app.ws.db.close()


# ── item 12: a section is named as the participant named it ───────────────────

NOTES = ("# Character notes\n\nBackground.\n\n"
         "## Marie's Core Motivation {#motivation}\n\n"
         "Her reluctance isn't about Thomas—it's about the pattern.\n\n"
         "## Thomas\n\nHe proposes.\n")


def test_a_section_is_shown_as_it_was_named_and_headings_without_their_id(chat: Chat) -> None:
    """SPEC-NOTES 16 and seed 000: ``doc:"character notes" §motivation`` (link, pin, memory
    block, read); Loom printed ``§maries-core-motivation`` for the section named
    ``motivation``, and ``read`` showed the heading's ``{#motivation}``."""
    chat.ws.create_document("character notes", NOTES.replace(" {#motivation}", ""))
    chat.ws.create_document("with ids", NOTES)
    run = chat.run
    assert run('→ link r001 to doc:"character notes" §motivation') == (
        '✓ linked [r001] ↔ doc:"character notes" §motivation')
    assert run("→ list r001 links") == '[r001] links:\n  → doc:"character notes" §motivation'
    assert run('→ pin doc:"character notes" section:motivation') == (
        '✓ pinned doc:"character notes" §motivation to working memory')
    # the same section by another of its names is the same pin
    assert run('→ pin doc:"character notes" §maries-core-motivation') == (
        '✓ doc:"character notes" §motivation is already pinned')
    assert run("→ memory").startswith(
        'Working Memory:\n  pinned: doc:"character notes" §motivation\n')
    from loom.agent.assembly import memory_block

    assert '  doc:"character notes" §motivation (11 words)\n' in memory_block(chat.ws,
                                                                              chat.actor)
    assert run('→ write doc:"character notes" replace:motivation "It is the pattern."') \
        .startswith('✓ replaced §motivation in doc:"character notes"')
    assert run('→ drop pin:doc:"character notes" §maries-core-motivation') == (
        '✓ dropped pin doc:"character notes" §motivation')
    # an explicit {#id} names the section; the heading is shown as written, without it
    assert run('→ read doc:"with ids" §motivation') == (
        'doc:"with ids" §motivation\n\n## Marie\'s Core Motivation\n\n'
        "Her reluctance isn't about Thomas—it's about the pattern.")
    assert "{#" not in run('→ read doc:"with ids"')
    assert "{#" not in run('→ read doc:"with ids" lines:1-5')
    # fuzzy, last: a typo still finds the one section it is close to
    assert run('→ read doc:"with ids" §motivaton').splitlines()[0] == (
        'doc:"with ids" §motivaton')


# ── item 13: "Last active" is the tree's last change, read fresh ──────────────


def test_last_active_counts_edits_and_links_and_is_read_fresh(chat: Chat, clock) -> None:  # type: ignore[no-untyped-def]
    """Seed 000's ``tree summary``: ``Last active: 3m ago``. It ignored edits and links,
    and a later command of the same batch read the tree's time as it was before."""
    chat.ws.create_document("notes", "# Notes\n\n## Motivation\n\nWhy.\n")

    def last_active() -> str:
        return chat.run("→ tree summary").splitlines()[-1]

    clock.advance(3600)
    assert chat.run('→ edit r001 "Let us study Marie again."').startswith("✓ created branch")
    clock.advance(120)
    assert last_active() == "Last active: 2m ago"
    clock.advance(3600)
    assert chat.run('→ link r001 to doc:"notes"').startswith("✓ linked")
    clock.advance(60)
    assert last_active() == "Last active: 1m ago"
    clock.advance(3600)
    first, second = chat.app.executor.batch(['→ respond r001 "Hello."', "→ tree summary"],
                                            chat.actor)
    assert first.ok and second.text.splitlines()[-1] == "Last active: just now"
    # a buffer-mode version too
    ws, h = chat.ws, chat.ws.human()
    buf = ws.create_tree("Lane", "buffer", root_content="The house.")
    a = relabel(ws.add_node(buf, ws.node(buf.root), " She came.", h), "a7x2")
    ws.set_position(h, buf, a)
    clock.advance(3600)
    there = Actor(h, buf)
    chat.run('→ edit a7x2 "She came back."', there)
    assert chat.run("→ tree summary", there).splitlines()[-1] == "Last active: just now"


# ── item 14: an empty document name has one answer ───────────────────────────

NO_NAME = ("✗ INVALID_SYNTAX: a document needs a name\n"
           '  hint: name it in quotes, as doc:"character notes"; → read alone lists the '
           "documents")


@pytest.mark.parametrize("line", [
    '→ write doc:"" append "text"', '→ read doc:""', '→ read doc:"  " summary',
    '→ pin doc:""', '→ link r001 to doc:""', '→ drop pin:doc:""',
    '→ write doc:"" replace:motivation "text"'])
def test_an_empty_document_name_is_one_answer_for_every_tool(chat: Chat, line: str) -> None:
    """Seed 000: ``doc`` — "Required. Document name or ID". ``write doc:""`` was refused
    with a hint; ``read``, ``pin``, ``link`` and ``drop`` answered ``NOT_FOUND … doc:""
    does not exist`` without one."""
    chat.ws.create_document("character notes", "# Notes\n")
    assert chat.run(line) == NO_NAME
    assert [d.name for d in chat.ws.documents()] == ["character notes"]  # nothing made


# ── item 15: an annotation named where a node is needed ──────────────────────


@pytest.mark.parametrize(("line", "instead"), [
    ("→ switch to ann-1", "→ switch to {on}"),
    ("→ continue from ann-1", "→ continue from {on}"),
    ('→ respond ann-1 "More."', '→ respond {on} "…"'),
    ('→ edit ann-1 "Better."', '→ annotate {on} "[content]"'),
    ("→ split ann-1 at:2", "→ split {on} at:[offset]"),
    ("→ regenerate ann-1", "→ continue from {on}"),
    ("→ tree from:ann-1", "→ tree from:{on}"),
    ("→ view branch:ann-1 as:prose", "→ view branch:{on} as:prose"),
    ("→ list ann-1 continuations", "→ list {on} continuations"),
    ('→ stash "early" summary-of:r001-ann-1', "[{on}]"),
    ("→ explore from ann-1", "→ explore from {on}"),
])
def test_an_annotation_where_a_node_is_needed_is_said_to_be_one(
        chat: Chat, line: str, instead: str) -> None:
    """Seed 000: ``NOT_FOUND`` — "Node, document, or stash doesn't exist". ``→ respond
    ann-1 …`` and ``→ switch to ann-1`` answered ``NOT_FOUND`` though the annotation exists
    (and ``view branch:ann-1`` read the note as the branch's text): every tool that needs a
    node of the text says what it is, and what to name instead."""
    ws, tree, h = chat.ws, chat.actor.tree, chat.ws.human()
    a = ws.add_node(tree, ws.node(tree.root), "She came back.", h)
    ws.set_position(h, tree, a)
    assert chat.run(f'→ annotate {a.label} "a turning point"') == (
        f"✓ annotation [ann-1] added to [{a.label}]")
    before = (ws.tree_counts(tree), ws.position(h, tree)[0].id)
    out = chat.run(line)
    first, hint = out.splitlines()[:2]
    assert first == "✗ INVALID_SYNTAX: [ann-1] is an annotation, not a node", out
    assert hint.startswith("  hint: ") and instead.format(on=a.label) in hint, out
    assert (ws.tree_counts(tree), ws.position(h, tree)[0].id) == before
    # where a note is a fine thing to name, it still is
    assert chat.run("→ view ann-1").startswith("[ann-1] human")
    assert chat.run("→ pin ann-1") in ("✓ pinned [ann-1] to working memory",
                                       "✓ [ann-1] is already pinned")


# ── item 16: loom do batches consecutive lines ───────────────────────────────


def test_loom_do_runs_consecutive_lines_of_one_argument_as_a_batch(
        tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Seed 000, Batching: "Multiple tool calls on consecutive lines are batched and
    executed together ... Results are returned together". ``loom do T $'→ view a\\n→ view
    b'`` was refused "one command per line"; it runs as the shell and a model's lines do."""
    from loom.cli import main

    db = tmp_path / "do.db"
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    monkeypatch.delenv("LOOM_PARTICIPANT", raising=False)
    assert main(["--db", str(db), "new", "T", "--mode", "dialogue"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "do", "T",
                 '→ respond root "A gull cried."\n→ view root\n\n'
                 '→ respond root "Two\nlines."\nlist root continuations']) == 0
    out = capsys.readouterr().out
    assert out.count("✓ created [") == 2  # a quote over two lines is one command
    view, listed = out.index("\n1 continuation\n"), out.index("→ 2 continuations:")
    assert out.startswith("✓ created [") and view < out.rindex("✓ created [") < listed
    assert '"Two lines."' in out
    # a line that does not parse is answered as one argument is, the rest still run
    assert main(["--db", str(db), "do", "T", "→ frobnicate\n→ tree summary"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("✗ INVALID_SYNTAX: unknown command") and '\nTree: "T"\n' in out
    # a think block is still one thought
    assert main(["--db", str(db), "do", "T", "→ think\nThe gull matters.\n←"]) == 0
    assert capsys.readouterr().out.startswith("✓ thought kept in memory")


# ── item 17: the extended ambient line is shown ──────────────────────────────


def test_the_extended_ambient_line_reaches_the_collaborator_and_the_shell(
        app: App, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Seed 000: "When more orientation is needed, ambient context can include:
    ``⟨node:a7x2k3 depth:12 siblings:2⟩ ⟨permissions:aware,write,read⟩ ⟨human active in
    branch:8⟩``". It was built and never shown: the collaborator gets it when another
    participant is active in the tree, and ``loom shell``'s ``→ status`` prints it."""
    import io

    from loom.agent import assembly as cx
    from loom.agent.participant import ensure_agent
    from loom.shell import run_shell

    ws, h = app.ws, app.me()  # (the shell's participant)
    tree = ws.create_tree("talk", "dialogue", root_content="Hello.")
    a = ws.add_node(tree, ws.node(tree.root), "One.", h)
    agent = ensure_agent(ws)
    ws.set_position(agent, tree, a, a)
    you_are = next(x for x in cx.fit(cx.draft(ws, Actor(agent, tree))).sections["loom"].splitlines()
                   if x.startswith("You are at "))
    assert you_are == (f"You are at ⟨node:{a.label} depth:1 siblings:0 annotations:0 "
                       "links:0⟩ ⟨permissions:aware,write,generate,read,docwrite,crosstree⟩")
    ws.set_position(h, tree, ws.node(tree.root))  # the human is active: more orientation
    loom = cx.fit(cx.draft(ws, Actor(agent, tree))).sections["loom"].splitlines()
    root = ws.node(tree.root).label
    assert f"⟨node:{a.label} depth:1 siblings:0 annotations:0 links:0⟩ " \
           "⟨permissions:aware,write,generate,read,docwrite,crosstree⟩ " \
           f"⟨{h.name} active at {root}⟩" in loom[3]
    # seed 001's visibility line stays
    assert f"{h.name.capitalize()} active at [{root}], depth:0" in loom
    # the shell, as the human: → status (and status) print it, with the collaborator
    monkeypatch.setattr("sys.stdin", io.StringIO("→ status\nstatus\n"))
    assert run_shell(app, tree) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"⟨node:{root} depth:0 siblings:0 annotations:0 links:0⟩ "
                   "⟨permissions:aware,write,generate,read,docwrite,crosstree⟩ "
                   f"⟨{agent.name} active at {a.label}⟩"] * 2


# ── item 18: pins in the memory block are previews and word counts ───────────


def test_the_memory_block_shows_pins_as_the_seed_does(app: App) -> None:
    """Seed 000's operational memory block: ``[a7x2] "Marie's reluctance stems from..."``
    and ``doc:"character notes" §motivation (247 words)`` (SPEC-NOTES 17). Pins were shown
    whole: a node's text up to 1,200 characters, a document's lines up to 4,000."""
    from loom.agent import assembly as cx
    from loom.agent.participant import ensure_agent

    ws = app.ws
    tree = ws.create_tree("Marie", "dialogue", root_content="Let's study Marie.")
    long_text = ("Marie's reluctance stems from her childhood. " + "She keeps the letters. " * 80)
    a = ws.add_node(tree, ws.node(tree.root), long_text, ws.human(),
                    summary="Marie's reluctance stems from her childhood.",
                    summary_source="model")
    section = " ".join(["word"] * 246)
    ws.create_document("character notes", f"# Notes\n\nIntro.\n\n## Motivation\n\n{section}\n")
    agent = ensure_agent(ws)
    actor = Actor(agent, tree)
    ws.set_position(agent, tree, a, a)
    for line in (f"→ pin {a.label}", '→ pin doc:"character notes" §motivation',
                 '→ pin doc:"character notes"'):
        assert app.executor.execute(line, actor).ok, line
    block = cx.memory_block(ws, actor)
    assert block.startswith(
        "=== Operational Memory ===\n"
        "Pinned:\n"
        f'  [{a.label}] "Marie\'s reluctance stems from her childhood."\n'
        '  doc:"character notes" §motivation (247 words)\n'
        '  doc:"character notes" (249 words)\n'), block
    assert "She keeps the letters" not in block and "word word" not in block
    # → memory counts what the pins cost in context: the lines above, not the texts
    state = app.executor.execute("→ memory", actor).text
    assert int(state.split("Context: ")[1].split(" tokens")[0].replace(",", "")) < 100
