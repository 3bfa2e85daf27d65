"""MiniLoom, exoloom and Open Loom v1, from files shaped like each loom's real saves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import diff_match_patch as dmp_module
import pytest

from loom.interchange import detect_format, import_data, import_file
from loom.interchange.openloom import export_openloom
from loom.interchange.times import SWIFT_EPOCH
from loom.store.schema import Node, Participant, Position, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import fresh, without_export_stamp


def keyed(tree: Tree) -> dict[str, Node]:
    return {(n.extra or {}).get("interchange", {}).get("id", n.id): n
            for n in Node.select().where(Node.tree == tree.id)}


def reexports(ws: Workspace, tree: Tree, tmp_path: Path) -> None:
    """The imported tree travels on as Open Loom without loss."""
    data = json.loads(json.dumps(export_openloom(ws, tree)))
    ws.db.close()
    other = fresh(tmp_path / "other.db")
    again = import_data(other, json.loads(json.dumps(data))).trees[0].tree
    assert without_export_stamp(export_openloom(other, again)) == without_export_stamp(data)


# ── MiniLoom ──────────────────────────────────────────────────────────────────
def miniloom_save() -> dict[str, Any]:
    """A save as minihf's loom writes it: the tree's nodeStore, patches as the JSON of
    diff-match-patch patch objects against the parent's rendered text, and the focus."""
    dmp = dmp_module.diff_match_patch()

    def patch(before: str, after: str) -> list[dict[str, Any]]:
        return [{"diffs": [[op, text] for op, text in p.diffs], "start1": p.start1,
                 "start2": p.start2, "length1": p.length1, "length2": p.length2}
                for p in dmp.patch_make(before, after)]

    texts = {"1": "", "2": "The ship left port.", "3": "The ship left port. Gulls followed.",
             "4": "The ship left port. A storm came.", "5": "The boat left port. Gulls cried."}
    parents = {"1": None, "2": "1", "3": "2", "4": "2", "5": "3"}
    kinds = {"1": "root", "2": "user", "3": "gen", "4": "gen", "5": "user"}
    store = {}
    for nid, text in texts.items():
        parent = parents[nid]
        store[nid] = {
            "id": nid, "timestamp": 1_700_000_000_000 + int(nid) * 1000, "type": kinds[nid],
            "patch": "" if parent is None else patch(texts[parent], text),
            "summary": {"1": "Root Node", "2": "Ship Leaves Port", "3": "Gulls Follow Ship",
                        "4": "Storm Arrives", "5": "Boat Gulls Cry"}[nid],
            "rating": {"3": True, "4": False}.get(nid), "parent": parent,
            "children": [k for k, p in parents.items() if p == nid],
        }
    store["3"]["evaluationPrompt"] = "Is this vivid?"
    return {"loomTree": {"root": store["1"], "nodeStore": store}, "focus": store["4"]}


def test_miniloom(tmp_path: Path) -> None:
    save = miniloom_save()
    assert detect_format(save) == "MiniLoom"
    path = tmp_path / "voyage.json"
    path.write_text(json.dumps(save), encoding="utf-8")
    ws = fresh(tmp_path / "loom.db")
    report = import_file(ws, path)
    tree = report.trees[0].tree
    assert (tree.title, tree.mode, report.trees[0].nodes) == ("voyage", "buffer", 5)
    n = keyed(tree)
    # The patch chain materialised: each node holds what it adds to its parent...
    assert [x.content for x in ws.path(n["3"])] == ["", "The ship left port.",
                                                    " Gulls followed."]
    assert n["4"].content == " A storm came."
    # ... except a node that rewrote its parent's text, which holds the whole of it.
    assert n["5"].content == "The boat left port. Gulls cried."
    assert report.notes == ["1 MiniLoom node(s) rewrite their parent's text: each holds its "
                            "whole text"]
    assert (n["2"].author_type, n["3"].author_type) == ("human", "model")
    assert [c.id for c in ws.children(n["2"])] == [n["3"].id, n["4"].id]
    human = Participant.get(Participant.name == "human")
    assert Position.get((Position.participant == human.id) & (Position.tree == tree.id)
                        ).node == n["4"].id
    out = export_openloom(ws, tree)["trees"][0]["nodes"]
    assert out["3"]["meta"] == {"rating": 1, "note": "Gulls Follow Ship"}
    assert out["4"]["meta"]["rating"] == -1
    assert out["3"]["extensions"]["miniloom"]["patch"] == save["loomTree"]["nodeStore"]["3"][
        "patch"]
    assert out["3"]["extensions"]["miniloom"]["evaluationPrompt"] == "Is this vivid?"
    assert out["5"]["extensions"]["miniloom"]["rewrite"] is True
    assert out["2"]["createdAt"] == "2023-11-14T22:13:22Z"
    reexports(ws, tree, tmp_path)


def test_miniloom_text_patches_and_a_patch_that_does_not_apply(tmp_path: Path) -> None:
    dmp = dmp_module.diff_match_patch()
    text_patch = dmp.patch_toText(dmp.patch_make("", "Hello"))
    bad = dmp.patch_toText(dmp.patch_make("Something else entirely", "Something else, yes"))
    save = {"loomTree": {"nodeStore": {
        "1": {"id": "1", "type": "root", "patch": "", "parent": None, "children": ["2"]},
        "2": {"id": "2", "type": "user", "patch": text_patch, "parent": "1",
              "children": ["3"]},
        "3": {"id": "3", "type": "gen", "patch": bad, "parent": "2", "children": []}}},
        "focus": {"id": "3"}}
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, save, name="x")
    n = keyed(report.trees[0].tree)
    assert n["2"].content == "Hello"
    assert "1 MiniLoom patch(es) did not apply cleanly" in report.notes[-1]


