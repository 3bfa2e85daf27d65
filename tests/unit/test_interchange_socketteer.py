"""socketteer/loom import of the real demo file: every node, its text, authorship and place."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from loom.interchange import detect_format, import_data, import_file
from loom.interchange.openloom import export_openloom, import_openloom
from loom.store.db import open_database
from loom.store.schema import Generation, Node, Participant, Position, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import DEMO, without_export_stamp


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
    report = import_file(ws, DEMO)
    assert len(report.trees) == 1 and report.format == "socketteer/loom"
    assert report.repairs == []
    tree = report.trees[0].tree
    by_source = {n.extra["interchange"]["id"]: n
                 for n in Node.select().where(Node.tree == tree.id)}
    return ws, tree, by_source


def test_the_fixture_is_what_the_tests_assume(demo: dict[str, Any]) -> None:
    nodes = walk(demo["root"])
    assert detect_format(demo) == "socketteer/loom"
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
    assert root.extra["interchange"]["id"] == demo["root"]["id"]
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
        got = [n.extra["interchange"]["id"] for n in ws.children(by_source[node["id"]])]
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
        assert (got.extra["interchange"].get("role") == "mixed") == (source == "mixed")
    assert counts == {"AI": 374, "prompt": 42, "mixed": 24, None: 324}


def test_known_nodes(imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    ws, tree, by_source = imported
    ai = by_source["c35d08d8-22e3-11ec-95a3-aa665a20e3d7"]
    assert ai.content == "\nLOOM_SUPPORT: Are you the creator of your multiverse?"
    assert ai.author_type == "model"
    # its id's time (UTC); its creation_timestamp 2021-10-01-11.16.59 is Pacific time
    assert ai.created == datetime(2021, 10, 1, 18, 16, 57, 221756, tzinfo=UTC).timestamp()
    gen = Generation.get(Generation.node == ai.id)
    assert (gen.model, gen.completion_index) == ("", 2)  # the file records no model for it
    out = export_openloom(ws, tree)["trees"][0]["nodes"]["c35d08d8-22e3-11ec-95a3-aa665a20e3d7"]
    assert out["generation"] == {"requestId": "cmpl-3oHNaIuWznJXi0IpGGgeBK3GJZntl",
                                 "completionIndex": 2}
    assert out["author"] == {"role": "model", "name": "davinci"}
    assert out["createdAt"] == "2021-10-01T18:16:57.221756Z"
    kept = out["extensions"]["socketteer-loom"]
    assert kept["visited"] is True and kept["meta"] == {"modified": False}
    assert kept["creation_timestamp"] == "2021-10-01-11.16.59"
    mixed = by_source["13a2d4e0-1780-11ec-9e36-acde48001122"]
    assert mixed.content == "\nLOOM_SUPPORT: The name for these types of manipulations are"
    assert (mixed.author_type, mixed.extra["interchange"]["role"]) == ("human", "mixed")
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
    out = export_openloom(ws, tree)["trees"][0]
    assert out["currentNodeId"] == demo["selected_node_id"]
    kept = out["extensions"]["socketteer-loom"]
    assert len(kept["chapters"]) == 321 and kept["generation_settings"]["model"] == "davinci"
    assert {t["name"] for t in out["tags"]} >= {"bookmark", "archived", "choice"}
    choice = next(n for n in nodes if "choice" in n.get("tags", []))
    assert out["nodes"][choice["id"]]["meta"]["tags"] == choice["tags"]


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


def test_times_are_the_ids_utc_time(demo: dict[str, Any],
                                   imported: tuple[Workspace, Tree, dict[str, Node]]) -> None:
    """A UUIDv1 id holds true UTC; creation_timestamp is the author's wall time without a
    zone (7 hours behind in this file, 4 for five nodes). One time base for the whole tree:
    the id's, for every node that has one, timestamp or not."""
    _, _, by_source = imported
    uuid_nodes = stamped = 0
    for node, _, _ in walk(demo["root"]):
        try:
            u = uuid.UUID(node["id"])
        except ValueError:
            continue
        uuid_nodes += 1
        got = by_source[node["id"]]
        assert got.created == pytest.approx((u.time - 0x01B21DD213814000) / 1e7, abs=1e-6)
        stamp = (node.get("meta") or {}).get("creation_timestamp")
        kept = got.extra["interchange"]["file"]["extensions"]["socketteer-loom"]
        assert kept.get("creation_timestamp") == stamp, node["id"]
        assert "createdAtIsLocalTime" not in kept
        stamped += stamp is not None
    assert (uuid_nodes, stamped) == (658, 405)


