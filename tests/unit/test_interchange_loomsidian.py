"""loomsidian import: one note's nodes map, and the plugin's data.json with a state per note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import detect_format, import_data, import_file
from loom.interchange.openloom import export_openloom
from loom.store.db import open_database
from loom.store.schema import Node, Participant, Position, Tree
from loom.store.workspace import Workspace


def node(text: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"text": text, "parentId": parent, "unread": False, "collapsed": False,
            "bookmarked": False, "lastVisited": 1_700_000_000_000, **fields}


SINGLE = {
    "current": "c",
    "hoisted": [],
    "nodes": {
        "r": node("The lighthouse keeper", None),
        "a": node(" climbed the stairs.", "r"),
        "b": node(" slept.", "r", bookmarked=True, color="red"),
        "c": node(" At the top, a light.", "a", searchResultState=None, mood="odd"),
    },
}

DATA_JSON = {
    "settings": {
        "openaiApiKey": "sk-secret-value-0123456789",
        "modelPresets": [{"name": "base", "provider": "openai", "model": "davinci-002",
                          "apiKey": "sk-secret-value-0123456789", "contextLength": 4000}],
        "modelPreset": 0,
    },
    "state": {
        "stories/Lighthouse.md": SINGLE,
        "Two roots.md": {
            "current": "y", "hoisted": ["x"], "searchTerm": "", "generating": None,
            "nodes": {
                "x": node("First draft.", None),
                "y": node("Second draft.", None),
                "y1": node(" Goes on.", "y"),
            },
        },
        "Empty.md": {"current": None, "hoisted": [], "nodes": {}},
    },
}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(open_database(tmp_path / "loom.db"))


def test_single_note(ws: Workspace) -> None:
    assert detect_format(SINGLE) == "loomsidian"
    report = import_data(ws, json.loads(json.dumps(SINGLE)), name="keeper")
    tree = report.trees[0].tree
    assert (tree.title, tree.mode, ws.node_count(tree)) == ("keeper", "buffer", 4)
    assert report.summary(report.trees[0]) == 'imported "keeper" (4 nodes, 1 bookmark)'
    root = ws.node(tree.root)
    assert root.content == "The lighthouse keeper" and root.author_type == "human"
    a, b = ws.children(root)
    assert (a.content, b.content) == (" climbed the stairs.", " slept.")
    c = ws.children(a)[0]
    assert "".join(n.content for n in ws.path(c)) == (
        "The lighthouse keeper climbed the stairs. At the top, a light.")
    assert b.bookmarked and not a.bookmarked
    # No authorship in the plugin: non-root nodes are "mixed", the importer's in Loom.
    assert (c.author_type, c.extra["interchange"]["role"]) == ("human", "mixed")
    human = Participant.get(Participant.name == "human")
    pos = Position.get((Position.participant == human.id) & (Position.tree == tree.id))
    assert pos.node == c.id
    out = export_openloom(ws, tree)["trees"][0]
    assert out["currentNodeId"] == "c" and out["nodes"]["c"]["author"] == {"role": "mixed"}
    assert out["nodes"]["c"]["extensions"]["loomsidian"] == {
        "unread": False, "collapsed": False, "lastVisited": 1_700_000_000_000,
        "searchResultState": None, "mood": "odd"}
    assert out["nodes"]["b"]["extensions"]["loomsidian"]["color"] == "red"
    assert out["extensions"]["loomsidian"] == {"hoisted": []}


def test_plugin_data_json(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(DATA_JSON), encoding="utf-8")
    report = import_file(ws, path)
    trees = report.tree_list
    assert [t.title for t in trees] == ["Lighthouse", "Two roots"]  # the empty note is skipped
    lighthouse, two = trees
    assert ws.node_count(lighthouse) == 4
    # Several roots: an empty Loom root holds them, in the file's order; export leaves it out.
    root2 = ws.node(two.root)
    assert root2.content == "" and ws.node_count(two) == 4
    x, y = ws.children(root2)
    assert (x.content, y.content) == ("First draft.", "Second draft.")
    assert (x.author_type, y.author_type) == ("human", "human")
    assert ws.children(y)[0].content == " Goes on."
    out = export_openloom(ws, two)["trees"][0]
    assert out["rootNodeIds"] == ["x", "y"] and len(out["nodes"]) == 3
    assert out["extensions"]["loomsidian"]["hoisted"] == ["x"]
    # The plugin's settings hold API keys: none of it is stored.
    stored = json.dumps([n.extra for n in Node.select()]) + json.dumps(
        [t.extra for t in Tree.select()])
    assert "sk-secret" not in stored and "openaiApiKey" not in stored
    assert report.notes == ["the plugin's settings were not imported (they hold API keys)"]


def test_a_notes_path_is_kept_for_the_export(ws: Workspace) -> None:
    """The title is the note's name; the key in data.json (the note's path in the vault)
    travels in the tree's extension, so the export can say which note the tree is."""
    data = {"state": {"notes/story.md": SINGLE,
                      "Two roots.md": DATA_JSON["state"]["Two roots.md"]}}
    report = import_data(ws, json.loads(json.dumps(data)))
    story, two = report.tree_list
    assert (story.title, two.title) == ("story", "Two roots")
    out = export_openloom(ws, [story, two])
    assert [t["extensions"]["loomsidian"]["notePath"] for t in out["trees"]] == [
        "notes/story.md", "Two roots.md"]
    assert out["trees"][0]["extensions"]["loomsidian"] == {"hoisted": [],
                                                           "notePath": "notes/story.md"}


def test_a_missing_parent_names_the_node(ws: Workspace) -> None:
    data = {"nodes": {"r": node("x", None), "k": node("y", "ghost")}}
    with pytest.raises(LoomError) as err:
        import_data(ws, data)
    assert err.value.code == "INVALID_SYNTAX"
    assert 'nodes["k"].parentId' in err.value.message and '"ghost"' in err.value.message
    assert Tree.select().count() == 0


def test_a_cycle_is_repaired(ws: Workspace) -> None:
    data = {"state": {"a.md": {"current": "r", "nodes": {
        "r": node("root", None), "p": node("p", "q"), "q": node("q", "p"),
        "under": node("u", "p")}}}}
    report = import_data(ws, data)
    assert len(report.repairs) == 1 and "closes a cycle" in report.repairs[0]
    assert ws.node_count(report.trees[0].tree) == 5  # four, and Loom's root for two roots


def test_a_bad_note_stops_the_whole_file(ws: Workspace) -> None:
    data = {"state": {"good.md": SINGLE,
                      "bad.md": {"nodes": {"r": node("x", None), "z": "not a node"}}}}
    with pytest.raises(LoomError) as err:
        import_data(ws, data)
    assert 'state["bad.md"].nodes["z"]' in err.value.message
    assert Tree.select().count() == 0
