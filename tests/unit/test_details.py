"""The last deviations an audit found from the seeds and from "bad input writes
nothing". Each test failed before its fix; seed items quote the seed they follow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.commands.context import Actor
from loom.errors import LoomError
from loom.memory import counting as token_counts


@pytest.fixture
def world(app) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Details", "dialogue", root_content="Let's study Marie.")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, "Marie's reluctance stems from her childhood.", human)
    ws.set_position(human, tree, a, a)
    actor = Actor(human, tree)

    def run(line: str) -> str:
        return app.executor.execute(line, actor).text

    return {"ws": ws, "tree": tree, "root": root, "a": a, "run": run, "app": app}


def test_token_counts_say_when_they_are_estimates(world) -> None:  # type: ignore[no-untyped-def]
    """Item 3: → memory said "(estimated)" without a tokenizer; a stash, → memory stashed
    and a thought did not."""
    before = token_counts._loader
    token_counts.use_tokenizer(None)
    try:
        run = world["run"]
        assert run('→ stash "plan" "Marie keeps the letters."') == \
            '✓ stashed "plan" (6 tokens, estimated)'
        assert run("→ memory stashed").startswith('Stashed:\n  "plan" (6 tokens, estimated · ')
        assert run("→ memory").endswith("available (estimated)")
    finally:
        token_counts.use_tokenizer(before)


def test_one_word_is_one_word(world) -> None:  # type: ignore[no-untyped-def]
    """Item 4: "(1 words)" after → write and in → read … summary."""
    run = world["run"]
    assert run('→ write doc:"title" append "Lighthouse"') == \
        '✓ created doc:"title" (1 word)'
    assert run('→ read doc:"title" summary').startswith('doc:"title" (1 word · updated ')


def test_the_current_node_is_marked_wherever_the_tree_draws_it(world) -> None:  # type: ignore[no-untyped-def]
    """Item 5, seed 000: `Root [r001] → ... → [a7x2]* (you are here)`; the note was left
    out at a non-root leaf and in → tree from:X depth:2."""
    ws, tree, a, run = world["ws"], world["tree"], world["a"], world["run"]
    b = ws.add_node(tree, a, "Her father left.", ws.subject())
    ws.add_node(tree, a, "She confronts Thomas.", ws.subject())
    ws.set_position(ws.human(), tree, b, b)
    assert f"[{b.label}]* (you are here) (leaf)" in run("→ tree")
    assert f"[{b.label}]* (you are here) (leaf)" in run(f"→ tree from:{a.local_id} depth:2")


def test_nothing_continues_from_an_annotation(world) -> None:  # type: ignore[no-untyped-def]
    """Item 6: → respond ann-1 "x" succeeded and put the position under a note (switch and
    continue from an annotation are refused)."""
    run, a = world["run"], world["a"]
    assert run(f'→ annotate {a.local_id} "a turning point"').startswith("✓ annotation [ann-1]")
    out = run('→ respond ann-1 "x"')
    assert out.startswith("✗ INVALID_SYNTAX: [ann-1] is an annotation, not a node\n"
                          "  hint: nothing continues from a note"), out
    assert f"→ respond {a.label}" in out


def test_empty_names_and_contents_are_refused(world) -> None:  # type: ignore[no-untyped-def]
    """Item 7: → write doc:"" made a document named doc:""; → edit X "" an empty version,
    where respond and annotate refuse empty content."""
    ws, run, a = world["ws"], world["run"], world["a"]
    assert run('→ write doc:"" append "x"').startswith(
        "✗ INVALID_SYNTAX: a document needs a name")
    assert ws.documents() == []
    assert run(f'→ edit {a.local_id} ""').startswith("✗ INVALID_SYNTAX: an edit needs some "
                                                       "content")
    assert run(f'→ respond {a.local_id} ""').startswith("✗ INVALID_SYNTAX")


def test_dropping_a_documents_pin_keeps_its_sections(world) -> None:  # type: ignore[no-untyped-def]
    """Item 8: → drop pin:doc:"character notes" dropped its §motivation pin too."""
    ws, run = world["ws"], world["run"]
    ws.create_document("character notes", "# Marie\n\n## Motivation\nShe is afraid.")
    assert run('→ pin doc:"character notes"').startswith("✓ pinned")
    assert run('→ pin doc:"character notes" section:motivation').startswith("✓ pinned")
    assert run('→ drop pin:doc:"character notes"') == \
        '✓ dropped pin doc:"character notes"'
    assert 'pinned: doc:"character notes" §motivation' in run("→ memory")


def test_model_off_and_short_ids_say_what_is_wrong(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Item 9: with LOOM_SUBJECT=none the hint said to install the local model (installed);
    → view 1v said "unknown option"."""
    run = world["run"]
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    world["app"].executor.subject = None
    out = run("→ continue")
    assert out == ("✗ MODEL_ERROR: the subject model is turned off (LOOM_SUBJECT=none)\n"
                   "  hint: unset LOOM_SUBJECT to use the configured or local model")
    assert run("→ view 1v").startswith(
        '✗ INVALID_SYNTAX: "1v" is too short for an id: an id needs at least 3 characters')


