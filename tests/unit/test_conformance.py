"""Conformance: the executor's outputs against the example outputs quoted from seed 000/001."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from loom.app import App
from loom.commands.context import Actor, ContinueRequest
from loom.model import permissions as perms
from loom.store.schema import Node
from loom.store.workspace import Workspace


def relabel(node: Node, local_id: str) -> Node:
    Node.update(local_id=local_id, label=local_id).where(Node.id == node.id).execute()
    return Node.get_by_id(node.id)


@dataclass
class Marie:
    """The seeds' running example: a7x2 at depth 7 with b3k9, c4m2, d5n7 below it."""

    app: App
    ws: Workspace
    actor: Actor
    nodes: dict[str, Node] = field(default_factory=dict)

    def run(self, line: str, actor: Actor | None = None) -> str:
        return self.app.executor.execute(line, actor or self.actor).text


SUMMARY = "Marie's reluctance stems from her childhood, not the immediate conflict."
FULL = """The way I see it, Marie's reluctance stems from her childhood—specifically
the summer her father left. The immediate conflict with Thomas is just
triggering that old wound. She's not really angry at him; she's angry at
the pattern repeating."""


@pytest.fixture
def marie(app: App, clock) -> Marie:
    ws = app.ws
    human = ws.human()
    model = ws.subject()
    collab = ws.ensure_participant("collaborator", "model", "collaborator", perms.ORDER, True)
    tree = ws.create_tree("Marie Character Study", "dialogue")
    nodes = {"r001": relabel(ws.node(tree.root), "r001")}
    parent = nodes["r001"]
    for i in range(1, 7):
        parent = ws.add_node(tree, parent, f"step {i}", human if i % 2 else model)
        nodes[f"n{i}"] = parent
    a7x2 = ws.add_node(tree, parent, FULL, human, summary=SUMMARY, summary_source="model")
    nodes["a7x2"] = relabel(a7x2, "a7x2")
    for lid, text, who in (("b3k9", "Building on the childhood trauma theme...", model),
                           ("c4m2", "Alternative: What if Marie confronts Thomas directly...",
                            model),
                           ("d5n7", "Actually, let's try a different angle...", human)):
        nodes[lid] = relabel(ws.add_node(tree, nodes["a7x2"], text, who), lid)
    clock.advance(180)
    m = Marie(app, ws, Actor(human, tree), nodes)
    m.collab = collab  # type: ignore[attr-defined]
    return m


def test_view_default(marie: Marie) -> None:
    ws, tree = marie.ws, marie.actor.tree
    ws.add_node(tree, marie.nodes["a7x2"], "Key turning point", ws.human(), kind="annotation")
    notes = ws.create_document("character notes", "# Notes\n")
    ws.add_link(tree, marie.nodes["a7x2"], ws.human(), target_kind="doc", target_doc=notes)
    assert marie.run("→ view a7x2") == (
        "[a7x2] human · 3m ago · depth:7\n"
        '"Marie\'s reluctance stems from her childhood, not the immediate conflict."\n'
        "\n"
        "3 continuations · 1 annotation · 1 link"
    )
    assert marie.run("→ view a7x2 full") == (
        f"[a7x2] human · 3m ago · depth:7\n{FULL}\n\n3 continuations · 1 annotation · 1 link"
    )


def test_view_with_annotations(marie: Marie) -> None:
    ws, tree = marie.ws, marie.actor.tree
    ws.add_node(tree, marie.nodes["a7x2"], "Key turning point—character motivation established",
                marie.collab, kind="annotation")  # type: ignore[attr-defined]
    ws.add_node(tree, marie.nodes["a7x2"], "Revisit if branch 3 doesn't work out", ws.human(),
                kind="annotation")
    ws.add_link(tree, marie.nodes["a7x2"], ws.human(), target_kind="node",
                target_node=marie.nodes["n2"])
    assert marie.run("→ view a7x2 with-annotations") == (
        "[a7x2] human · 3m ago · depth:7\n"
        '"Marie\'s reluctance stems from her childhood, not the immediate conflict."\n'
        "\n"
        "Annotations:\n"
        '  [ann-1] "Key turning point—character motivation established"\n'
        '  [ann-2] "Revisit if branch 3 doesn\'t work out"\n'
        "\n"
        "3 continuations · 1 link"
    )
    assert marie.run("→ list a7x2 annotations") == (
        "[a7x2] annotations:\n"
        '  [ann-1] collaborator · "Key turning point—character motivation established"\n'
        '  [ann-2] human · "Revisit if branch 3 doesn\'t work out"'
    )
    assert marie.run('→ annotate a7x2 "this is where the tone shifts"') == (
        "✓ annotation [ann-3] added to [a7x2]"
    )