# ── exoloom ───────────────────────────────────────────────────────────────────
EXOLOOM = {
    "title": "The Archive", "description": "A library that remembers its readers.",
    "nodes": [
        {"id": "n1", "parentId": None, "text": "The archive had no doors.", "authorType": "USER",
         "createdAt": "2025-03-01T09:00:00Z"},
        {"id": "n2", "parentId": "n1", "text": " Only windows.", "authorType": "LLM",
         "model": "claude-3-opus", "createdAt": 1_740_819_660_000, "temperature": 1},
        {"id": "n3", "parentId": "n1", "text": " It had a keeper.", "authorType": "LLM",
         "model": "claude-3-opus"},
        {"id": "n4", "parentId": "n2", "text": " She climbed in.", "authorType": "USER"},
    ],
    "lens": {"bookmarks": [{"nodeId": "n2", "label": "the turn"}], "prunedNodes": ["n3"],
             "currentNodeId": "n4", "zoom": 1.5},
    "version": 3,
}


def test_exoloom(tmp_path: Path) -> None:
    assert detect_format(EXOLOOM) == "exoloom"
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, json.loads(json.dumps(EXOLOOM)))
    made = report.trees[0]
    tree = made.tree
    assert (tree.title, tree.description, tree.mode) == (
        "The Archive", "A library that remembers its readers.", "dialogue")
    assert (made.nodes, made.bookmarks) == (4, 1)
    n = keyed(tree)
    assert (n["n2"].author_type, Participant.get_by_id(n["n2"].author_id).name) == (
        "model", "claude-3-opus")
    assert n["n2"].bookmarked and n["n3"].pruned and not n["n4"].pruned
    assert [x.id for x in ws.path(n["n4"])] == [n["n1"].id, n["n2"].id, n["n4"].id]
    human = Participant.get(Participant.name == "human")
    assert Position.get((Position.participant == human.id) & (Position.tree == tree.id)
                        ).node == n["n4"].id
    out = export_openloom(ws, tree)["trees"][0]
    assert out["nodes"]["n2"]["meta"] == {"bookmarked": True, "bookmarkLabel": "the turn"}
    assert out["nodes"]["n2"]["generation"] == {"model": "claude-3-opus"}
    assert out["nodes"]["n2"]["createdAt"] == "2025-03-01T09:01:00Z"
    assert out["nodes"]["n2"]["extensions"]["exoloom"] == {"temperature": 1}
    assert out["extensions"]["exoloom"] == {"version": 3, "lens": {"zoom": 1.5}}
    reexports(ws, tree, tmp_path)


# ── Open Loom v1 ──────────────────────────────────────────────────────────────
def v1_tree() -> dict[str, Any]:
    """As the Loom Swift prototype's JSONEncoder writes it (dates: seconds since 2001)."""
    def node(nid: str, text: str, author: str, parent: str | None, children: list[str],
             **more: Any) -> dict[str, Any]:
        return {"id": nid, "text": text, "author": author,
                "modelId": "User" if author == "user" else "gpt-4",
                "createdTime": 740_000_000.5, "parentId": parent, "childrenIds": children,
                "rememberedChildId": children[0] if children else None,
                "isBookmarked": False, "bookmarkTitle": None, **more}

    nodes = {
        "A": node("A", "Hi, who are you?", "user", None, ["C", "B"]),
        "B": node("B", "An assistant.", "assistant", "A", [], isBookmarked=True,
                  bookmarkTitle="intro"),
        "C": node("C", "A helper.", "assistant", "A", ["D"]),
        "D": node("D", "Thanks.", "user", "C", []),
    }
    return {"id": "T-1", "title": "First chat", "description": None,
            "lastModified": 740_000_100.0, "systemMessage": "Be kind.", "rootNodeId": "A",
            "currentNodeId": "D", "nodes": nodes, "bookmarkedNodes": {"B": nodes["B"]}}


def test_open_loom_v1(tmp_path: Path) -> None:
    data = v1_tree()
    assert detect_format(data) == "Open Loom v1"
    assert detect_format([data, v1_tree()]) == "Open Loom v1"
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, json.loads(json.dumps(data)))
    made = report.trees[0]
    tree = made.tree
    assert (tree.title, tree.mode, tree.system_context, made.bookmarks) == (
        "First chat", "dialogue", "Be kind.", 1)
    n = keyed(tree)
    root = ws.node(tree.root)
    assert root.id == n["A"].id
    assert [c.id for c in ws.children(root)] == [n["C"].id, n["B"].id]  # childrenIds order
    assert (n["B"].author_type, Participant.get_by_id(n["B"].author_id).name) == (
        "model", "gpt-4")
    assert Participant.get_by_id(n["A"].author_id).name == "User"
    assert n["A"].created == pytest.approx(SWIFT_EPOCH + 740_000_000.5)
    out = export_openloom(ws, tree)["trees"][0]
    assert out["id"] == "T-1" and out["updatedAt"] == "2024-06-13T19:35:00Z"
    assert out["nodes"]["B"]["meta"] == {"bookmarked": True, "bookmarkLabel": "intro"}
    assert out["nodes"]["B"]["generation"] == {"model": "gpt-4"}
    assert out["nodes"]["C"]["extensions"]["open-loom-v1"] == {"rememberedChildId": "D"}
    assert out["currentNodeId"] == "D"
    reexports(ws, tree, tmp_path)


def test_detection_is_by_content_not_extension(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    for name, data in (("a.openloom", EXOLOOM), ("b.txt", v1_tree()),
                       ("c.bin", miniloom_save())):
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        assert import_file(ws, path).format in ("exoloom", "Open Loom v1", "MiniLoom")
    assert Tree.select().count() == 3
