"""Plain trees take the fast lane (``read.read_plain`` → ``plain.PlainTreePlan``): each file
here is imported both ways, with the same ids and clock, and every row written must be the
same to the value, and the export the same; anything outside the plain shape reads node by
node."""

from __future__ import annotations

import copy
import hashlib
import importlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import loom.interchange.openloom.planning as planning
from loom.interchange.openloom import export_openloom
from loom.interchange.openloom.read import PlainTreeIn, TreeIn, read_document
from loom.store.schema import Tree
from tests.unit.interchange_support import fresh, without_export_stamp

# (``import …openloom.load as load`` would give the package's ``load`` function)
load = importlib.import_module("loom.interchange.openloom.load")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_TABLES = ("tree", "node", "edge", "edge_source", "position", "change", "link")


def _ulid(n: int) -> str:
    """A ULID made from a counter: the same sequence on both imports."""
    tail = hashlib.blake2b(str(n).encode(), digest_size=16).digest()
    return "01JZ" + f"{n:06d}" + "".join(_CROCKFORD[b % 32] for b in tail)


def _deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count(1)
    one = lambda: _ulid(next(counter))  # noqa: E731
    monkeypatch.setattr(planning, "new_ulid", one)
    monkeypatch.setattr(planning, "new_ulids", lambda n: [one() for _ in range(n)])
    monkeypatch.setattr(load, "new_ulid", one)


def _import(tmp: Path, name: str, docs: list[dict[str, Any]], plain: bool,
            monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, list[Any]], list[Any], list[str]]:
    """Every row of every table after importing ``docs`` in turn, the exports of the trees
    made, and the kinds of tree each reading gave."""
    ws = fresh(tmp / f"{name}.db")
    ws.clock = lambda: 1_700_000_000.0
    _deterministic(monkeypatch)
    before = ws.last_change()  # (the participants' own)
    kinds: list[str] = []
    trees: list[Any] = []
    for doc in docs:
        read = read_document(copy.deepcopy(doc), plain=plain)
        kinds += [type(t).__name__ for t in read.trees]
        report = load.import_document(ws, read, person=ws.human())
        trees += [t.tree for t in report.trees]
    people = ws.sql("SELECT id, name FROM participant").fetchall()

    def named(text: str) -> str:  # (participants are made before the clock is set)
        for pid, person in people:
            text = text.replace(pid, f"<{person}>")
        return text

    rows = {table: sorted(named(repr(tuple(r))) for r in ws.sql(
        f'SELECT * FROM "{table}"' + (" WHERE seq > ?" if table == "change" else ""),
        (before,) if table == "change" else ()).fetchall()) for table in _TABLES}
    rows["participant"] = sorted(person for _, person in people)
    exports = [json.loads(named(json.dumps(without_export_stamp(export_openloom(
        ws, Tree.get_by_id(t.id)))))) for t in trees]
    ws.db.close()
    return rows, exports, kinds