def test_list_continuations(marie: Marie) -> None:
    assert marie.run("→ list a7x2 continuations") == (
        "[a7x2] → 3 continuations:\n"
        '  [b3k9] model · "Building on the childhood trauma theme..."\n'
        '  [c4m2] model · "Alternative: What if Marie confronts Thomas directly..."\n'
        '  [d5n7] human · "Actually, let\'s try a different angle..."'
    )


def test_list_links(marie: Marie) -> None:
    ws, tree = marie.ws, marie.actor.tree
    notes = ws.create_document("character notes", "# Notes\n\n## Motivation\n\nWhy.\n")
    ws.add_link(tree, marie.nodes["a7x2"], ws.human(), target_kind="doc", target_doc=notes,
                section="motivation")
    other = ws.create_tree("earlier draft", "dialogue")
    x9y3 = relabel(ws.add_node(other, ws.node(other.root), "same scene", ws.human()), "x9y3")
    ws.add_link(tree, marie.nodes["a7x2"], ws.human(), target_kind="node", target_node=x9y3,
                note="same scene, different approach")
    assert marie.run("→ list a7x2 links") == (
        "[a7x2] links:\n"
        '  → doc:"character notes" §motivation\n'
        '  → [x9y3] in tree:"earlier draft" (note: "same scene, different approach")'
    )
    assert marie.run('→ link a7x2 to doc:"character notes"') == (
        '✓ linked [a7x2] ↔ doc:"character notes"'
    )


def test_tree_drawing(marie: Marie) -> None:
    ws, tree, h = marie.ws, marie.actor.tree, marie.ws.human()
    e6p4 = relabel(ws.add_node(tree, marie.nodes["b3k9"], "e", h), "e6p4")
    relabel(ws.add_node(tree, e6p4, "f", h), "f7q8")
    relabel(ws.add_node(tree, marie.nodes["c4m2"], "g", h), "g8r2")
    # five side branches up the path make 47 nodes and 6 branch points, as in the seed
    for i, length in zip(range(1, 6), (7, 7, 7, 6, 6), strict=True):
        parent = marie.nodes[f"n{i}"]
        for _ in range(length):
            parent = ws.add_node(tree, parent, "side", h)
    ws.set_position(h, tree, marie.nodes["a7x2"])
    ws.clock.advance(180)  # the nodes just added were the tree's last activity
    assert marie.run("→ tree") == (
        'Tree: "Marie Character Study" (47 nodes, 6 branches)\n'
        "Root [r001] → ... → [a7x2]* (you are here)\n"
        "                    ├→ [b3k9] → [e6p4] → [f7q8] (leaf)\n"
        "                    ├→ [c4m2] → [g8r2] (leaf)\n"
        "                    └→ [d5n7] (leaf)\n"
        "\n"
        "* = current position"
    )
    summary = marie.run("→ tree summary")
    assert summary.splitlines()[:2] == ['Tree: "Marie Character Study"',
                                        "47 nodes · 6 branches · 8 leaves"]
    assert summary.splitlines()[-1] == "Last active: 3m ago"