def test_bad_input_on_the_command_line_writes_nothing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Item 10: --participant ghost made a participant though every command was refused;
    --db in a folder that does not exist made the folders and an empty workspace, exit 0."""
    missing = tmp_path / "no" / "such" / "x.db"
    assert main(["--db", str(missing), "trees"]) == 1
    assert not missing.parent.exists()
    assert "✗ NOT_FOUND: there is no folder" in capsys.readouterr().err
    db = tmp_path / "w.db"
    assert main(["--db", str(db), "new", "T", "--text", "Once."]) == 0
    assert main(["--db", str(db), "--participant", "ghost", "do", "T", "→ view root"]) == 1
    assert '✗ NOT_FOUND: participant "ghost" does not exist' in capsys.readouterr().err
    import sqlite3

    with sqlite3.connect(db) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM participant")}
    assert "ghost" not in names


def test_one_answer_to_which_version_is_on_the_path(app) -> None:  # type: ignore[no-untyped-def]
    """Item 2, SPEC-NOTES 5: a version "takes the original's place on the path". After two
    participants' edits, → tree showed [A']* → [B] while view branch:B as:prose read the
    second version, and → switch to A put the original back on the path."""
    from loom.agent.participant import ensure_agent

    ws = app.ws
    human, other = ws.human(), ensure_agent(ws)
    tree = ws.create_tree("Versions", "buffer", root_content="Once.")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, " A one.", human)
    b = ws.add_node(tree, a, " B.", ws.subject())
    ws.set_position(human, tree, a, a)
    ws.set_position(other, tree, b, b)
    mine, theirs = Actor(human, tree), Actor(other, tree)
    run = app.executor.execute
    assert run(f'→ edit {a.local_id} " A mine."', mine).ok
    assert run(f'→ edit {a.local_id} " A theirs."', theirs).ok
    # the human's path has their version: the drawing, the branch and the prose agree
    assert f"[{a.label}']*" in run("→ tree from:root", mine).text
    prose = run(f"→ view branch:{b.local_id} as:prose", mine).text
    assert "A mine." in prose and "A theirs." not in prose
    # naming the version on your path keeps it there; naming the original while its
    # version is on your path is the way back to the original (issue 47, item 1: a save of
    # empty versions could not be undone), and the version's own id brings it back again
    assert run(f"→ switch to {a.label}'", mine).text.startswith(f"✓ switched to [{a.label}']")
    assert run(f"→ switch to {a.local_id}", mine).text.startswith(f"✓ switched to [{a.label}]")
    prose = run(f"→ view branch:{b.local_id} as:prose", mine).text
    assert "A one." in prose and "A mine." not in prose
    assert run(f"→ switch to {a.label}'", mine).text.startswith(f"✓ switched to [{a.label}']")
    node, tip = ws.position(human, tree)
    assert "".join(n.content for n in ws.path(tip, prefer=(node.id, tip.id))) == \
        "Once. A mine."
    # the other participant stood below the original: their path shows their version
    prose = run(f"→ view branch:{b.local_id} as:prose", theirs).text
    assert "A theirs." in prose


def test_a_dialogue_trees_edited_root_is_another_opening(app) -> None:  # type: ignore[no-untyped-def]
    """Item 1, seed 001: in dialogue mode an edit "Creates branch — conversation continues
    from edit point"; the original's replies stay where they were. Editing the root drew
    only the new root, as a leaf, under a header counting 3 nodes; → tree summary said 2
    leaves, loom tree marked the original root, loom trees counted a version."""
    from loom.lsp.views import tree_overview

    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("D", "dialogue", root_content="Hello.")
    actor = Actor(human, tree)

    def run(line: str) -> str:
        return app.executor.execute(line, actor).text

    run('→ respond root "Hi there."')
    run('→ respond root "Hey."')
    assert run('→ edit root "Hello, again."').startswith("✓ created branch")
    root = ws.node(tree.root)
    drawn = run("→ tree from:root").splitlines()
    assert drawn[0] == 'Tree: "D" (4 nodes, 1 branch)'
    assert drawn[1] == f"[{root.label}]"  # the original, with its replies
    assert drawn[2].endswith("(leaf)") and drawn[3].endswith("(leaf)")
    assert drawn[4] == f"[{root.label}']* (you are here) (leaf)"  # the other opening
    assert "4 nodes · 1 branch · 3 leaves" in run("→ tree summary")
    node, tip = ws.position(human, tree)
    overview = tree_overview(ws, tree, node, tip).text
    assert f"○ [{root.label}] Hello." in overview  # not on the path, not the position
    assert f"● [{root.label}']* Hello, again." in overview
    assert ws.tree_counts(tree).nodes == 4


def test_a_huge_texts_start_is_read_without_splitting_all_of_it() -> None:
    """Item 15: a 64 MB node's summary and word count split it into a list of every word
    (about 19x the file in memory); the same answers come from its start, and the count
    without the list."""
    from loom.render.text import extractive_summary, preview, word_count

    text = "The house stood empty. " + "The windows watched her come. " * 40_000
    assert len(text) > 1_000_000
    assert word_count(text) == 4 + 5 * 40_000
    assert extractive_summary(text) == "The house stood empty."
    assert preview(text) == "The house stood empty. The windows watched her come. The..."


def test_a_session_never_makes_a_collaborator_stronger_than_itself(app) -> None:  # type: ignore[no-untyped-def]
    """Item 12: opening a path as a doc_read-only participant made a collaborator holding
    all six permissions (the triggers make one for every open tree)."""
    from types import SimpleNamespace

    from loom.errors import LoomError
    from loom.lsp.features.collaborator import Collaborator

    ws = app.ws
    tree = ws.create_tree("Mine", "buffer", root_content="Once.")
    reader = ws.ensure_participant("reader", "human", "human", ["doc_read"])
    host = SimpleNamespace(app=app, docs=SimpleNamespace(participant=reader),
                           settings=SimpleNamespace(collaborator_autonomous=False,
                                                    collaborator_settle_s=30))
    with pytest.raises(LoomError) as err:
        Collaborator(host, None, None).agent(tree)  # type: ignore[arg-type]
    assert err.value.code == "PERMISSION_DENIED"
    assert "the collaborator would hold loom_aware, loom_write" in err.value.message
    assert ws.find_participant("collaborator") is None


def test_reading_another_tree_needs_cross_tree(app, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Item 11: every read of a tree's text checks loom_aware, "and cross_tree across
    trees", as switching into another tree does."""
    from loom.errors import LoomError
    from loom.lsp.views import render

    ws = app.ws
    here = ws.create_tree("Here", "buffer", root_content="Our story.")
    there = ws.create_tree("There", "buffer", root_content="Their secret.")
    walker = ws.ensure_participant("walker", "human", "human", ["loom_aware", "loom_write"])
    ws.set_position(walker, here, ws.node(here.root))
    assert "Our story." in render(ws, f"loom://path/{here.id}/root", walker).text
    with pytest.raises(LoomError) as err:
        render(ws, f"loom://path/{there.id}/root", walker)
    assert err.value.code == "PERMISSION_DENIED" and "cross_tree" in err.value.message
    with pytest.raises(LoomError):
        render(ws, f"loom://tree/{there.id}", walker)
    ws.set_permissions(walker, ["loom_aware", "loom_write", "cross_tree"])
    walker = ws.participant("walker")
    assert "Their secret." in render(ws, f"loom://path/{there.id}/root", walker).text


