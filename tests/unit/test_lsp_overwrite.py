"""Issue 47, item 1: a save that would wipe out the path asks first. ``ggdG`` then ``:w``
made an empty version of every node on the path without a word, and the undo that followed
committed the story again as one new node after them. Now such a commit writes nothing and
asks; the human keeps the nodes and saves the text as a branch, or replaces their text; and
a buffer restored by undo is the path again, with nothing to commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.lsp.buffer import BufferSession, Segment
from loom.lsp.overwrite import measure
from loom.uris import node_uri
from tests.unit.fake_host import Features, features

STORY = ("The house stood empty.", " Marie set down her bag.", " Dust lay on everything.",
         " She called out.")


@pytest.fixture
def f(tmp_path: Path) -> Features:
    return features(tmp_path / "loom.db")


def _session(*parts: str) -> BufferSession:
    segs, offset = [], 0
    for i, p in enumerate(parts):
        segs.append(Segment(f"n{i}", f"n{i}", False, offset, offset + len(p), p))
        offset += len(p)
    return BufferSession("".join(parts), segs)


def test_emptying_the_path_is_drastic_and_a_small_edit_is_not() -> None:
    s = _session(*STORY)
    s.apply(0, len(s.text), "")
    over = measure(s)
    assert over.drastic and over.emptied == 4 and over.removed == over.total
    assert over.describe() == "saving would empty 4 nodes of this path (all of its text)"
    assert not over.can_branch  # the root itself went
    s = _session(*STORY)
    at = s.text.index("empty")
    s.apply(at, at + 5, "quiet")
    assert not measure(s).drastic


def test_rewriting_most_of_the_path_after_its_first_node_can_branch() -> None:
    s = _session(*STORY)
    start = len(STORY[0])
    s.apply(start, len(s.text), " Nobody came.")
    over = measure(s)
    assert over.drastic and over.kept == 1 and over.can_branch
    assert over.describe().startswith("saving would empty 2 nodes and rewrite 1 other")


def _open(f: Features, *texts: str) -> tuple[str, list[str]]:
    ws = f.host.app.ws
    human = ws.human()
    tree = ws.create_tree("House", root_content=texts[0])
    _node, tip = ws.position(human, tree)
    ids = [tip.id]
    for text in texts[1:]:
        tip = ws.add_node(tree, tip, text, human)
        ids.append(tip.id)
    uri = node_uri(tree, tip)
    f.host.open(uri)
    return uri, ids


async def test_a_save_that_empties_the_path_asks_and_writes_nothing(f: Features) -> None:
    uri, ids = _open(f, *STORY)
    ws = f.host.app.ws
    tree = ws.trees()[0][0]
    before = ws.node_count(tree)
    f.host.type(uri, 0, len(f.host.client[uri]), "")  # ggdG
    answer = await f.editing.save_text(uri, "", run_commands=True)
    assert not answer["ok"]
    assert answer["message"].startswith(
        "✗ CONFLICT: saving would empty 4 nodes of this path (all of its text); nothing "
        "was committed\n  hint: undo brings the text back")
    confirm = answer["data"]["confirm"]
    assert [c["choice"] for c in confirm["choices"]] == ["replace"]  # no node left whole
    assert confirm["question"].startswith("Saving would empty 4 nodes")
    assert ws.node_count(tree) == before  # no versions were made
    assert [ws.node(i).content for i in ids] == list(STORY)
    # the undo: the whole story comes back in one change, and there is nothing to commit
    f.host.type(uri, 0, 0, "".join(STORY))
    doc = f.host.docs.open[uri]
    assert doc.session.pending() == [] and doc.session.working_text == ""
    again = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert again["ok"] and again["message"] == "✓ nothing to commit"
    assert ws.node_count(tree) == before


async def test_replace_makes_the_versions_when_the_human_says_so(f: Features) -> None:
    uri, ids = _open(f, *STORY)
    ws = f.host.app.ws
    f.host.type(uri, 0, len(f.host.client[uri]), "Gone.")
    answer = await f.editing.save_text(uri, "Gone.", run_commands=True, confirm="replace")
    assert answer["ok"], answer["message"]
    assert answer["message"].startswith("✓ committed 4 nodes")
    assert [ws.node(i).content for i in ids] == list(STORY)  # the originals stay


async def test_a_branch_keeps_the_nodes_and_puts_the_text_after_the_last_whole_one(
        f: Features) -> None:
    uri, ids = _open(f, *STORY)
    ws = f.host.app.ws
    start = len(STORY[0])
    f.host.type(uri, start, len(f.host.client[uri]), " Nobody came.")
    asked = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert not asked["ok"]
    assert [c["choice"] for c in asked["data"]["confirm"]["choices"]] == ["branch", "replace"]
    answer = await f.editing.save_text(uri, f.host.client[uri], run_commands=True,
                                       confirm="branch")
    assert answer["ok"], answer["message"]
    root = ws.node(ids[0])
    assert answer["message"].startswith(f"✓ saved as a new branch after [{root.label}]")
    kids = [c.content for c in ws.children(root)]
    assert kids == [STORY[1], " Nobody came."]  # a sibling beside the nodes kept whole
    assert [ws.node(i).content for i in ids] == list(STORY)
    assert f.host.client[uri] == STORY[0] + " Nobody came."
    doc = f.host.docs.open[uri]
    assert doc.session.pending() == [] and doc.session.working_text == ""
    assert doc.view.tip is not None and doc.view.tip.content == " Nobody came."
    _node, tip = ws.position(ws.human(), ws.trees()[0][0])
    assert tip.id == doc.view.tip.id
    again = await f.editing.save_text(uri, f.host.client[uri], run_commands=True)
    assert again["ok"] and again["message"] == "✓ nothing to commit"


async def test_a_move_with_the_path_wiped_out_is_refused_the_same_way(f: Features) -> None:
    uri, ids = _open(f, *STORY)
    f.host.type(uri, 0, len(f.host.client[uri]), "")
    doc = f.host.docs.open[uri]
    result = await f.editing.commit_and_show(doc)
    assert not result.ok and result.code == "CONFLICT" and "confirm" in result.data
    assert [f.host.app.ws.node(i).content for i in ids] == list(STORY)


async def test_after_replacing_the_text_the_originals_can_be_switched_back(
        f: Features) -> None:
    """The versions a replace made are not the end: each original is in the sibling picker
    beside its versions, ``→ switch to`` it (or picking it) puts it back on the path, the
    editor shows the story again, and the next continuation reads it."""
    from loom.lsp.features.navigation import Navigation
    from loom.lsp.views import tree_overview

    uri, ids = _open(f, *STORY)
    ws = f.host.app.ws
    nav = f.wired.get(Navigation)
    f.host.type(uri, 0, len(f.host.client[uri]), "")
    assert (await f.editing.save_text(uri, "", run_commands=True, confirm="replace"))["ok"]
    assert f.host.client[uri] == ""
    tree = ws.trees()[0][0]
    # the second node's slot lists the original and its (empty) version
    doc = f.host.docs.open[uri]
    second = doc.session.segments[1].node or ""
    picked = nav.siblings(uri, second)
    assert picked.ok, picked.text
    rows = [(s["label"], s["marks"], s["current"], s["text"]) for s in picked.data["siblings"]]
    original = ws.node(ids[1])
    assert rows[0][:2] == (original.label, "the original") and rows[0][3] == STORY[1]
    assert rows[1][1] == f"version of [{original.label}]" and rows[1][2] and rows[1][3] == ""
    # → switch to each original, as a writer types it: the story comes back node by node
    human = ws.human()
    for node_id in ids:
        label = ws.node(node_id).label
        result = f.host.execute_now(f"→ switch to {label}", f.host.actor(doc))
        assert result.text.startswith(f"✓ switched to [{label}]"), result.text
    position, tip = ws.position(human, tree)
    drawn = tree_overview(ws, tree, position, tip, human).text
    assert f"[{original.label}] Marie set down her bag.  (other versions: [{original.label}'])" \
        in drawn
    assert "".join(n.content for n in ws.path(tip, prefer=(tip.id, *ws.path_choices(
        human, tree)))) == "".join(STORY)
    # the editor follows (a picker's pick of the version goes back the other way)
    back = await nav.switch_to(uri, ws.node(ids[1]).id)
    assert back.ok, back.text
    assert STORY[1] in f.host.client[uri]
    version = ws.version_members([ids[1]])[ids[1]][0]
    again = await nav.switch_to(uri, version.id)
    assert again.ok and STORY[1] not in f.host.client[uri]


def test_text_typed_right_after_the_first_node_still_branches_from_it() -> None:
    """In the editor, text typed at a node's end belongs to that node: cutting everything
    after the first sentence and typing anew extends the root, which stays whole."""
    s = _session(*STORY)
    start = len(STORY[0])
    s.apply(start, len(s.text), "")
    s.apply(start, start, " Nobody came.")
    over = measure(s)
    assert over.drastic and over.kept == 1 and over.can_branch