def test_switch(marie: Marie) -> None:
    ws, tree, h = marie.ws, marie.actor.tree, marie.ws.human()
    ws.add_node(tree, marie.nodes["b3k9"], "one", h)
    ws.add_node(tree, marie.nodes["b3k9"], "two", h)
    assert marie.run("→ switch to b3k9") == (
        "✓ switched to [b3k9]\n"
        "  depth:8 · 2 continuations · path: r001 → ... → a7x2 → b3k9"
    )
    assert marie.ws.position(h, tree)[0].id == marie.nodes["b3k9"].id


def test_switch_cross_tree(marie: Marie) -> None:
    ws = marie.ws
    other = ws.create_tree("earlier draft", "dialogue")
    relabel(ws.add_node(other, ws.node(other.root), "same scene", ws.human()), "x9y3")
    assert marie.run("→ switch to x9y3") == (
        '✗ CROSS_TREE: node [x9y3] is in tree "earlier draft"\n'
        '  hint: use → switch to x9y3 in tree:"earlier draft" (requires cross-tree permission)'
    )
    out = marie.run('→ switch to x9y3 in tree:"earlier draft"')
    assert out.startswith('✓ switched to [x9y3] in tree:"earlier draft"')
    assert marie.actor.tree.id == other.id


class FakeSubject:
    """A subject model that answers with fixed texts (the real ones are tested in e2e)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.requests: list[ContinueRequest] = []

    def generate(self, request: ContinueRequest, on_delta=None):  # type: ignore[no-untyped-def]
        from types import SimpleNamespace

        self.requests.append(request)
        comps = [SimpleNamespace(index=i, text=self.texts[i % len(self.texts)],
                                 finish_reason="stop", logprobs=None, usage=None)
                 for i in range(request.n)]
        return SimpleNamespace(completions=comps, model="fake", provider="fake",
                               params={"n": request.n}, usage={}, latency_ms=1.0,
                               raw=[{"ok": True}])


def test_continue_and_respond(marie: Marie) -> None:
    marie.app.executor.subject = FakeSubject([
        "Taking the trauma angle further, we see Marie...",
        "What if we introduce a foil character who...",
        "Slowing down—let's sit in this moment and...",
    ])
    out = marie.run("→ continue from a7x2 n:3")
    # the seed's lines, then the move said as respond says it (a7x2 is on the human's path)
    m = re.fullmatch(
        r"✓ generating 3 continuations from \[a7x2\]\.\.\.\n"
        r'  \[([0-9a-z]{6})\] "Taking the trauma angle further, we see Marie\.\.\."\n'
        r'  \[[0-9a-z]{6}\] "What if we introduce a foil character who\.\.\."\n'
        r'  \[[0-9a-z]{6}\] "Slowing down—let\'s sit in this moment and\.\.\."\n'
        r"  switched to \[\1\]", out)
    assert m, out
    assert marie.ws.position(marie.actor.participant, marie.actor.tree)[0].label == m.group(1)
    assert marie.ws.count_children(marie.nodes["a7x2"].id) == 6
    out = marie.run('→ respond a7x2 "my own take"')
    m = re.fullmatch(r"✓ created \[([0-9a-z]{6})\] as continuation from \[a7x2\]\n"
                     r"  switched to \[\1\]", out)
    assert m, out


def test_edit_buffer_and_dialogue(marie: Marie) -> None:
    assert marie.run('→ edit a7x2 "revised content here"') == (
        "✓ created branch [a7x2'] from [a7x2]\n  conversation continues from edit point"
    )
    ws, h = marie.ws, marie.ws.human()
    buf = ws.create_tree("buffer tree", "buffer", root_content="Start.")
    node = relabel(ws.add_node(buf, ws.node(buf.root), " Middle.", h), "a7x2")
    child = ws.add_node(buf, node, " End.", h)
    actor = Actor(h, buf)
    ws.set_position(h, buf, child)
    assert marie.run('→ edit a7x2 "revised content here"', actor) == (
        "✓ created version [a7x2'] from [a7x2]\n  downstream nodes preserved via hyperedge"
    )
    version = ws.resolve(buf, "a7x2'")
    assert version.edited_from == node.id
    # downstream shared: the child is a continuation of both, and the path takes the version
    assert [c.id for c in ws.children(version)] == [child.id]
    assert [n.content for n in ws.path(child)] == ["Start.", "revised content here", " End."]


def test_documents(marie: Marie) -> None:
    words = " ".join(["word"] * 1200)
    body = (f"# Character notes\n\n{words}\n\n## Marie's Core Motivation\n\n"
            "Her reluctance isn't about Thomas—it's about the pattern.\n")
    ws = marie.ws
    doc = ws.create_document("character notes", body)
    assert marie.run('→ read doc:"character notes" section:motivation') == (
        'doc:"character notes" §motivation\n\n## Marie\'s Core Motivation\n\n'
        "Her reluctance isn't about Thomas—it's about the pattern."
    )
    marie.app.ws.clock.advance(7200)
    from loom.store.schema import Document

    Document.update(summary="Background notes on Marie and Thomas.").where(
        Document.id == doc.id).execute()
    assert marie.run('→ read doc:"character notes" summary') == (
        'doc:"character notes" (1,213 words · updated 2h ago)\n'
        '"Background notes on Marie and Thomas."'
    )
    out = marie.run('→ write doc:"character notes" append "new insight about theme"')
    assert out == '✓ appended to doc:"character notes" (now 1,217 words)'


def test_memory_tools(marie: Marie) -> None:
    assert marie.run("→ pin a7x2") == "✓ pinned [a7x2] to working memory"
    assert marie.run("→ pin r001") == "✓ pinned [r001] to working memory"
    marie.ws.create_document("character notes", "# Notes\n\n## Motivation\n\nWhy.\n")
    assert marie.run('→ pin doc:"character notes" section:motivation') == (
        '✓ pinned doc:"character notes" §motivation to working memory'
    )
    insight = ("Marie's reluctance stems from pattern recognition—she's seen this story "
               "before and knows how it ends.")
    assert re.fullmatch(r'✓ stashed "marie insight" \(\d+ tokens\)',
                        marie.run(f'→ stash "marie insight" "{insight}"'))
    marie.run('→ stash "theme notes" content-of:b3k9')
    marie.run('→ stash "act 2 outline" summary-of:r001-a7x2')
    out = marie.run("→ memory")
    assert out.startswith(
        "Working Memory:\n"
        '  pinned: [a7x2], [r001], doc:"character notes" §motivation\n'
        '  stashed: "marie insight", "theme notes", "act 2 outline"\n'
        "\n"
        "Context: "
    ), out
    assert re.search(r"Context: [\d,]+ tokens used · [\d,]+ available", out)
    assert marie.run('→ recall "marie insight"') == f'✓ recalled "marie insight":\n"{insight}"'
    assert marie.run("→ drop pin:a7x2") == "✓ dropped pin [a7x2]"
    assert marie.run('→ drop stash:"theme notes"') == '✓ dropped stash "theme notes"'
    assert marie.run('→ recall "theme notes"').startswith(
        '✗ NOT_FOUND: stash "theme notes" does not exist')


def test_memory_trace(marie: Marie) -> None:
    marie.app.executor.subject = FakeSubject(["one", "two"])
    lines = [
        "→ view a7x2", "→ list a7x2 continuations", "→ switch to b3k9", "→ view b3k9 full",
        '→ annotate b3k9 "promising direction"', "→ pin b3k9", "→ continue from b3k9 n:2",
        "→ view c4m2", '→ stash "alternative" content-of:c4m2', "→ memory",
    ]
    for line in lines:
        assert not marie.run(line).startswith("✗"), line
    assert marie.run("→ memory trace") == "Action Trace (last 10):\n" + "\n".join(
        f"  {line}" for line in lines)


def test_help_overview_for_analysis_role(marie: Marie) -> None:
    ws = marie.ws
    p = ws.ensure_participant("assistant", "model", "collaborator",
                              (perms.LOOM_AWARE, perms.LOOM_WRITE, perms.DOC_READ), True)
    assert marie.run("→ help", Actor(p, marie.actor.tree)) == (
        "Available tools (your permissions: loom_aware, loom_write, doc_read):\n"
        "\n"
        "Navigation: view, list, tree, switch\n"
        "Content: respond, annotate, link, edit, continue*, split\n"  # + Loom's split
        "Documents: read\n"
        "Memory: pin, stash, recall, drop, memory\n"
        "Meta: help, think\n"
        "\n"
        "* requires loom_generate permission (you don't have this)\n"
        "\n"
        "→ help [tool] for details on any tool"
    )


def test_errors(marie: Marie) -> None:
    assert marie.run("→ view xyz999") == "✗ NOT_FOUND: node [xyz999] does not exist in this tree"
    # one character off an id (wrong, extra, swapped): the hint names it
    for typo in ("b3k8", "b3k9x", "3bk9"):
        assert marie.run(f"→ view {typo}").endswith("\n  hint: did you mean [b3k9]?"), typo
    assert marie.run("→ continue from a7x2 n:50") == (
        "✗ LIMIT_EXCEEDED: max continuations per request is 10\n  hint: use n:10 or less"
    )
    p = marie.ws.ensure_participant("assistant", "model", "collaborator",
                                    (perms.LOOM_AWARE, perms.LOOM_WRITE, perms.DOC_READ), True)
    assert marie.run("→ continue from a7x2", Actor(p, marie.actor.tree)) == (
        "✗ PERMISSION_DENIED: loom_generate not enabled\n"
        "  hint: request elevated permissions or ask the human to generate"
    )
    assert marie.run("→ continue from a7x2") == (
        "✗ MODEL_ERROR: no subject model is configured\n"
        "  hint: set up the local model (loom model setup) or set "
        "ANTHROPIC_API_KEY / OPENAI_API_KEY, or configure a profile in config.toml"
    )
    assert marie.run("→ frobnicate the tree").startswith("✗ INVALID_SYNTAX: ")


def test_ambient_and_prose(app: App) -> None:
    ws, h, model = app.ws, app.ws.human(), app.ws.subject()
    tree = ws.create_tree("chapter 3", "buffer",
                          root_content="The house stood empty at the end of the lane.")
    a = ws.add_node(tree, ws.node(tree.root), "She hadn't visited since her mother's death,", h)
    b = ws.add_node(tree, a, " and the windows seemed to watch her approach.", model)
    ws.set_position(h, tree, b)
    out = app.executor.execute(f"→ view branch:{b.local_id} as:prose", Actor(h, tree)).text
    assert out.split("\n\n", 1)[1] == (
        "The house stood empty at the end of the lane.︱She hadn't visited since her mother's "
        "death,︱› and the windows seemed to watch her approach."
    )
    relabel(b, "a7x2k3")
    assert app.ambient(Actor(h, tree)) == '⟨node:a7x2k3 mode:buffer doc:"chapter 3" words:25⟩'


def test_ambient_dialogue(marie: Marie) -> None:
    ws, tree, h = marie.ws, marie.actor.tree, marie.ws.human()
    ws.set_position(h, tree, marie.nodes["b3k9"])
    ws.add_node(tree, marie.nodes["b3k9"], "note", h, kind="annotation")
    ws.add_link(tree, marie.nodes["b3k9"], h, target_kind="node", target_node=marie.nodes["n1"])
    assert marie.app.ambient(marie.actor) == (
        "⟨node:b3k9 depth:8 siblings:2 annotations:1 links:1⟩"
    )


# ── the seeds to the letter ─────────────────────────────────────────────────


def test_tree_summary_has_the_seeds_main_themes_line(marie: Marie) -> None:
    """Seed 000: ``Main themes: character motivation, childhood trauma, relationship
    patterns`` — from the model's structured tree summary when a model made one."""
    ws, tree = marie.ws, marie.actor.tree
    ws.set_tree_summary(tree, "Marie's reluctance is traced to her childhood. The branches "
                        "test how it shapes her decision-making. The", "model",
                        ["character motivation", "childhood trauma", "relationship patterns"])
    assert marie.run("→ tree summary") == (
        'Tree: "Marie Character Study"\n'
        "11 nodes · 1 branch · 3 leaves\n"
        "Main themes: character motivation, childhood trauma, relationship patterns\n"
        "Summary: Marie's reluctance is traced to her childhood. The branches test how it "
        "shapes her decision-making.\n"  # whole sentences only: the cut "The" is gone
        "Last active: 3m ago"
    )


