"""A foreign file's nodes are kept whole (``verbatim``): an export gives each back as the
file had it, except where Loom changed the node since the import, where Loom wins and the
rest of what the file said still comes back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from loom.interchange import import_data
from loom.interchange.openloom import export_openloom
from loom.store.schema import Node
from tests.unit.interchange_support import fresh, without_export_stamp


def foreign() -> dict[str, Any]:
    """An Open Loom file another loom wrote: its own ids, spellings and extensions."""
    def node(nid: str, text: str, role: str = "human", **more: Any) -> dict[str, Any]:
        return {"id": nid, "content": [{"type": "text", "text": text}],
                "author": {"role": role}, "createdAt": "2026-03-01T10:00:00+00:00", **more}

    nodes = {
        "r": node("r", "The lighthouse keeper counted ships.", mood="calm"),
        "a": node("a", " Three came in before dawn.", "model",
                  extensions={"other-loom": {"score": 0.25}}),
        "b": node("b", " None came at all.", "model", meta={"tags": ["dark"]}),
        "c": {"id": "c", "content": [{"type": "text", "text": "two "},
                                     {"type": "text", "text": "blocks"}],
              "author": {"role": "human", "name": "ann"}},
    }
    edges = [{"id": f"edge-{k}", "type": "continuation",
              "sources": [{"nodeId": p, "role": "primary"}], "targetNodeId": k}
             for k, p in (("a", "r"), ("b", "r"), ("c", "a"))]
    return {"format": "open-loom", "version": "2.0",
            "generator": {"name": "Other Loom", "version": "9"},
            "trees": [{"id": "t1", "title": "Ships", "mode": "buffer", "rootNodeIds": ["r"],
                       "nodes": nodes, "edges": edges}]}


def _node(tree: Any, key: str) -> Node:
    return next(n for n in Node.select().where(Node.tree == tree.id)
                if (n.extra or {}).get("interchange", {}).get("id") == key)


def test_an_unchanged_foreign_file_comes_back_as_it_was(tmp_path: Path) -> None:
    data = foreign()
    ws = fresh(tmp_path / "a.db")
    tree = import_data(ws, copy.deepcopy(data)).trees[0].tree
    out = export_openloom(ws, tree)
    assert out["trees"][0]["nodes"] == data["trees"][0]["nodes"]
    assert out["trees"][0]["edges"] == data["trees"][0]["edges"]
    # … and so does a file of that export, imported again (Loom wrote it now).
    again = import_data(ws, json.loads(json.dumps(out))).trees[0].tree
    assert without_export_stamp(export_openloom(ws, again)) == without_export_stamp(out)


def test_what_loom_changed_wins_and_the_rest_of_the_file_comes_back(tmp_path: Path) -> None:
    data = foreign()
    ws = fresh(tmp_path / "a.db")
    tree = import_data(ws, copy.deepcopy(data)).trees[0].tree
    ws.set_flags(_node(tree, "b"), bookmarked=True)
    ws.set_summary(_node(tree, "a"), "Ships at dawn.", "model")
    ws.set_flags(_node(tree, "r"), pruned=True)
    ws.set_flags(_node(tree, "r"), pruned=False)  # changed and changed back: as it was
    nodes = export_openloom(ws, tree)["trees"][0]["nodes"]
    file_nodes = data["trees"][0]["nodes"]
    assert nodes["r"] == file_nodes["r"] and nodes["c"] == file_nodes["c"]
    b = nodes["b"]
    assert b["meta"] == {"tags": ["dark"], "bookmarked": True}
    assert b["createdAt"] == "2026-03-01T10:00:00+00:00" and b["id"] == "b"
    a = nodes["a"]
    assert a["extensions"]["loom"]["summary"] == "Ships at dawn."
    assert a["extensions"]["loom"]["summarySource"] == "model"
    assert a["extensions"]["other-loom"] == {"score": 0.25}
    assert a["createdAt"] == "2026-03-01T10:00:00+00:00"
    assert "agentId" not in a["author"]  # the file named no agent; Loom changed no author
    # Changed back in Loom: the file's node again.
    ws.set_flags(_node(tree, "b"), bookmarked=False)
    assert export_openloom(ws, tree)["trees"][0]["nodes"]["b"] == file_nodes["b"]


def test_a_node_with_several_blocks_is_kept_whole(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    tree = import_data(ws, foreign()).trees[0].tree
    c = _node(tree, "c")
    assert c.content == "two blocks"
    assert c.extra["interchange"]["file"]["content"] == foreign()["trees"][0]["nodes"]["c"][
        "content"]
    r = _node(tree, "r")  # one text block, the node's own text: not stored twice
    assert r.extra["interchange"]["file"]["content"] is None


def test_an_edge_changed_in_loom_is_loom_s_and_keeps_the_file_s_id(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    tree = import_data(ws, foreign()).trees[0].tree
    ws.split_node(tree, _node(tree, "a"), 6, ws.human())  # "c" gains the tail as a source
    edges = export_openloom(ws, tree)["trees"][0]["edges"]
    into_c = next(e for e in edges if e["targetNodeId"] == "c")
    assert into_c["id"] == "edge-c"  # what Loom did not change comes back
    assert len(into_c["sources"]) == 2 and into_c["sources"][0]["nodeId"] == "a"
    untouched = next(e for e in edges if e["targetNodeId"] == "b")
    assert untouched == foreign()["trees"][0]["edges"][1]
