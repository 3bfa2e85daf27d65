"""Damaged files: a clear error naming what is wrong, and nothing written to the database."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import detect_format, import_file
from loom.interchange.openloom import export_openloom
from loom.store.db import open_database
from loom.store.schema import (
    Change,
    Document,
    Edge,
    EdgeSource,
    Generation,
    Link,
    Node,
    Participant,
    Position,
    Tree,
)
from loom.store.workspace import Workspace

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
TABLES = (Tree, Node, Edge, EdgeSource, Link, Document, Participant, Generation, Position,
          Change)


def counts() -> dict[str, int]:
    return {m.__name__: m.select().count() for m in TABLES}


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Workspace, dict[str, Any]]:
    """A database with one tree in it, and that tree's export."""
    ws = Workspace(open_database(tmp_path / "loom.db"))
    human = ws.human()
    tree = ws.create_tree("Sea", "buffer", root_content="The sea")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, " was calm.", human)
    ws.add_node(tree, a, " Then a wave.", ws.subject())
    ws.add_node(tree, root, " roared.", human)
    ws.add_node(tree, a, "Nice.", human, kind="annotation")
    return ws, export_openloom(ws, tree)


def fails(ws: Workspace, path: Path, content: str | bytes, code: str = "INVALID_SYNTAX",
          ) -> LoomError:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    before = counts()
    with pytest.raises(LoomError) as err:
        import_file(ws, path)
    assert err.value.code == code, err.value.message
    assert counts() == before  # nothing written
    return err.value