def test_tree_summary_themes_without_a_model_are_key_phrases(app: App) -> None:
    """No model: the themes are key phrases of the path's text (never a description or a
    cut sentence; names are people, not themes), the same on every call."""
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("Marie Character Study", "dialogue",
                          description="A study of Marie's reluctance.",
                          root_content="Marie's reluctance stems from her childhood.")
    tip = ws.node(tree.root)
    for text in ("Building on the childhood trauma theme, her father left one summer.",
                 "Relationship patterns repeat for Marie: trust, dependence, abandonment.",
                 "Her relationship patterns echo the childhood trauma of that summer."):
        tip = ws.add_node(tree, tip, text, h)
    ws.set_position(h, tree, tip)
    out = app.executor.execute("→ tree summary", Actor(h, tree)).text
    lines = out.splitlines()
    assert lines[0] == 'Tree: "Marie Character Study"'
    assert lines[2] == "Main themes: childhood trauma, relationship patterns, summer"
    assert lines[3].startswith("Last active: ") and len(lines) == 4
    assert app.executor.execute("→ tree summary", Actor(h, tree)).text == out


def test_a_version_is_not_a_branch_and_is_drawn_in_its_originals_place(app: App) -> None:
    """Buffer-mode edits: counts stay (a version is not a branch point, nor another node),
    ``→ tree from:root`` draws the version on the path, and ``*`` marks it."""
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("Lane", "buffer", root_content="The house stood empty.")
    root = relabel(ws.node(tree.root), "r001")
    a = relabel(ws.add_node(tree, root, " She came back.", h), "a7x2")
    b = relabel(ws.add_node(tree, a, " The gate.", h), "b3k9")
    relabel(ws.add_node(tree, a, " The lane.", h), "c4m2")
    d = relabel(ws.add_node(tree, b, " Inside.", h), "d5n7")
    relabel(ws.add_node(tree, b, " Outside.", h), "e6p4")
    ws.add_node(tree, a, "a note", h, kind="annotation")
    ws.set_position(h, tree, d)
    actor = Actor(h, tree)

    def run(line: str) -> str:
        return app.executor.execute(line, actor).text

    before = run("→ tree summary").splitlines()[1]
    assert before == "6 nodes · 2 branches · 3 leaves"
    for line in ('→ edit a7x2 "She came back at last."', '→ edit b3k9 "The green gate."',
                 "→ edit a7x2' \"She came back, at last.\""):
        assert run(line).startswith("✓ created version")
    assert run("→ tree summary").splitlines()[1] == before
    assert ws.trees() == [(tree, 6)]  # loom trees: the same definition
    assert run("→ tree from:root") == (
        'Tree: "Lane" (6 nodes, 2 branches)\n'
        "[r001] → [a7x2'']\n"
        "         ├→ [b3k9']\n"
        "         │  ├→ [d5n7]* (you are here) (leaf)\n"
        "         │  └→ [e6p4] (leaf)\n"
        "         └→ [c4m2] (leaf)\n"
        "\n"
        "* = current position"
    )
    # a drawing without the current position does not print the legend for a missing mark
    out = run("→ tree from:c4m2")
    assert "* = current position" not in out
    assert out.endswith("current position: [d5n7] (not in this drawing)")


