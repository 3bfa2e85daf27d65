"""The reader's tools through the executor: bookmark, tag, rate, prune and
unprune, delete and undelete (soft), rename a tree, search every tree (FTS5); permissions,
branch locks and traces as for every command."""

from __future__ import annotations

from typing import Any

import pytest

from loom.commands.grammar import parse
from loom.demo import create_demo
from loom.errors import LoomError
from loom.model import marks
from loom.store import reader
from loom.store.schema import Node, TraceEntry
from loom.store.workspace import NewNode
from tests.conftest import Clock


@pytest.fixture
def demo(app):  # type: ignore[no-untyped-def]
    tree = create_demo(app.ws)
    return app, tree


def run(app: Any, tree: Any, line: str, who: Any = None) -> Any:
    return app.executor.execute(line, app.actor(tree, who))


def node_like(tree: Any, text: str) -> Node:
    return Node.get((Node.tree == tree.id) & (Node.content.contains(text)))


def test_bookmark_tag_and_rate_a_node(demo) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    walnut = node_like(tree, "walnut trees")
    r = run(app, tree, f'→ bookmark {walnut.local_id} "tone shift"')
    assert r.ok and r.text == f'✓ bookmarked [{walnut.label}] "tone shift"'
    r = run(app, tree, f'→ tag {walnut.local_id} "Dream" "late night" #draft')
    assert r.text == f"✓ tagged [{walnut.label}]: #dream #late-night #draft"
    r = run(app, tree, f"→ rate {walnut.local_id} good")
    assert r.text == f"✓ rated [{walnut.label}] +1"
    stored = Node.get_by_id(walnut.id)
    assert stored.bookmarked and marks.bookmark_label(stored.extra) == "tone shift"
    assert marks.tags_of(stored.extra) == ["dream", "late-night", "draft"]
    assert marks.rating_of(stored.extra) == 1
    assert [n.id for n in reader.bookmarks(app.ws, tree)] == [walnut.id]
    assert [n.id for n in reader.tagged(app.ws, tree, "#Dream")] == [walnut.id]
    r = run(app, tree, f'→ untag {walnut.local_id} "late night"')
    assert r.text == f"✓ [{walnut.label}] tags: #dream #draft"
    assert run(app, tree, f"→ unbookmark {walnut.local_id}").ok
    assert not Node.get_by_id(walnut.id).bookmarked
    # each one left its trace entry, in canonical form
    commands = [e.command for e in TraceEntry.select().order_by(TraceEntry.id)]
    assert f'→ bookmark {walnut.local_id} "tone shift"' in commands
    assert f"→ rate {walnut.local_id} +1" in commands


def test_prune_hides_a_subtree_and_unprune_brings_it_back(demo) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    ws = app.ws
    gate = node_like(tree, "She stopped at the gate")
    parent = ws.node(gate.parent)
    before = [c.id for c in ws.children(parent)]
    # as the human, who stands below it (on PostgreSQL the app's own participant is the
    # database user, who has not walked the demo)
    r = run(app, tree, f"→ prune {gate.local_id}", ws.human())
    assert r.ok and r.text.startswith(f"✓ pruned [{gate.label}] with ")
    assert gate.id not in [c.id for c in ws.children(parent)]
    assert "gate" not in " ".join(h.snippet for h in reader.search(ws, "gate"))
    # the human stood below it: moved up to its parent, and said so
    node, _tip = ws.position(ws.human(), tree)
    assert node.id == parent.id and f"switched to [{parent.label}]" in r.text
    assert run(app, tree, f"→ unprune {gate.local_id}").ok
    assert [c.id for c in ws.children(parent)] == before