def test_a_local_time_without_a_uuid_is_said_to_be_one(tmp_path: Path) -> None:
    data = {"root": {"id": "r", "text": "Once", "children": [
        {"id": "42", "text": " upon", "children": [],
         "meta": {"creation_timestamp": "2021-10-01-11.16.59"}},
        {"id": "af49303c-165f-11ec-b847-acde48001122", "text": " a time", "children": [],
         "meta": {"creation_timestamp": "2021-09-15-10.00.00"}}]}}
    ws = Workspace(open_database(tmp_path / "loom.db"))
    report = import_data(ws, data, name="times")
    tree = report.trees[0].tree
    local, by_id = ws.children(ws.node(tree.root))
    assert local.created == datetime(2021, 10, 1, 11, 16, 59, tzinfo=UTC).timestamp()
    # the id's own time (2021-09-15 20:01:16.015622 UTC), not the wall time beside it
    assert by_id.created == datetime(2021, 9, 15, 20, 1, 16, 15622, tzinfo=UTC).timestamp()
    assert report.notes == ["1 node(s) have only a local time without a zone "
                            "(creation_timestamp): written as if UTC, marked "
                            "createdAtIsLocalTime"]
    out = export_openloom(ws, tree)["trees"][0]["nodes"]["42"]
    assert out["createdAt"] == "2021-10-01T11:16:59Z"
    assert out["extensions"]["socketteer-loom"] == {
        "creation_timestamp": "2021-10-01-11.16.59", "createdAtIsLocalTime": True}


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
    tree = import_data(ws, data, name="small").trees[0].tree
    root = ws.node(tree.root)
    kids = ws.children(root)
    names = {p.id: p.name for p in Participant.select()}
    assert [(k.content, names[k.author_id]) for k in kids] == [
        (" upon", "gpt-j-6b"), (" a time", "davinci"), (" there", "curie")]
    assert kids[0].bookmarked
    out = export_openloom(ws, tree)
    assert "sk-not-kept" not in json.dumps(out) and "api_key" not in json.dumps(out)
    assert out["trees"][0]["nodes"]["a"]["generation"] == {
        "model": "gpt-j-6b", "requestId": "g1", "completionIndex": 0}
    assert "generation" not in out["trees"][0]["nodes"]["b"]  # no provenance invented
    assert (tree.title, root.content) == ("small", "Once")