def test_node_counts_agree_everywhere(marie: Marie) -> None:
    """``loom trees`` and ``→ tree`` count the same nodes: annotations are not nodes."""
    ws, tree = marie.ws, marie.actor.tree
    for text in ("one", "two", "three"):
        ws.add_node(tree, marie.nodes["a7x2"], text, ws.human(), kind="annotation")
    counts = ws.tree_counts(tree)
    assert (counts.nodes, counts.annotations) == (11, 3)
    assert dict((t.id, n) for t, n in ws.trees())[tree.id] == 11
    assert marie.run("→ tree").startswith('Tree: "Marie Character Study" (11 nodes, 1 branch)')


def test_one_think_block_is_one_trace_entry(marie: Marie) -> None:
    from loom.memory import operational as mem

    out = marie.run("→ think\nThe motivation isn't clear yet.\nTry option 3 first.\n←")
    assert out.startswith("✓ thought kept in memory")
    entries = mem.trace(marie.ws, marie.actor.participant)
    assert [(e.command, e.message) for e in entries] == [
        (mem.THINK, "The motivation isn't clear yet.\nTry option 3 first.")]


def test_ambient_line_shows_a_version_as_view_does(app: App) -> None:
    """Seed 000's ``⟨node:a7x2k3 mode:buffer …⟩`` names the node as ``view`` and ``tree``
    do: a version is ``a7x2'``, not its own raw localId."""
    ws, h = app.ws, app.ws.human()
    tree = ws.create_tree("chapter 3", "buffer", root_content="The house stood empty.")
    a = relabel(ws.add_node(tree, ws.node(tree.root), " She came back.", h), "a7x2k3")
    ws.set_position(h, tree, a)
    actor = Actor(h, tree)
    app.executor.execute('→ edit a7x2k3 "She came home."', actor)
    version = ws.position(h, tree)[0]
    assert version.label == "a7x2k3'" and version.local_id != "a7x2k3"
    assert app.ambient(actor) == '⟨node:a7x2k3\' mode:buffer doc:"chapter 3" words:7⟩'
    assert app.executor.execute("→ view a7x2k3'", actor).text.startswith("[a7x2k3'] human")