def damaged(data: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> str:
    out = copy.deepcopy(data)
    change(out)
    return json.dumps(out)


def test_not_json(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    err = fails(ws, tmp_path / "x.json", "{nodes: [1, 2]}")
    assert "x.json is not valid JSON" in err.message and "line 1 column 2" in err.message


def test_truncated(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, data = setup
    text = json.dumps(data, indent=1)
    for cut in (len(text) // 2, len(text) - 2, 40):
        err = fails(ws, tmp_path / "sea.openloom", text[:cut])
        assert "truncated" in err.message, err.message


def test_truncated_socketteer_fixture(setup: tuple[Workspace, dict[str, Any]],
                                      tmp_path: Path) -> None:
    ws, _ = setup
    demo = FIXTURES / "socketteer-loom-demo.json"
    if not demo.exists():
        pytest.skip("fixture missing")
    err = fails(ws, tmp_path / "demo.json", demo.read_bytes()[:300_000])
    assert "truncated" in err.message


def test_empty_binary_and_missing(setup: tuple[Workspace, dict[str, Any]],
                                  tmp_path: Path) -> None:
    ws, _ = setup
    assert "empty" in fails(ws, tmp_path / "e.json", "  \n").message
    assert "not UTF-8" in fails(ws, tmp_path / "b.json", b"\xff\xfe\x00garbage").message
    before = counts()
    with pytest.raises(LoomError) as err:
        import_file(ws, tmp_path / "nowhere.json")
    assert err.value.code == "NOT_FOUND" and "nowhere.json" in err.value.message
    assert counts() == before


def test_wrong_shapes(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    assert "JSON array" in fails(ws, tmp_path / "l.json", "[1, 2]").message
    err = fails(ws, tmp_path / "u.json", '{"title": "x", "things": []}')
    assert "unrecognised" in err.message and "things, title" in err.message
    assert err.hint and "open-loom" in err.hint
    with pytest.raises(LoomError, match="not a format Loom reads"):
        detect_format({"format": "tinderbox"})


def test_wrong_version(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, data = setup
    err = fails(ws, tmp_path / "v.openloom",
                damaged(data, lambda d: d.update(version="3.0")))
    assert err.message.startswith("version:") and "'3.0'" in err.message
    assert "2.x" in (err.hint or "")
    err = fails(ws, tmp_path / "v1.openloom", damaged(data, lambda d: d.pop("version")))
    assert err.message.startswith("version:")


def test_a_dangling_edge_is_named(setup: tuple[Workspace, dict[str, Any]],
                                  tmp_path: Path) -> None:
    ws, data = setup

    def target(d: dict[str, Any]) -> None:
        d["trees"][0]["edges"][2]["target"] = "x"

    err = fails(ws, tmp_path / "t.openloom", damaged(data, target))
    assert err.message == ('trees[0].edges[2].target: edge 2 points at node "x" which is not '
                           "in nodes")

    def source(d: dict[str, Any]) -> None:
        d["trees"][0]["edges"][1]["sources"][0]["node"] = "ghost"

    err = fails(ws, tmp_path / "s.openloom", damaged(data, source))
    assert err.message == ('trees[0].edges[1].sources[0].node: edge 1 comes from node "ghost" '
                           "which is not in nodes")


def test_structural_damage(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, data = setup
    t = data["trees"][0]
    first_child = t["edges"][0]["target"]
    grandchild = next(e["target"] for e in t["edges"] if e["sources"][0]["node"] == first_child
                      and e["kind"] == "continuation")

    def cycle(d: dict[str, Any]) -> None:
        d["trees"][0]["edges"][0]["sources"][0]["node"] = grandchild

    err = fails(ws, tmp_path / "c.openloom", damaged(data, cycle))
    assert "cycle" in err.message and first_child in err.message

    def orphan(d: dict[str, Any]) -> None:
        d["trees"][0]["edges"].pop()

    err = fails(ws, tmp_path / "o.openloom", damaged(data, orphan))
    assert "no edge leads to this node" in err.message

    def twice(d: dict[str, Any]) -> None:
        d["trees"][0]["edges"].append(copy.deepcopy(d["trees"][0]["edges"][0]))

    err = fails(ws, tmp_path / "d.openloom", damaged(data, twice))
    assert "already has an incoming edge" in err.message


def test_bad_field_values_name_their_path(setup: tuple[Workspace, dict[str, Any]],
                                          tmp_path: Path) -> None:
    ws, data = setup
    nid = data["trees"][0]["root"]

    def role(d: dict[str, Any]) -> None:
        d["trees"][0]["nodes"][nid]["author"]["role"] = "robot"

    err = fails(ws, tmp_path / "r.openloom", damaged(data, role))
    assert err.message.startswith(f'trees[0].nodes["{nid}"].author.role:')

    def content(d: dict[str, Any]) -> None:
        del d["trees"][0]["nodes"][nid]["content"]

    err = fails(ws, tmp_path / "n.openloom", damaged(data, content))
    assert err.message.startswith(f'trees[0].nodes["{nid}"].content: Field required')

    def link(d: dict[str, Any]) -> None:
        d["trees"][0]["links"] = [{"source": nid, "target": {"kind": "doc"}}]

    err = fails(ws, tmp_path / "k.openloom", damaged(data, link))
    assert err.message.startswith("trees[0].links[0].target:") and '"doc"' in err.message


def test_a_bad_second_tree_writes_nothing(setup: tuple[Workspace, dict[str, Any]],
                                          tmp_path: Path) -> None:
    ws, data = setup

    def second(d: dict[str, Any]) -> None:
        bad = copy.deepcopy(d["trees"][0])
        bad["nodes"] = {k + "X": v for k, v in bad["nodes"].items()}
        bad["id"] = None
        bad["root"] = bad["root"] + "X"
        for e in bad["edges"]:
            e["target"] += "X"
            e["sources"] = [{"node": "nope", "role": "primary"}]
        bad["links"] = []
        d["trees"] = [copy.deepcopy(d["trees"][0]), bad]
        d["trees"][0]["id"] = None

    err = fails(ws, tmp_path / "two.openloom", damaged(data, second))
    assert err.message.startswith("trees[1].edges[0].sources[0].node")


def test_damaged_socketteer(setup: tuple[Workspace, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = setup
    data = {"root": {"id": "r", "text": "x", "children": [
        {"id": "a", "text": "y", "children": [{"id": "b", "text": "z", "children": []},
                                              "oops"]}]}}
    err = fails(ws, tmp_path / "s.json", json.dumps(data))
    assert err.message.startswith("root.children[0].children[1]: a node is a JSON object")
    data["root"]["children"][0]["children"][1] = {"id": "c", "text": 3}
    err = fails(ws, tmp_path / "s.json", json.dumps(data))
    assert err.message.startswith("root.children[0].children[1].text")