def test_a_2021_save_credits_each_node_to_its_own_generations_model(tmp_path: Path) -> None:
    """socketteer's prime_intellect.json (2021): each generated node names its model in
    meta.generation; the settings name another (curie), which wrote none of them."""
    data = {
        "root": {"id": "r", "text": "Chapter Two", "children": [
            {"id": "a", "text": " Lawrence", "children": [], "meta": {
                "source": "AI", "generation": {
                    "text": " Lawrence", "index": 3, "finish_reason": "length",
                    "model": "davinci:2020-05-03", "prompt": "Chapter Two"}}},
            {"id": "b", "text": " waited", "children": [],
             "meta": {"generation": {"index": 0, "model": "davinci:2020-05-03"}}},
            {"id": "c", "text": " regarded", "children": [], "meta": {"source": "AI"}}]},
        "generation_settings": {"model": "curie", "num_continuations": 6},
        "model_responses": {},
    }
    ws = Workspace(open_database(tmp_path / "loom.db"))
    report = import_data(ws, data, name="prime")
    tree = report.trees[0].tree
    names = {p.id: p.name for p in Participant.select()}
    kids = ws.children(ws.node(tree.root))
    assert [(k.author_type, names[k.author_id]) for k in kids] == [
        ("model", "davinci:2020-05-03"), ("model", "davinci:2020-05-03"), ("model", "curie")]
    out = export_openloom(ws, tree)["trees"][0]["nodes"]
    assert out["a"]["generation"] == {"model": "davinci:2020-05-03", "completionIndex": 3}
    assert out["a"]["extensions"]["socketteer-loom"]["meta"]["generation"] == \
        data["root"]["children"][0]["meta"]["generation"]  # kept whole
    assert "modelGuessedFrom" not in out["a"]["extensions"]["socketteer-loom"]
    # c names no model: credited to the setting, and said to be a guess
    assert out["c"]["extensions"]["socketteer-loom"]["modelGuessedFrom"] == \
        "generation_settings.model"
    assert "generation" not in out["c"]
    assert report.notes == [
        '1 model node(s) name no model of their own: credited to "curie", the model the '
        "file was set to when saved (generation_settings.model), a guess: marked "
        "modelGuessedFrom"]


def test_the_demos_model_names_are_said_to_be_guesses(
        demo: dict[str, Any], tmp_path: Path) -> None:
    """The 2023 demo's model_responses is empty: no node says which model wrote it."""
    assert demo["model_responses"] == {}
    ws = Workspace(open_database(tmp_path / "loom.db"))
    report = import_file(ws, DEMO)
    assert '374 model node(s) name no model of their own: credited to "davinci"' in \
        report.text()
    out = export_openloom(ws, report.trees[0].tree)["trees"][0]["nodes"]
    models = [n for n in out.values() if n["author"]["role"] == "model"]
    assert len(models) == 374 and all(
        n["extensions"]["socketteer-loom"]["modelGuessedFrom"] == "generation_settings.model"
        and "model" not in n.get("generation", {}) for n in models)


def hoisted(selected: str) -> dict[str, Any]:
    """A story as socketteer saves it after "hoist" at b: the root is a mask standing for
    the chain r → a → b (with the branch a2 off it), holding b's children."""
    chain = {"id": "r", "text": "Once", "children": [
        {"id": "a", "text": " upon", "parent_id": "r", "children": [
            {"id": "b", "text": " a time", "parent_id": "a", "children": []},
            {"id": "a2", "text": " a hill", "parent_id": "a", "children": [],
             "tags": ["bookmark"]}]}]}
    return {"root": {
        "id": "m", "text": "Once upon a time", "mutable": False, "hoisted": True,
        "open": True, "masked_head": chain, "tail_id": "b",
        "text_attributes": {"nav_preview": "Once... a time"}, "children": [
            {"id": "c", "text": " there", "parent_id": "m", "children": []},
            {"id": "d", "text": " here", "parent_id": "m", "children": []}]},
        "selected_node_id": selected}


@pytest.mark.parametrize(("selected", "at"), [("a2", "a2"), ("b", "b"), ("m", "b"),
                                              ("c", "c")])