def test_continue_from_elsewhere_does_not_move_you(marie: Marie) -> None:
    """``continue`` moves you only when it continues where you are, and then says so."""
    marie.app.executor.subject = FakeSubject(["More."])
    h, tree = marie.actor.participant, marie.actor.tree
    marie.ws.set_position(h, tree, marie.nodes["c4m2"])
    out = marie.run("→ continue from d5n7")
    assert "switched to" not in out
    assert marie.ws.position(h, tree)[0].id == marie.nodes["c4m2"].id


def test_read_summary_is_prose_not_markdown(marie: Marie) -> None:
    """Seed 000's summary return quotes prose: ``"Background notes on Marie and Thomas,
    covering childhood history, relationship dynamics, and key character beats for Act
    2."`` — the heading's ``#`` is not part of it."""
    marie.ws.create_document("character notes", (
        "# Character notes\n\n"
        "Background notes on **Marie** and Thomas, covering childhood history, relationship "
        "dynamics, and key character beats for Act 2. More follows.\n\n"
        "## Marie's Core Motivation\n\n- Summer 1987: Father leaves\n"))
    out = marie.run('→ read doc:"character notes" summary')
    assert out.splitlines()[1] == (
        '"Background notes on Marie and Thomas, covering childhood history, relationship '
        'dynamics, and key character beats for Act 2."')


