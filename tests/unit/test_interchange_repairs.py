"""Damaged Open Loom trees are repaired, never a crash, and each repair is said in words."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from loom.cli import main
from loom.interchange import ImportReport, import_data
from loom.interchange.openloom import export_openloom
from loom.store.schema import Node, Position, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import MINIMAL, fresh, without_export_stamp


def node(nid: str, text: str, role: str = "model") -> dict[str, Any]:
    return {"id": nid, "content": [{"type": "text", "text": text}], "author": {"role": role}}


def cont(source: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"type": "continuation", "sources": [{"nodeId": source}], "targetNodeId": target,
            **extra}


def doc(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **tree: Any
        ) -> dict[str, Any]:
    return {"format": "open-loom", "version": "2.0", "trees": [
        {"id": "t", "title": "T", "nodes": {n["id"]: n for n in nodes}, "edges": edges,
         **tree}]}


def by_key(tree: Tree) -> dict[str, Node]:
    return {(n.extra or {}).get("interchange", {}).get("id", n.id): n
            for n in Node.select().where(Node.tree == tree.id)}


def imported(ws: Workspace, data: dict[str, Any]) -> tuple[ImportReport, Tree, dict[str, Node]]:
    report = import_data(ws, copy.deepcopy(data))
    tree = report.trees[0].tree
    return report, tree, by_key(tree)


def test_roots_and_current_node_that_do_not_resolve(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = copy.deepcopy(MINIMAL)
    data["trees"][0].update(rootNodeIds=["ghost", "b"], currentNodeId="nowhere")
    report, tree, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].rootNodeIds lists "ghost", which is not a node: left out',
        'trees[0].rootNodeIds lists "b", which has a parent: not a root',
        'trees[0].nodes["a"] has no parent and is not in rootNodeIds: made a root',
        'trees[0].currentNodeId "nowhere" is not a node: left out']
    assert tree.root == nodes["a"].id
    assert Position.select().where(Position.tree == tree.id).count() == 0
    text = report.text()
    assert "repaired 4 problems:" in text and '"ghost", which is not a node' in text


def test_edges_pointing_nowhere(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = doc([node("a", "A", "human"), node("b", " B")],
               [cont("a", "x"), cont("ghost", "b"),
                {"type": "continuation", "sources": [{"nodeId": "a"}, {"nodeId": "nope"}],
                 "targetNodeId": "b"}], rootNodeIds=["a"])
    report, tree, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].edges[0] points at "x", which is not a node: left out',
        'trees[0].edges[1].sources[0] "ghost" is not a node: left out',
        "trees[0].edges[1] has no source that is a node: left out",
        'trees[0].edges[2].sources[1] "nope" is not a node: left out']
    assert nodes["b"].parent == nodes["a"].id and ws.node_count(tree) == 2


def test_two_continuation_parents_keep_the_first(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = doc([node("a", "A", "human"), node("b", " B"), node("c", " C")],
               [cont("a", "b"), cont("a", "c"), cont("b", "c", id="second")],
               rootNodeIds=["a"])
    report, tree, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].edges[2]: node "c" already has a continuation parent (edges[1]): the '
        "first is kept, this one is kept in the file only"]
    assert nodes["c"].parent == nodes["a"].id
    assert [n.id for n in ws.children(nodes["b"])] == []
    # The demoted edge travels on: the file comes back as it was.
    assert without_export_stamp(export_openloom(ws, tree)) == data


def test_cycles_are_broken(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = doc([node("a", "A", "human"), node("b", " B"), node("c", " C"), node("d", " D")],
               [cont("a", "b"), cont("d", "c"), cont("c", "d")], rootNodeIds=["a", "c"])
    report, tree, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].edges[1] closes a cycle ("d" → "c" → "d"): kept in the file only; "c" '
        "became a root"]
    # Two roots now: Loom holds them under an empty root of its own.
    root = ws.node(tree.root)
    assert root.content == "" and [n.id for n in ws.children(root)] == [nodes["a"].id,
                                                                        nodes["c"].id]
    assert [n.id for n in ws.path(nodes["d"])] == [root.id, nodes["c"].id, nodes["d"].id]
    assert report.trees[0].nodes == 4  # Loom's own root is not the file's
    out = export_openloom(ws, tree)["trees"][0]
    assert out["rootNodeIds"] == ["a", "c"] and len(out["nodes"]) == 4


def test_a_context_source_below_its_target_is_dropped(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = doc([node("a", "A", "human"), node("b", " B"), node("c", " C")],
               [cont("a", "b"), {"type": "continuation", "sources": [
                   {"nodeId": "b"}, {"nodeId": "c", "role": "context"}], "targetNodeId": "c"}],
               rootNodeIds=["a"])
    data["trees"][0]["edges"][1]["sources"][1]["nodeId"] = "c"
    report, _, _ = imported(ws, data)
    assert report.repairs == ['trees[0].edges[1].sources[1] "c" repeats a node of the edge: '
                              "left out"]


def test_edit_lineage_that_does_not_resolve_or_loops(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    b, c = node("b", " B"), node("c", " C")
    b["editedFrom"], c["editedFrom"] = "c", "b"
    ghost = node("d", " D")
    ghost["editedFrom"] = "zz"
    data = doc([node("a", "A", "human"), b, c, ghost],
               [cont("a", "b"), cont("a", "c"), cont("a", "d")], rootNodeIds=["a"])
    report, _, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].nodes["d"].editedFrom "zz" is not a node: left out',
        'trees[0].nodes["c"].editedFrom "b" makes the edit lineage loop: left out']
    assert nodes["b"].edited_from == nodes["c"].id and nodes["c"].edited_from is None


def test_values_of_the_wrong_type(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    data = doc([{"id": "a", "content": "plain text", "author": "someone"},
                {"id": "b", "content": [{"type": "text", "text": 3}, 7,
                                        {"type": "text", "text": " ok"}],
                 "author": {"role": "model"}, "createdAt": "yesterday"}],
               [cont("a", "b"), "not an edge"], rootNodeIds=["a"])
    report, tree, nodes = imported(ws, data)
    assert report.repairs == [
        'trees[0].nodes["a"].content is text, not blocks: read as one text block',
        'trees[0].nodes["a"].author is not an object: read as a human\'s',
        'trees[0].nodes["b"].content[0] is a text block without text: left out',
        'trees[0].nodes["b"].content[1] is not a content block: left out',
        "trees[0].nodes[\"b\"].createdAt 'yesterday' is not a time: left out",
        "trees[0].edges[1] is not an object: left out"]
    assert (nodes["a"].content, nodes["b"].content) == ("plain text", " ok")
    assert ws.node_count(tree) == 2


def test_cli_says_what_it_repaired(tmp_path: Path, monkeypatch: Any,
                                   capsys: Any) -> None:
    import json

    monkeypatch.setenv("LOOM_DB", str(tmp_path / "cli.db"))
    data = copy.deepcopy(MINIMAL)
    data["trees"][0]["currentNodeId"] = "nowhere"
    path = tmp_path / "hello.json"  # detected by content, not by extension
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith('✓ imported "Hello" (3 nodes)\n  from Open Loom 2.0; tree ')
    assert '  repaired 1 problem:\n    trees[0].currentNodeId "nowhere" is not a node' in out