def _both(tmp: Path, docs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    fast, fast_exports, kinds = _import(tmp, "plain", docs, True, monkeypatch)
    slow, slow_exports, general = _import(tmp, "general", docs, False, monkeypatch)
    assert set(general) == {"TreeIn"}
    for table in (*_TABLES, "participant"):
        assert fast[table] == slow[table], table
    assert fast_exports == slow_exports
    return kinds


def _shape(n: int = 240, *, ulids: bool = False, created: bool = True) -> dict[str, Any]:
    """A spine with fan-out and annotations, human and model nodes, as another loom writes
    it."""
    key = (lambda i: _ulid(900_000 + i)) if ulids else (lambda i: f"n{i}")
    nodes: dict[str, Any] = {key(0): {"id": key(0), "content": [{"type": "text",
                                                                   "text": "Once."}],
                                      "author": {"role": "human"}}}
    edges = []
    spine = key(0)
    for i in range(1, n):
        k = key(i)
        node: dict[str, Any] = {"id": k, "content": [{"type": "text", "text": (
            f"Line {i}. It goes on" if i % 3 else f"  {i} ✓ «twice»\n\nsecond paragraph")}],
            "author": {"role": "model" if i % 4 else "human"}}
        if created and i % 5:
            node["createdAt"] = f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z"
        if i % 7 == 3:
            del node["id"]  # (the key is the id)
        nodes[k] = node
        annotation = i % 11 == 5
        edges.append({"id": f"e{i}", "type": "annotation" if annotation else "continuation",
                      "sources": [{"nodeId": spine, "role": "primary"} if i % 2
                                  else {"nodeId": spine}], "targetNodeId": k})
        if i % 6 == 0 and not annotation:
            spine = k
    nodes[key(n - 1)]["content"][0]["text"] = ""
    return {"format": "open-loom", "version": "2.0", "trees": [{
        "id": "shape", "title": "Shape", "mode": "buffer", "rootNodeIds": [key(0)],
        "currentNodeId": key(n // 2), "nodes": nodes, "edges": edges}]}


def test_a_plain_tree_is_planned_in_one_pass_to_the_same_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _both(tmp_path, [_shape()], monkeypatch) == ["PlainTreeIn"]


def test_ulid_keys_are_kept_and_a_second_import_gets_fresh_ids_the_same_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _shape(60, ulids=True, created=False)
    assert _both(tmp_path, [doc, doc], monkeypatch) == ["PlainTreeIn", "PlainTreeIn"]


def test_tree_fields_and_a_larger_annotation_counter_are_kept_the_same_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _shape(50)
    tree = doc["trees"][0]
    tree.update(description="d", systemContext="s", createdAt="2025-05-05T05:05:05Z",
                extensions={"loom": {"annCounter": 40, "summary": "S"}, "other": {"x": 1}},
                agents={"a": {"name": "x"}})
    tree.pop("currentNodeId")
    doc["extensions"] = {"elsewhere": [1, 2]}
    doc["exportedAt"] = "2026-01-01T00:00:00Z"
    second = _shape(30)
    second["trees"][0]["currentNodeId"] = "n0"  # (the root)
    assert _both(tmp_path, [doc, second], monkeypatch) == ["PlainTreeIn", "PlainTreeIn"]


@pytest.mark.parametrize("change", [
    "extension", "meta", "two_blocks", "agent", "two_sources", "role", "two_parents",
    "cycle", "two_roots", "unlisted", "bad_time", "id_differs", "generation", "loom_wrote",
])
def test_anything_not_plain_is_read_node_by_node_and_imported_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    doc = _shape(40)
    tree = doc["trees"][0]
    nodes, edges = tree["nodes"], tree["edges"]
    if change == "extension":
        nodes["n3"]["extensions"] = {"loom": {"localId": "abc"}}
    elif change == "meta":
        nodes["n4"]["meta"] = {"bookmarked": True}
    elif change == "two_blocks":
        nodes["n5"]["content"].append({"type": "text", "text": "more"})
    elif change == "agent":
        nodes["n6"]["author"]["agentId"] = "a"
    elif change == "two_sources":
        edges[8]["sources"].append({"nodeId": "n2", "role": "context"})
    elif change == "role":
        edges[9]["sources"][0]["role"] = "context"
    elif change == "two_parents":
        edges.append({"type": "continuation", "sources": [{"nodeId": "n1"}],
                      "targetNodeId": "n9"})
    elif change == "cycle":
        edges[0]["sources"] = [{"nodeId": "n1"}]
        edges.append({"type": "continuation", "sources": [{"nodeId": "n1"}],
                      "targetNodeId": "n0"})
    elif change == "two_roots":
        nodes["x"] = {"content": [{"type": "text", "text": "x"}], "author": {"role": "human"}}
        tree["rootNodeIds"].append("x")
    elif change == "unlisted":
        tree.pop("rootNodeIds")
    elif change == "bad_time":
        nodes["n7"]["createdAt"] = "yesterday"
    elif change == "id_differs":
        nodes["n8"]["id"] = "n9"
    elif change == "generation":
        nodes["n10"]["generation"] = {"model": "m", "provider": "p"}
    elif change == "loom_wrote":
        doc["generator"] = {"name": "Loom", "version": "1"}
    assert _both(tmp_path, [doc], monkeypatch) == ["TreeIn"]


def test_a_deep_value_beside_a_plain_tree_is_still_refused() -> None:
    doc = _shape(10)
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    doc["trees"][0]["deep"] = deep
    with pytest.raises(Exception, match="nests values more than"):
        read_document(doc)
    assert isinstance(read_document(_shape(10)).trees[0], PlainTreeIn)
    assert isinstance(read_document(_shape(10), plain=False).trees[0], TreeIn)


def test_the_round_trip_of_a_plain_tree_gives_the_file_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _shape(80)
    _, exports, _ = _import(tmp_path, "trip", [doc], True, monkeypatch)
    tree = exports[0]["trees"][0]
    assert json.dumps(tree["nodes"], sort_keys=True) == json.dumps(
        doc["trees"][0]["nodes"], sort_keys=True)
    assert tree["edges"] == doc["trees"][0]["edges"]


def test_a_failure_after_a_plain_tree_went_in_leaves_nothing(tmp_path: Path) -> None:
    """A plain tree planned and a later tree that fails: nothing is written, and the search
    index's trigger is back."""
    from loom.errors import LoomError
    from loom.interchange.files import ImportLimits
    from loom.store.fulltext import matches
    from tests.unit.interchange_support import data_uri, png

    ws = fresh(tmp_path / "fail.db")
    doc = _shape(30)
    broken = _shape(5)["trees"][0]
    broken["nodes"]["n1"]["content"] = [{"type": "image", "mimeType": "image/png",
                                         "ref": data_uri("image/png", png(64, 64))}]
    doc["trees"].append(broken)
    read = read_document(doc)
    assert [type(t).__name__ for t in read.trees] == ["PlainTreeIn", "TreeIn"]
    before = {t: ws.sql(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in _TABLES}
    with pytest.raises(LoomError, match="over the limit"):
        load.import_document(ws, read, person=ws.human(),
                             limits=ImportLimits(max_media_bytes=64))
    assert {t: ws.sql(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in _TABLES} == before
    ws.create_tree("After", root_content="a walnut tree by the lane")
    assert [m[1] for m in matches(ws.db, "walnut", [], [], 5)] == ["After"]