def test_small_result_formats(marie: Marie) -> None:
    """``(1 token)``; ``replace:`` keeps the blank line under the heading; ``help tree``
    says where it draws from."""
    assert marie.run('→ stash "x" "a"') == '✓ stashed "x" (1 token)'
    marie.ws.create_document("notes", "# Notes\n\n## Motivation\n\nOld text.\n\n## Setting\n\n"
                                      "The lane.\n")
    assert marie.run('→ write doc:"notes" replace:motivation "New text."').startswith(
        '✓ replaced §motivation in doc:"notes"')
    assert marie.ws.document("notes").content == (
        "# Notes\n\n## Motivation\n\nNew text.\n\n## Setting\n\nThe lane.\n")
    page = marie.run("→ help tree")
    assert "from your current position" in page and "from the root" not in page


def test_cross_tree_link_hint_names_the_tree_and_node(marie: Marie) -> None:
    """Seed 000's link target for another tree's node is ``tree:"name" node:[id]``."""
    other = marie.ws.create_tree("earlier draft", "dialogue")
    relabel(marie.ws.add_node(other, marie.ws.node(other.root), "x", marie.ws.human()), "x9y3")
    assert marie.run("→ link a7x2 to x9y3") == (
        '✗ CROSS_TREE: node [x9y3] is in tree "earlier draft"\n'
        '  hint: use → link a7x2 to tree:"earlier draft" node:x9y3 (requires cross-tree '
        "permission)")
    assert marie.run('→ link a7x2 to tree:"earlier draft" node:x9y3') == (
        '✓ linked [a7x2] ↔ [x9y3] in tree:"earlier draft"')


