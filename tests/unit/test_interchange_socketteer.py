"""socketteer/loom import of the real demo file: every node, its text, authorship and place."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from loom.interchange import detect_format, import_file
from loom.interchange.openloom import export_openloom, import_openloom
from loom.interchange.socketteer import import_socketteer
from loom.store.db import open_database
from loom.store.schema import Node, Participant, Position, Tree
from loom.store.workspace import Workspace

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DEMO = FIXTURES / "socketteer-loom-demo.json"


def walk(root: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None, int]]:
    """(node, parent, depth) for every node of the file, root included, iteratively."""
    out, stack = [], [(root, None, 0)]
    while stack:
        node, parent, depth = stack.pop()
        out.append((node, parent, depth))
        stack.extend((child, node, depth + 1) for child in node.get("children", []))
    return out


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    return json.loads(DEMO.read_text(encoding="utf-8"))


@pytest.fixture
def imported(tmp_path: Path) -> tuple[Workspace, Tree, dict[str, Node]]:
    ws = Workspace(open_database(tmp_path / "loom.db"))
    trees = import_file(ws, DEMO)
    assert len(trees) == 1
    by_source = {n.extra["socketteer"]["id"]: n
                 for n in Node.select().where(Node.tree == trees[0].id)}
    return ws, trees[0], by_source


def test_the_fixture_is_what_the_tests_assume(demo: dict[str, Any]) -> None:
    nodes = walk(demo["root"])
    assert detect_format(demo) == "socketteer"
    assert len(nodes) == 764  # the root (empty text) included
    assert len({n["id"] for n, _, _ in nodes}) == 764
    assert max(depth for _, _, depth in nodes) == 21


def test_every_node_is_imported(demo: dict[str, Any],
                                imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    ws, tree, by_source = imported
    nodes = walk(demo["root"])
    assert (tree.mode, tree.title) == ("buffer", "socketteer-loom-demo")
    assert ws.node_count(tree) == len(nodes) == 764
    assert len(by_source) == 764
    assert max(n.depth for n in by_source.values()) == 21
    root = ws.node(tree.root)
    assert root.extra["socketteer"]["id"] == demo["root"]["id"]
    for node, parent, depth in nodes:
        got = by_source[node["id"]]
        assert got.content == node.get("text", ""), node["id"]
        assert got.depth == depth, node["id"]
        assert got.parent == (by_source[parent["id"]].id if parent else None), node["id"]


def test_children_keep_their_order(demo: dict[str, Any],
                                   imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    ws, _, by_source = imported
    for node, _, _ in walk(demo["root"]):
        kids = [c["id"] for c in node["children"]
                if "archived" not in c.get("tags", [])]  # pruned ones are hidden
        got = [n.extra["socketteer"]["id"] for n in ws.children(by_source[node["id"]])]
        assert got == kids, node["id"]


def test_authorship(demo: dict[str, Any],
                    imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    _, _, by_source = imported
    davinci = Participant.get(Participant.name == "davinci")  # generation_settings.model
    human = Participant.get(Participant.name == "human")
    assert davinci.kind == "model" and human.kind == "human"
    counts = {"AI": 0, "prompt": 0, "mixed": 0, None: 0}
    for node, _, _ in walk(demo["root"]):
        source = (node.get("meta") or {}).get("source")
        counts[source] += 1
        got = by_source[node["id"]]
        if source == "AI":
            assert (got.author_id, got.author_type) == (davinci.id, "model")
        else:
            assert (got.author_id, got.author_type) == (human.id, "human")
        assert (got.extra.get("authorship") == "mixed") == (source == "mixed")
    assert counts == {"AI": 374, "prompt": 42, "mixed": 24, None: 324}


def test_known_nodes(imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    ws, _, by_source = imported
    ai = by_source["c35d08d8-22e3-11ec-95a3-aa665a20e3d7"]
    assert ai.content == "\nLOOM_SUPPORT: Are you the creator of your multiverse?"
    assert ai.author_type == "model"
    assert ai.extra["socketteer"]["generation"] == {"id": "cmpl-3oHNaIuWznJXi0IpGGgeBK3GJZntl",
                                                    "index": 2}
    assert ai.extra["socketteer"]["visited"] is True  # unknown fields are kept
    assert ai.created == datetime(2021, 10, 1, 11, 16, 59, tzinfo=UTC).timestamp()
    mixed = by_source["13a2d4e0-1780-11ec-9e36-acde48001122"]
    assert mixed.content == "\nLOOM_SUPPORT: The name for these types of manipulations are"
    assert (mixed.author_type, mixed.extra["authorship"], mixed.extra["model"]) == (
        "human", "mixed", "davinci")
    assert len(ws.children(mixed)) == 58
    deepest = by_source["3074457352465632660"]
    assert deepest.depth == 21
    assert deepest.content.startswith('\n"You are a creative writer, are you not?"')


def test_tags_position_and_file_settings(demo: dict[str, Any],
                                         imported: tuple[Workspace, Tree, dict[str, Node]],
                                         ) -> None:
    ws, tree, by_source = imported
    nodes = [n for n, _, _ in walk(demo["root"])]
    bookmarked = {n["id"] for n in nodes if "bookmark" in n.get("tags", [])}
    archived = {n["id"] for n in nodes if "archived" in n.get("tags", [])}
    assert {k for k, n in by_source.items() if n.bookmarked} == bookmarked
    assert {k for k, n in by_source.items() if n.pruned} == archived
    assert (len(bookmarked), len(archived)) == (22, 106)
    human = Participant.get(Participant.name == "human")
    pos = Position.get((Position.participant == human.id) & (Position.tree == tree.id))
    assert pos.node == by_source[demo["selected_node_id"]].id
    kept = ws.node(tree.root).extra["socketteer_file"]
    assert len(kept["chapters"]) == 321
    assert kept["generation_settings"]["model"] == "davinci"


def test_path_text_is_the_files_text(demo: dict[str, Any],
                                     imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    ws, tree, by_source = imported
    nodes = {n["id"]: (n, p) for n, p, _ in walk(demo["root"])}
    deepest = "3074457352465632660"
    expected: list[str] = []
    at: dict[str, Any] | None = nodes[deepest][0]
    while at is not None:
        expected.append(at["text"])
        at = nodes[at["id"]][1]
    path = ws.path(by_source[deepest])
    assert path[0].id == tree.root and len(path) == 22
    assert "".join(n.content for n in path) == "".join(reversed(expected))


def test_a_mixed_model_name_from_model_responses(tmp_path: Path) -> None:
    data = {
        "root": {"id": "r", "text": "Once", "children": [
            {"id": "a", "text": " upon", "meta": {"source": "AI"},
             "generation": {"id": "g1", "index": 0}, "children": [], "tags": ["bookmark"]},
            {"id": "b", "text": " a time", "meta": {"source": "AI"}, "children": []},
            {"id": "c", "text": " there", "generation": {"model": "curie"}, "children": []},
        ]},
        "model_responses": {"g1": {"model": "gpt-j-6b", "prompt": "Once"}},
        "generation_settings": {"model": "davinci", "api_key": "sk-not-kept"},
        "selected_node_id": "b",
    }
    ws = Workspace(open_database(tmp_path / "loom.db"))
    tree = import_socketteer(ws, data, title="small")[0]
    root = ws.node(tree.root)
    kids = ws.children(root)
    names = {p.id: p.name for p in Participant.select()}
    assert [(k.content, names[k.author_id]) for k in kids] == [
        (" upon", "gpt-j-6b"), (" a time", "davinci"), (" there", "curie")]
    assert kids[0].bookmarked
    assert "api_key" not in json.dumps(root.extra)
    assert (tree.title, root.content) == ("small", "Once")


def test_the_import_travels_losslessly_as_open_loom(
        imported: tuple[Workspace, Tree, dict[str, Node]], tmp_path: Path) -> None:
    ws, tree, _ = imported
    data = json.loads(json.dumps(export_openloom(ws, tree)))
    ws.db.close()
    ws = Workspace(open_database(tmp_path / "copy.db"))
    ws.human()
    copy = import_openloom(ws, data)[0]
    assert ws.node_count(copy) == 764
    assert export_openloom(ws, copy) == data