def test_delete_is_soft_and_undelete_restores(demo, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    ws = app.ws
    walnut = node_like(tree, "walnut trees")
    count = len(reader.subtree_ids(ws, walnut))
    r = run(app, tree, f"→ delete {walnut.local_id}")
    assert r.ok and f"(→ undelete {walnut.local_id} within 30 days)" in r.text
    assert [n.id for n in reader.deleted(ws, tree)] == [walnut.id]
    assert not reader.search(ws, "walnut")
    # unprune is not how a deleted node comes back
    r = run(app, tree, f"→ unprune {walnut.local_id}")
    assert not r.ok and r.code == "CONFLICT" and "undelete" in r.text
    assert run(app, tree, f"→ undelete {walnut.local_id}").ok
    assert reader.search(ws, "walnut")
    # deleted again and left past the undo window: purged for good
    run(app, tree, f"→ delete {walnut.local_id}")
    clock.advance(marks.UNDO_WINDOW_S + 1)
    purged = ws.purge_expired()
    assert (purged.nodes, purged.subtrees, purged.trees) == (count, 1, 0)
    assert Node.get_or_none(Node.id == walnut.id) is None


def test_rename_and_delete_a_tree(demo) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    r = run(app, tree, '→ rename "The House"')
    assert r.text == '✓ renamed tree "The House at the End of the Lane" to "The House"'
    assert app.ws.find_tree("The House").id == tree.id
    r = run(app, tree, '→ delete tree:"The House"')
    assert r.ok and '→ undelete tree:"The House"' in r.text
    assert all(t.id != tree.id for t, _ in app.ws.trees())
    assert not reader.search(app.ws, "walnut")  # a deleted tree is not searched
    assert run(app, tree, '→ undelete tree:"The House"').ok
    assert any(t.id == tree.id for t, _ in app.ws.trees())


def test_writes_need_loom_write_and_search_needs_loom_aware(demo) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    reader_only = app.ws.ensure_participant("reader", "model", "collaborator", ["loom_aware"],
                                            loom_aware=True)
    root = app.ws.node(tree.root)
    for line in (f"→ bookmark {root.local_id}", f'→ tag {root.local_id} "x"',
                 f"→ rate {root.local_id} +1", '→ rename "X"'):
        r = run(app, tree, line, reader_only)
        assert not r.ok and r.code == "PERMISSION_DENIED", line
    assert not Node.get_by_id(root.id).bookmarked
    assert run(app, tree, '→ search "house"', reader_only).ok


def test_pruning_a_branch_someone_generates_on_conflicts(demo) -> None:  # type: ignore[no-untyped-def]
    app, tree = demo
    ws = app.ws
    gate = node_like(tree, "She stopped at the gate")
    bot = ws.ensure_participant("bot", "model", "collaborator",
                                ["loom_aware", "loom_write", "loom_generate"], True)
    ws.acquire_turn(gate, bot)
    r = run(app, tree, f"→ prune {gate.local_id}")
    assert not r.ok and r.code == "CONFLICT"
    assert not Node.get_by_id(gate.id).pruned


def test_search_every_tree_words_prefixes_and_phrases(app) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    one = ws.create_tree("Orchard", root_content="Walnut trees line the lane.")
    two = ws.create_tree("Kitchen", root_content="The kitchen smelled of walnuts and ash.")
    ws.bulk_add(two, ws.node(two.root), [NewNode("a", None, "A key under the shutter.",
                                                 "human")])
    hits = reader.search(ws, "walnut")
    assert {h.tree_title for h in hits} == {"Orchard", "Kitchen"}  # "walnut" as a start
    assert "«" in hits[0].snippet
    assert [h.tree_title for h in reader.search(ws, '"key under"')] == ["Kitchen"]
    assert not reader.search(ws, '"under key"')
    assert [h.tree_title for h in reader.search(ws, "walnut", one)] == ["Orchard"]
    r = app.executor.execute('→ search "key shutter"', app.actor(one))
    assert r.ok and 'Kitchen"' in r.text and r.data["hits"][0]["treeTitle"] == "Kitchen"
    r = app.executor.execute("→ search", app.actor(one))
    assert not r.ok and r.code == "INVALID_SYNTAX"


@pytest.mark.parametrize("line", [
    '→ bookmark a7x2 "tone shift"', "→ unbookmark a7x2", '→ tag a7x2 "dream" "draft"',
    "→ untag a7x2", "→ rate a7x2 -1", "→ prune b3k9", "→ unprune b3k9", "→ delete b3k9",
    '→ delete tree:"Old"', "→ undelete b3k9", '→ rename "New"', '→ rename tree:"A" "B"',
    '→ search "walnut trees"', '→ search "key" in tree:"The House"',
])
def test_reader_commands_read_back_as_written(line: str) -> None:
    from loom.commands.canonical import to_text

    cmd = parse(line)
    assert to_text(cmd) == line  # type: ignore[arg-type]
    assert parse(to_text(cmd)) == cmd  # type: ignore[arg-type]


def test_a_tree_is_found_by_the_start_of_its_title(demo) -> None:  # type: ignore[no-untyped-def]
    """``find_tree``'s unique start of a title, on both backends (on PostgreSQL the lookup
    failed: "the query has 1 placeholders but 3 parameters were passed")."""
    app, tree = demo
    assert app.ws.find_tree("the house at").id == tree.id
    with pytest.raises(LoomError, match="does not exist"):
        app.ws.find_tree("no such tree")