@pytest.mark.parametrize("line", ["→ do something nice", "→ remove x", "→ obliterate a7x2"])
def test_unknown_verbs_list_the_tools_instead_of_a_far_guess(marie: Marie, line: str) -> None:
    out = marie.run(line)
    assert out.startswith("✗ INVALID_SYNTAX: unknown command")
    assert "did you mean" not in out
    assert out.splitlines()[1] == (
        "  hint: the tools: Navigation: view, list, tree, switch · Content: respond, annotate, "
        "link, edit, continue, split · Documents: read, write · Memory: pin, stash, recall, drop, "
        "memory · Meta: help, think")


def test_a_close_but_ambiguous_typo_is_still_suggested(marie: Marie) -> None:
    assert marie.run("→ lint a7x2") == (
        '✗ INVALID_SYNTAX: ambiguous command "lint": list or link?\n'
        "  hint: did you mean → list a7x2 continuations or → link [localId] to [target]?")


def test_a_corrected_typo_is_said(marie: Marie) -> None:
    """``→ contineu n:3`` runs continue, says ``(read as → continue n:3)``; the trace keeps
    the canonical command; a correctly spelt command has no note."""
    from loom.memory import operational as mem

    marie.app.executor.subject = FakeSubject(["One.", "Two.", "Three."])
    out = marie.run("→ contineu n:3")
    assert out.startswith("✓ generating 3 continuations from ")
    assert out.splitlines()[-1] == "(read as → continue n:3)"
    assert mem.trace(marie.ws, marie.actor.participant)[-1].command == "→ continue n:3"
    assert "(read as" not in marie.run("→ view a7x2")
    assert marie.run("→ veiw a7x2 ful").endswith("(read as → view a7x2 full)")
    # a model's command arrives parsed, with the text it wrote: the same note
    from loom.commands.grammar import parse

    result = marie.app.executor.execute(parse("→ lsit a7x2"), marie.actor, typed="→ lsit a7x2")
    assert result.text.endswith("(read as → list a7x2 continuations)")


def test_pins_and_stashes_are_per_tree(marie: Marie) -> None:
    """A pin or stash made in one tree is not in the same participant's memory in another."""
    assert marie.run("→ pin a7x2") == "✓ pinned [a7x2] to working memory"
    assert marie.run('→ stash "plan" "first the gate"').startswith('✓ stashed "plan"')
    other = marie.ws.create_tree("Second story", "dialogue", root_content="Elsewhere.")
    there = Actor(marie.actor.participant, other)
    out = marie.run("→ memory", there)
    assert out.startswith("Working Memory:\n  pinned: none\n  stashed: none\n")
    assert marie.run('→ recall "plan"', there).startswith('✗ NOT_FOUND: stash "plan"')
    out = marie.run('→ stash "plan" "another plan"', there)
    assert out.startswith('✓ stashed "plan" (') and "replaced" not in out  # its own
    assert marie.run('→ recall "plan"', there) == '✓ recalled "plan":\n"another plan"'
    assert marie.run('→ recall "plan"') == '✓ recalled "plan":\n"first the gate"'
    assert marie.run("→ memory").startswith(
        'Working Memory:\n  pinned: [a7x2]\n  stashed: "plan"\n')
