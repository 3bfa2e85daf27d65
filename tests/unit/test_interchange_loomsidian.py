"""loomsidian import: one note's nodes map, and the plugin's data.json with a state per note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import detect_format, import_file
from loom.interchange.loomsidian import import_loomsidian
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
    tree = import_loomsidian(ws, json.loads(json.dumps(SINGLE)), title="keeper")[0]
    assert (tree.title, tree.mode, ws.node_count(tree)) == ("keeper", "buffer", 4)
    root = ws.node(tree.root)
    assert root.content == "The lighthouse keeper" and root.author_type == "human"
    a, b = ws.children(root)
    assert (a.content, b.content) == (" climbed the stairs.", " slept.")
    c = ws.children(a)[0]
    assert "".join(n.content for n in ws.path(c)) == (
        "The lighthouse keeper climbed the stairs. At the top, a light.")
    assert b.bookmarked and not a.bookmarked
    assert (c.author_type, c.extra["authorship"]) == ("model", "inferred")
    assert Participant.get_by_id(c.author_id).name == "model"  # no settings: no model name
    assert c.extra["loomsidian"]["id"] == "c" and c.extra["loomsidian"]["mood"] == "odd"
    assert b.extra["loomsidian"]["color"] == "red"
    assert root.extra["loomsidian_note"] == {"current": "c", "hoisted": []}
    human = Participant.get(Participant.name == "human")
    pos = Position.get((Position.participant == human.id) & (Position.tree == tree.id))
    assert pos.node == c.id


def test_plugin_data_json(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(DATA_JSON), encoding="utf-8")
    trees = import_file(ws, path)
    assert [t.title for t in trees] == ["Lighthouse", "Two roots"]  # the empty note is skipped
    lighthouse, two = trees
    assert ws.node_count(lighthouse) == 4
    model = Participant.get(Participant.name == "davinci-002")
    assert model.kind == "model"
    root = ws.node(lighthouse.root)
    assert all(k.author_id == model.id for k in ws.children(root))
    # Several roots: an empty Loom root holds them, in the file's order.
    root2 = ws.node(two.root)
    assert root2.content == "" and ws.node_count(two) == 4
    x, y = ws.children(root2)
    assert (x.content, y.content) == ("First draft.", "Second draft.")
    assert (x.author_type, y.author_type) == ("human", "human")
    assert ws.children(y)[0].content == " Goes on."
    assert root2.extra["loomsidian_note"]["hoisted"] == ["x"]
    # The plugin's settings hold API keys: none of it is stored.
    stored = json.dumps([n.extra for n in Node.select()])
    assert "sk-secret" not in stored and "openaiApiKey" not in stored


def test_a_missing_parent_names_the_node(ws: Workspace) -> None:
    data = {"nodes": {"r": node("x", None), "k": node("y", "ghost")}}
    with pytest.raises(LoomError) as err:
        import_loomsidian(ws, data)
    assert err.value.code == "INVALID_SYNTAX"
    assert 'nodes["k"].parentId' in err.value.message and '"ghost"' in err.value.message
    assert Tree.select().count() == 0


def test_a_cycle_names_its_nodes(ws: Workspace) -> None:
    data = {"state": {"a.md": {"current": "r", "nodes": {
        "r": node("root", None), "p": node("p", "q"), "q": node("q", "p"),
        "under": node("u", "p")}}}}
    with pytest.raises(LoomError) as err:
        import_loomsidian(ws, data)
    assert err.value.code == "INVALID_SYNTAX"
    assert "cycle" in err.value.message
    assert "'p'" in err.value.message and "'q'" in err.value.message
    assert err.value.message.startswith('state["a.md"].nodes[')
    assert Tree.select().count() == 0 and Node.select().count() == 0


def test_a_bad_note_stops_the_whole_file(ws: Workspace) -> None:
    data = {"state": {"good.md": SINGLE,
                      "bad.md": {"nodes": {"r": node("x", None), "z": "not a node"}}}}
    with pytest.raises(LoomError) as err:
        import_loomsidian(ws, data)
    assert 'state["bad.md"].nodes["z"]' in err.value.message
    assert Tree.select().count() == 0