def test_a_hoisted_tree_is_the_tree_and_keeps_the_position(
        tmp_path: Path, selected: str, at: str) -> None:
    """A selected node inside the hoist (masked_head) was dropped without a word: no
    position for the human, no currentNodeId in the export."""
    ws = Workspace(open_database(tmp_path / "loom.db"))
    report = import_data(ws, hoisted(selected), name="hoisted")
    tree = report.trees[0].tree
    by_source = {n.extra["interchange"]["id"]: n
                 for n in Node.select().where(Node.tree == tree.id)}
    assert set(by_source) == {"r", "a", "b", "a2", "c", "d"}  # the mask is not a node
    root = ws.node(tree.root)
    assert root.id == by_source["r"].id
    assert [n.content for n in ws.children(by_source["a"])] == [" a time", " a hill"]
    assert [n.content for n in ws.children(by_source["b"])] == [" there", " here"]
    assert "".join(n.content for n in ws.path(by_source["c"])) == "Once upon a time there"
    assert by_source["a2"].bookmarked
    human = Participant.get(Participant.name == "human")
    pos = Position.get((Position.participant == human.id) & (Position.tree == tree.id))
    assert pos.node == by_source[at].id
    out = export_openloom(ws, tree)["trees"][0]
    assert out["currentNodeId"] == at and out["rootNodeIds"] == ["r"]
    assert out["nodes"]["r"]["extensions"]["socketteer-loom"]["maskedBy"] == {
        "id": "m", "text": "Once upon a time", "mutable": False, "hoisted": True,
        "open": True, "tail_id": "b", "text_attributes": {"nav_preview": "Once... a time"}}
    assert report.notes == ["1 hoisted or zipped node(s) read as the nodes they stand for "
                            "(socketteer's unhoist/unzip; each kept as maskedBy on its "
                            "first node)"]


def test_nested_masks_and_a_selection_that_is_not_a_node(tmp_path: Path) -> None:
    """Hoisting twice nests one mask in another; a zipped chain's tail can be a mask."""
    data = hoisted("nowhere")
    inner = data["root"]
    outer = {"id": "m2", "text": "…", "hoisted": True, "masked_head": inner,
             "tail_id": "c", "children": [{"id": "e", "text": " too", "children": []}]}
    zipped = {"id": "z", "text": " here and", "masked_head": inner["children"][1],
              "tail_id": "d", "children": []}
    zipped["masked_head"]["children"] = [{"id": "f", "text": " and", "children": []}]
    inner["children"][1] = zipped
    ws = Workspace(open_database(tmp_path / "loom.db"))
    report = import_data(ws, {"root": outer, "selected_node_id": "nowhere"}, name="nest")
    tree = report.trees[0].tree
    by_source = {n.extra["interchange"]["id"]: n
                 for n in Node.select().where(Node.tree == tree.id)}
    assert set(by_source) == {"r", "a", "b", "a2", "c", "d", "e", "f"}
    assert "".join(n.content for n in ws.path(by_source["e"])) == "Once upon a time there too"
    assert "".join(n.content for n in ws.path(by_source["f"])) == "Once upon a time here and"
    assert report.notes[0].startswith("3 hoisted or zipped node(s)")
    assert report.notes[1] == ('the selected node "nowhere" is not a node of the file: left '
                               "out (the importer gets no position)")


def test_bare_nodes_and_node_arrays(tmp_path: Path) -> None:
    ws = Workspace(open_database(tmp_path / "loom.db"))
    bare = {"id": "r", "text": "Alone", "children": [{"text": " and free"}]}
    assert detect_format(bare) == "socketteer/loom"
    tree = import_data(ws, bare, name="bare").trees[0].tree
    assert [n.content for n in ws.path(ws.descend(ws.node(tree.root)))] == ["Alone",
                                                                            " and free"]
    report = import_data(ws, [{"text": "One", "children": []}, {"text": "Two"}], name="two")
    assert report.notes == ["2 socketteer/loom node(s) had a missing or repeated id: given a "
                            "new one (the original is kept)"]
    root = ws.node(report.trees[0].tree.root)  # two roots under Loom's own
    assert [n.content for n in ws.children(root)] == ["One", "Two"]


def test_the_import_travels_losslessly_as_open_loom(
        imported: tuple[Workspace, Tree, dict[str, Node]], tmp_path: Path) -> None:
    ws, tree, _ = imported
    data = json.loads(json.dumps(export_openloom(ws, tree)))
    ws.db.close()
    ws = Workspace(open_database(tmp_path / "copy.db"))
    ws.human()
    copy = import_openloom(ws, data).trees[0].tree
    assert ws.node_count(copy) == 764
    assert without_export_stamp(export_openloom(ws, copy)) == without_export_stamp(data)
