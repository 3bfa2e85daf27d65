"""Shared by the tests of the writers of other looms' formats (loomsidian, MiniLoom): the
trees they are tried on, a tree's strict shape to compare before and after a round trip,
and the runner of the JavaScript re-implementations of those looms' loaders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loom.interchange import import_data, import_file
from loom.interchange.openloom import export_document
from loom.interchange.openloom.render import ExportOptions
from loom.interchange.strict_tree import strict_tree
from loom.store.schema import Generation, Node, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import DEMO, data_uri, fresh, png
from tests.unit.test_interchange_openloom import build

JS = Path(__file__).resolve().parent / "js"
CRLF_EMOJI = " Ça va? 👋🏽 — 日本語\r\nnext line\r\n"


def document(ws: Workspace, tree: Tree) -> dict[str, Any]:
    """The tree's Open Loom document, as the export hands it to a writer (plain JSON)."""
    doc, _ = export_document(ws, [tree], ExportOptions(media="inline"))
    return json.loads(json.dumps(doc))  # type: ignore[no-any-return]


def demo_document(db: Path) -> dict[str, Any]:
    """The 764-node socketteer fixture imported into Loom, as Loom exports it."""
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    ws = fresh(db)
    try:
        return document(ws, import_file(ws, DEMO).trees[0].tree)
    finally:
        ws.db.close()


def every_feature_document(db: Path, scratch: Path) -> dict[str, Any]:
    """A Loom tree with every feature: human and model nodes, several models, versions, a
    bookmark, tags, annotations, links, a hyperedge, token logprobs, pruned and excluded
    nodes, summaries, media blocks, unicode with emoji and CRLF, a current node."""
    ws = fresh(scratch)
    built = build(ws)  # branches, versions, annotations, links, logprobs, flags…
    n = built.nodes
    ws.set_flags(n["d"], pruned=True)
    uni = ws.add_node(built.tree, n["c"], CRLF_EMOJI, ws.human())
    opus = ws.ensure_participant("claude-3-opus", "model", "collaborator", ())
    rain = ws.add_node(built.tree, uni, " 🌧️ It rained.", opus)
    Generation.create(id="01J0000000000000000000GEN9", node=rain.id, provider="anthropic",
                      model="claude-3-opus", params={}, usage={}, latency_ms=None,
                      completion_index=0, logprobs=[{"token": " 🌧", "logprob": -1.25}],
                      raw=None, created=1_700_000_100.5)
    doc = document(ws, Tree.get_by_id(built.tree.id))
    ws.db.close()
    tree = doc["trees"][0]
    tree["currentNodeId"] = rain.id
    tree["tags"] = [{"name": "weather", "color": "#3366ff"}]
    tree["nodes"][uni.id].setdefault("meta", {})["tags"] = ["weather"]
    tree["nodes"][uni.id]["meta"]["rating"] = 2
    tree["nodes"][rain.id]["meta"] = {"rating": -1, "note": "too wet"}
    tree["nodes"][n["b1"].id]["content"].append(
        {"type": "image", "ref": data_uri("image/png", png()), "mimeType": "image/png",
         "altText": "rain"})
    ws = fresh(db)  # imported, so that the tags are Loom's (kept) and the tree is Loom's
    try:
        report = import_data(ws, doc)
        return document(ws, report.trees[0].tree)
    finally:
        ws.db.close()


def shape(doc: dict[str, Any], *, skip_root: bool = False) -> dict[str, Any]:
    """What a round trip must keep, by position in the tree (so ids may change): each
    node's own and whole text, its bookmark and author role and model, in depth-first
    order with its path of sibling indexes; and the current node's path. ``skip_root``
    drops an empty root that was added above the tree's."""
    st = strict_tree(doc)
    nodes: list[dict[str, Any]] = []
    path_of: dict[str, tuple[int, ...]] = {}
    full: dict[str | None, str] = {None: ""}
    roots = st.roots
    if skip_root:
        assert len(roots) == 1 and st.nodes[roots[0]].text == ""
        roots = st.nodes[roots[0]].children
    stack = [(r, (i,)) for i, r in reversed(list(enumerate(roots)))]
    while stack:
        nid, path = stack.pop()
        node = st.nodes[nid]
        path_of[nid] = path
        full[nid] = full[node.parent if path[1:] else None] + node.text
        nodes.append({"path": path, "text": node.text, "full": full[nid],
                      "bookmarked": node.meta.get("bookmarked") is True, "role": node.role,
                      "model": st.model_of(node), "rating": node.meta.get("rating")})
        stack.extend((c, (*path, i)) for i, c in reversed(list(enumerate(node.children))))
    return {"nodes": nodes, "current": path_of.get(st.current or "")}


def node_ids(ws: Workspace, tree: Tree) -> list[str]:
    return [n.id for n in Node.select().where(Node.tree == tree.id)]


def run_js(script: str, *args: str, module: str | None = None) -> dict[str, Any]:
    """Run one of tests/unit/js/ on node; skipped without node outside CI (CI has node), and
    without ``module`` (an npm package) where NODE_PATH does not give it."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not on PATH in CI")
        pytest.skip("node is not on PATH")
    if module is not None:
        probe = subprocess.run([node, "-e", f"require.resolve({json.dumps(module)})"],
                               capture_output=True, timeout=60, check=False)
        if probe.returncode:
            if os.environ.get("LOOM_REQUIRE_NODE_MODULES"):  # .ci/run installs it
                pytest.fail(f"the npm package {module} is not where NODE_PATH points")
            pytest.skip(f"the npm package {module} is not installed where NODE_PATH points")
    proc = subprocess.run([node, str(JS / script), *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]