def test_the_original_switched_back_stays_until_an_edit_brings_a_version(app) -> None:  # type: ignore[no-untyped-def]
    """Issue 47, item 1 (README, "Deleting and rewriting"): the choice "stays until you
    choose again or edit the node anew" — a continuation below keeps the original on the
    path and in its prompt; a new edit of it takes its place again."""
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Back", "buffer", root_content="Once.")
    a = ws.add_node(tree, ws.node(tree.root), " A one.", human)
    ws.set_position(human, tree, a, a)
    me = Actor(human, tree)
    run = app.executor.execute
    assert run(f'→ edit {a.local_id} " A two."', me).ok
    assert run(f"→ switch to {a.local_id}", me).ok
    assert run(f'→ respond {a.local_id} " B."', me).ok  # a new node below the original
    node, tip = ws.position(human, tree)
    prefer = (node.id, tip.id, *ws.path_choices(human, tree))
    assert "".join(n.content for n in ws.path(tip, prefer=prefer)) == "Once. A one. B."
    assert "A one." in run(f"→ view branch:{tip.local_id} as:prose", me).text
    assert run(f'→ edit {a.local_id} " A three."', me).ok  # edited anew: that version shows
    node, tip = ws.position(human, tree)
    prefer = (node.id, tip.id, *ws.path_choices(human, tree))
    assert "".join(n.content for n in ws.path(tip, prefer=prefer)) == "Once. A three. B."


def test_a_tree_is_found_by_the_start_of_its_title(app) -> None:  # type: ignore[no-untyped-def]
    """On PostgreSQL, finding a tree by the start of its title failed ("the query has 1
    placeholders but 3 parameters"); `%` and `_` in it are letters, not patterns."""
    ws = app.ws
    shared = ws.create_tree("Shared (ours)", "buffer", root_content="Once.")
    ws.create_tree("100% rain_fall", "buffer", root_content="Drops.")
    assert ws.find_tree("shared").id == shared.id
    assert ws.find_tree("100% rain_").title == "100% rain_fall"
    with pytest.raises(LoomError):
        ws.find_tree("100_")
