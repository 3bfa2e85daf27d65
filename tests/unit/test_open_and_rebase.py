"""Opening a path: the rendering is the truth, and kept edits of nodes someone else versioned
meanwhile are rebased onto their version or kept as the human's own (never lost)."""

from __future__ import annotations

from typing import Any

from loom.demo import create_demo
from loom.lsp.documents import OpenDocuments
from loom.uris import node_uri

ROOT = "The house stood empty at the end of the lane."


def _setup(app: Any) -> tuple[Any, Any, str]:
    ws = app.ws
    tree = create_demo(ws)
    human = ws.human()
    _node, tip = ws.position(human, tree)
    return tree, human, node_uri(tree, tip)


def _kept(app: Any, uri: str, mine: str) -> OpenDocuments:
    """A dead editor session kept ``mine`` as the root's pending text."""
    ws = app.ws
    tree, human, _ = _setup(app)
    root = ws.node(tree.root)
    _node, tip = ws.position(human, tree)
    ws.save_buffer_state(uri, human, "dead-session", tree=tree.id, tip=tip.id,
                         pending=[{"node": root.id, "content": mine}], working=" Typed.")
    return OpenDocuments(ws, human, "utf-16", ws.open_session(human))


def test_a_kept_edit_is_rebased_onto_a_version_made_while_no_editor_ran(app: Any) -> None:
    tree, human, uri = _setup(app)
    docs = _kept(app, uri, "The old house stood empty at the end of the lane.")
    theirs = app.ws.add_version(tree, app.ws.node(tree.root),
                                "The house stood empty at the end of the long lane.", human)
    doc = docs.did_open(uri, docs.text_for(uri)[0])
    merged = "The old house stood empty at the end of the long lane."
    assert doc.text.startswith(merged + " She hadn't") and doc.text.endswith(" Typed.")
    first = doc.session.segments[0]
    assert (first.node, first.original, first.dirty) == (theirs.id, theirs.content, True)
    assert [(n.theirs, n.merged) for n in doc.rebased] == [(theirs.label, True)]


def test_a_kept_edit_that_conflicts_stays_an_edit_of_its_own_node(app: Any) -> None:
    tree, human, uri = _setup(app)
    mine = ROOT.replace("empty", "silent")
    docs = _kept(app, uri, mine)
    root = app.ws.node(tree.root)
    theirs = app.ws.add_version(tree, root, ROOT.replace("empty", "deserted"), human)
    doc = docs.did_open(uri, docs.text_for(uri)[0])
    assert doc.text.startswith(mine + " She hadn't")
    first = doc.session.segments[0]
    assert (first.node, first.original, first.dirty) == (root.id, ROOT, True)
    assert [(n.mine, n.theirs, n.merged) for n in doc.rebased] == [
        (root.label, theirs.label, False)]


def test_an_empty_open_is_out_of_step_and_keeps_nothing(app: Any) -> None:
    _tree, human, uri = _setup(app)
    docs = OpenDocuments(app.ws, human, "utf-16", app.ws.open_session(human))
    rendered = docs.text_for(uri)[0]
    doc = docs.did_open(uri, "")
    assert doc.out_of_step and doc.discarded == ""
    docs.did_change(doc, 0, 0, "x")
    docs.persist(doc)
    assert app.ws.buffer_states(uri, human) == []  # nothing of it reaches the database
    # the rendering, sent to the editor, lands after the key: the key is working text
    docs.propose(doc, rendered, doc.view.segments)
    docs.did_change(doc, 0, 0, rendered)
    assert not doc.out_of_step and doc.session.working_text == "x"
    assert doc.session.pending() == []


def test_a_stale_open_is_out_of_step_and_its_text_reported(app: Any) -> None:
    _tree, human, uri = _setup(app)
    docs = OpenDocuments(app.ws, human, "utf-16", app.ws.open_session(human))
    stale = docs.text_for(uri)[0].replace("empty", "deserted")
    doc = docs.did_open(uri, stale)
    assert doc.out_of_step and doc.discarded == stale


def test_an_open_with_more_text_at_the_end_keeps_it_as_working_text(app: Any) -> None:
    _tree, human, uri = _setup(app)
    docs = OpenDocuments(app.ws, human, "utf-16", app.ws.open_session(human))
    rendered = docs.text_for(uri)[0]
    doc = docs.did_open(uri, rendered + " More.")
    assert not doc.out_of_step
    assert doc.session.working_text == " More." and doc.session.pending() == []
