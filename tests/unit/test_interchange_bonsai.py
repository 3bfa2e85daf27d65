"""Bonsai import, from files in the shapes their writers produce.

Bonsai publishes neither its format nor its source. The shapes here are rebuilt from the
two programs known to write its files (read, not copied):
- tel-0s/damask, damask.py at dc37766a19c59cfc2ece4b9bebf40d42f20c2e69: ``to_bonsai_format``
  writes every node as {id, text, childrenIds, parentIds, group: "normal", visible: true,
  tags: [], createdAt/lastVisited/lastUpdated: ms, logprobs: null, generationSettings: null,
  label: ""} in depth-first pre-order, an edge {from, to, relation: "parentId"} per child,
  name "graph_1", pathNodes [root], focusedId root; ``from_bonsai_format`` reads nodes[0] as
  the root and follows childrenIds; ``detect_loom_format`` wants nodes + edges + pathNodes.
- hunarbatra/model-written-evals, bonsai_export.py at
  c4208061ec7c41a608de38703e39cf341bf4bbc9 (and dataset/bonsai.json, the file it wrote): ids
  are Python hashes as strings (negative ones too), non-root texts start with a space,
  lastVisited is a string of seconds, only {id, text, parentIds, childrenIds, lastVisited}
  plus group "path" on the chosen path, pathNodes that path and focusedId its end; a node off
  the path has childrenIds [].
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom.errors import LoomError
from loom.interchange import bonsai, detect_format, import_data, import_file
from loom.interchange.openloom import export_openloom
from loom.store.schema import Node, Participant, Position, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import DEMO, fresh, without_export_stamp
from tests.unit.test_interchange_looms import EXOLOOM, miniloom_save, v1_tree

MS = 1_688_320_000_000  # 2023-07-02T17:46:40Z, the week damask learnt Bonsai


def damask_file(nodes: list[tuple[str, str, str | None]], *, name: str = "graph_1",
                focus: str | None = None, path: list[str] | None = None) -> dict[str, Any]:
    """What damask's ``to_bonsai_format`` writes for a tree given as (id, text, parent) in
    depth-first pre-order (its traversal order), siblings in their order."""
    kids: dict[str, list[str]] = {nid: [] for nid, _, _ in nodes}
    for nid, _, parent in nodes:
        if parent is not None:
            kids[parent].append(nid)
    out, edges = [], []
    for nid, text, parent in nodes:
        out.append({"id": nid, "text": text, "childrenIds": kids[nid],
                    "parentIds": [parent] if parent is not None else [], "group": "normal",
                    "visible": True, "tags": [], "createdAt": MS, "lastVisited": MS,
                    "lastUpdated": MS, "logprobs": None, "generationSettings": None,
                    "label": ""})
        if parent is not None:
            edges.append({"from": parent, "to": nid, "relation": "parentId"})
    root = nodes[0][0]
    return {"nodes": out, "edges": edges, "name": name,
            "pathNodes": path if path is not None else [root], "focusedId": focus or root}


STORY = [  # unicode, emoji, CRLF and a leading space kept as they are
    ("r", "The lighthouse keeper\r\nwrote:", None),
    ("a", " “Stairs again” 🪜", "r"),
    ("a1", " — and then the lamp.", "a"),
    ("b", " Nothing.", "r"),
    ("c", " Gulls,\ttoo.\n", "r"),
]


def script_file() -> dict[str, Any]:
    """What hunarbatra's ``bonsai_export_runner`` writes: five completions per step, the
    chosen one grown further; hash ids, string seconds, group "path" on the chosen path."""
    root_id, chosen1, chosen2 = "1804076016340151106", "-980395282802139552", "48146284534"
    level1 = [("3270447230920372010", " A"), ("-4467832689441392505", " B"),
              (chosen1, " C\n\nQuestion:")]
    level2 = [(chosen2, " Is it?"), ("-5650663789936784714", " Is it not?")]

    def node(nid: str, text: str, parents: list[str], children: list[str],
             on_path: bool) -> dict[str, Any]:
        out = {"id": nid, "text": text, "parentIds": parents, "childrenIds": children,
               "lastVisited": "1683506737"}
        return {**out, "group": "path"} if on_path else out

    nodes = [node(root_id, "Generate questions.\n", [], [i for i, _ in level1], True)]
    nodes += [node(i, t, [root_id], [j for j, _ in level2] if i == chosen1 else [],
                   i == chosen1) for i, t in level1]
    nodes += [node(i, t, [chosen1], [], i == chosen2) for i, t in level2]
    edges = [{"from": root_id, "to": i, "relation": "parentId"} for i, _ in level1] + [
        {"from": chosen1, "to": i, "relation": "parentId"} for i, _ in level2]
    return {"nodes": nodes, "edges": edges, "name": "test",
            "pathNodes": [root_id, chosen1, chosen2], "focusedId": chosen2}


def keyed(tree: Tree) -> dict[str, Node]:
    return {(n.extra or {}).get("interchange", {}).get("id", n.id): n
            for n in Node.select().where(Node.tree == tree.id)}


def current(tree: Tree) -> str:
    human = Participant.get(Participant.name == "human")
    return str(Position.get((Position.participant == human.id) &
                            (Position.tree == tree.id)).node)


def reexports(ws: Workspace, tree: Tree, tmp_path: Path) -> dict[str, Any]:
    """The imported tree travels on as Open Loom without loss; its export is returned."""
    data = json.loads(json.dumps(export_openloom(ws, tree)))
    ws.db.close()
    other = fresh(tmp_path / "other.db")
    again = import_data(other, json.loads(json.dumps(data))).trees[0].tree
    assert without_export_stamp(export_openloom(other, again)) == without_export_stamp(data)
    return data


def test_a_damask_file(tmp_path: Path) -> None:
    data = damask_file(STORY, focus="a1", path=["r", "a", "a1"])
    assert detect_format(data) == "Bonsai"
    path = tmp_path / "keeper.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    ws = fresh(tmp_path / "loom.db")
    report = import_file(ws, path)
    made = report.trees[0]
    tree = made.tree
    assert (report.format, tree.title, tree.mode, made.nodes) == (
        "Bonsai", "graph_1", "buffer", 5)
    assert report.notes == [] and report.repairs == []
    n = keyed(tree)
    assert {k: x.content for k, x in n.items()} == {k: t for k, t, _ in STORY}
    root = ws.node(tree.root)
    assert root.id == n["r"].id and root.author_type == "human"
    assert [c.id for c in ws.children(root)] == [n["a"].id, n["b"].id, n["c"].id]
    assert "".join(x.content for x in ws.path(n["a1"])) == (
        "The lighthouse keeper\r\nwrote: “Stairs again” 🪜 — and then the lamp.")
    # No authorship in Bonsai: what is not the root is "mixed" (the importer's in Loom).
    assert (n["b"].author_type, n["b"].extra["interchange"]["role"]) == ("human", "mixed")
    assert current(tree) == n["a1"].id
    assert n["a"].created == pytest.approx(MS / 1000)
    out = reexports(ws, tree, tmp_path)["trees"][0]
    assert out["currentNodeId"] == "a1" and out["rootNodeIds"] == ["r"]
    assert out["nodes"]["a"]["createdAt"] == "2023-07-02T17:46:40Z"
    # The structure is in the edges, so childrenIds/parentIds/edges/pathNodes that agree
    # with it are not kept twice; Bonsai's other fields are.
    assert out["nodes"]["a"]["extensions"]["bonsai"] == {
        "group": "normal", "lastVisited": MS, "lastUpdated": MS, "label": ""}
    assert "meta" not in out["nodes"]["a"] and "bonsai" not in out.get("extensions", {})


def test_damasks_own_defaults_root_focus_and_first_node(tmp_path: Path) -> None:
    """As damask writes it: pathNodes [root], focusedId root; the tree's text intact."""
    data = damask_file(STORY)
    ws = fresh(tmp_path / "loom.db")
    tree = import_data(ws, json.loads(json.dumps(data))).trees[0].tree
    n = keyed(tree)
    assert current(tree) == n["r"].id
    out = export_openloom(ws, tree)["trees"][0]
    assert out["currentNodeId"] == "r" and "bonsai" not in out.get("extensions", {})
    assert [(e["sources"][0]["nodeId"], e["targetNodeId"]) for e in out["edges"]] == [
        ("r", "a"), ("r", "b"), ("r", "c"), ("a", "a1")]


def test_a_script_export(tmp_path: Path) -> None:
    data = script_file()
    assert detect_format(data) == "Bonsai"
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, json.loads(json.dumps(data)), name="ignored: the file has a name")
    tree = report.trees[0].tree
    assert (tree.title, report.trees[0].nodes, report.notes) == ("test", 6, [])
    n = keyed(tree)
    chosen = n["48146284534"]
    assert current(tree) == chosen.id
    assert [x.content for x in ws.path(chosen)] == [
        "Generate questions.\n", " C\n\nQuestion:", " Is it?"]
    assert [c.content for c in ws.children(n["-980395282802139552"])] == [
        " Is it?", " Is it not?"]
    out = reexports(ws, tree, tmp_path)["trees"][0]
    assert out["nodes"]["48146284534"]["extensions"]["bonsai"] == {
        "lastVisited": "1683506737", "group": "path"}
    assert out["nodes"]["3270447230920372010"]["extensions"]["bonsai"] == {
        "lastVisited": "1683506737"}
    # pathNodes is the path to focusedId: nothing to keep
    assert "bonsai" not in out.get("extensions", {})


def test_generated_nodes_flags_and_what_is_kept(tmp_path: Path) -> None:
    data = damask_file(STORY, focus="c")
    by_id = {x["id"]: x for x in data["nodes"]}
    by_id["a"].update(generationSettings={"model": "davinci", "temperature": 0.9,
                                          "apiKey": "sk-secret-0123"},
                      logprobs={"tokens": [" “"], "token_logprobs": [-0.25]},
                      label="the stairs", tags=["good", "🌟"])
    by_id["b"].update(visible=False, mood="odd")
    by_id["c"].update(logprobs=[{"token": " Gulls", "logprob": -1.5}], createdAt="soon")
    data["theme"] = "dark"
    data["edges"].append({"from": "b", "to": "c", "relation": "seeAlso"})
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, json.loads(json.dumps(data)))
    assert report.notes == ["2 Bonsai node(s) carry logprobs: kept verbatim "
                            "(extensions.bonsai.logprobs), not as Loom token data"]
    tree = report.trees[0].tree
    n = keyed(tree)
    assert (n["a"].author_type, Participant.get_by_id(n["a"].author_id).name) == (
        "model", "davinci")
    assert n["c"].author_type == "model" and n["b"].pruned and not n["a"].pruned
    out = reexports(ws, tree, tmp_path)["trees"][0]
    a = out["nodes"]["a"]
    assert a["generation"]["model"] == "davinci"
    assert a["generation"]["parameters"] == {"model": "davinci", "temperature": 0.9}
    assert a["meta"] == {"tags": ["good", "🌟"]}
    assert a["extensions"]["bonsai"]["logprobs"] == {"tokens": [" “"],
                                                     "token_logprobs": [-0.25]}
    assert a["extensions"]["bonsai"]["label"] == "the stairs"
    assert out["nodes"]["b"]["meta"] == {"pruned": True}
    assert out["nodes"]["b"]["extensions"]["bonsai"]["mood"] == "odd"
    assert out["nodes"]["c"]["extensions"]["bonsai"]["createdAt"] == "soon"
    assert out["extensions"]["bonsai"] == {
        "theme": "dark", "pathNodes": ["r"],
        "edges": [{"from": "b", "to": "c", "relation": "seeAlso"}]}
    stored = json.dumps([x.extra for x in Node.select()])
    assert "sk-secret" not in stored


def test_where_the_structure_comes_from() -> None:
    """parentIds first, then a parentId edge, then childrenIds; what disagrees is kept."""
    nodes: list[dict[str, Any]] = [
        {"id": "r", "text": "R", "childrenIds": ["y", "x", "ghost"]},
        {"id": "x", "text": "X", "parentIds": ["r", "y"]},  # two parents: r is the parent
        {"id": "y", "text": "Y"},                           # only r's childrenIds says so
        {"id": "z", "text": "Z"},                           # only an edge says so
    ]
    data = {"nodes": nodes, "edges": [{"from": "x", "to": "z", "relation": "parentId"},
                                      {"from": "nowhere", "to": "z"}]}
    assert detect_format(data) == "Bonsai"
    doc, notes = bonsai.convert(data, "shapes")
    tree = doc["trees"][0]
    assert tree["title"] == "shapes" and tree["rootNodeIds"] == ["r"]
    assert [(e["sources"][0]["nodeId"], e["targetNodeId"]) for e in tree["edges"]] == [
        ("r", "y"), ("r", "x"), ("x", "z")]  # r's childrenIds order
    assert tree["nodes"]["x"]["extensions"]["bonsai"] == {"parentIds": ["r", "y"]}
    assert tree["nodes"]["r"]["extensions"]["bonsai"] == {"childrenIds": ["y", "x", "ghost"]}
    assert tree["extensions"]["bonsai"] == {"edges": [{"from": "nowhere", "to": "z"}]}
    assert "currentNodeId" not in tree
    assert notes == [
        "1 Bonsai node(s) have several parents: the first is the parent, the list is kept "
        "(extensions.bonsai.parentIds)",
        "2 Bonsai reference(s) in childrenIds or edges name no node: kept in "
        "extensions.bonsai, not in the tree"]


def test_repeated_ids_and_a_focus_that_is_no_node() -> None:
    """The script's ids are hashes of the text: two equal completions share one."""
    data = damask_file([("r", "R", None), ("k", " same", "r")], focus="gone")
    data["nodes"].append({**data["nodes"][1]})
    data["edges"].append(dict(data["edges"][0]))
    doc, notes = bonsai.convert(data, None)
    tree = doc["trees"][0]
    assert len(tree["nodes"]) == 3 and len(tree["edges"]) == 2
    assert notes[0].startswith("1 Bonsai node(s) had a missing or repeated id")
    assert notes[1] == 'focusedId "gone" names no node: the current node is the end of pathNodes'
    assert tree["currentNodeId"] == "r"
    assert tree["extensions"]["bonsai"]["focusedId"] == "gone"


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(nodes=[]), "nodes: the Bonsai file has no nodes"),
    (lambda d: d["nodes"].append("x"), "nodes[5]: a node is a JSON object"),
    (lambda d: d["nodes"][2].update(text=7), "nodes[2].text: the text is not a string"),
    (lambda d: d["nodes"][1].update(parentIds="r"), "nodes[1].parentIds: a list of node ids"),
    (lambda d: d["nodes"][0].update(childrenIds={"a": 1}),
     "nodes[0].childrenIds: a list of node ids"),
    (lambda d: d["nodes"][3].update(parentIds=["ghost"]),
     'nodes[3].parentIds: node "b" has parent "ghost" which is not a node'),
    (lambda d: d.update(edges={"from": "r"}), "edges: a list of {from, to, relation}"),
    (lambda d: d["edges"].append(3), "edges[4]: an edge is a JSON object"),
])
def test_a_damaged_file_says_where(tmp_path: Path, change: Any, message: str) -> None:
    data = damask_file(STORY)
    change(data)
    ws = fresh(tmp_path / "loom.db")
    with pytest.raises(LoomError) as err:
        import_data(ws, data)
    assert err.value.code == "INVALID_SYNTAX" and err.value.message.startswith(message)
    assert Tree.select().count() == 0


def test_a_cycle_is_repaired(tmp_path: Path) -> None:
    data = damask_file(STORY)
    data["nodes"][1]["parentIds"] = ["a1"]  # a ← a1 ← a
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, data)
    assert len(report.repairs) == 1 and "closes a cycle" in report.repairs[0]
    assert report.trees[0].nodes == 5


def test_detection_takes_no_other_looms_file() -> None:
    demo = json.loads(DEMO.read_text(encoding="utf-8")) if DEMO.exists() else None
    loomsidian_note = {"current": "r", "hoisted": [], "generating": None, "nodes": {
        "r": {"text": "R", "parentId": None, "unread": False, "collapsed": False,
              "bookmarked": False, "color": None, "lastVisited": MS, "children": []}}}
    pyloom = {"root": {"id": "r", "text": "R", "children": [{"id": "a", "text": "A",
                                                             "children": []}]}}
    openloom = {"format": "open-loom", "version": "2.0", "trees": []}
    for data, name in ((EXOLOOM, "exoloom"), (v1_tree(), "Open Loom v1"),
                       ([v1_tree()], "Open Loom v1"), (miniloom_save(), "MiniLoom"),
                       (loomsidian_note, "loomsidian"), (pyloom, "socketteer/loom"),
                       (openloom, "Open Loom"), (demo, "socketteer/loom")):
        if data is not None:
            assert detect_format(data) == name
            assert not bonsai.detect(data)
    # exoloom's nodes list beside a lens stays exoloom's even with Bonsai-like fields.
    assert detect_format({**EXOLOOM, "pathNodes": []}) == "exoloom"
    with pytest.raises(LoomError) as err:
        detect_format({"nodes": {"r": {"text": "R"}}, "edges": []})
    assert "Bonsai" in (err.value.hint or "")


# ── properties: any tree damask can write reads back as that tree ──────────────
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["\r\n", " 🪜\u200d", "a\x00b"])


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, str, str | None]]:
    """(id, text, parent) in pre-order: every node hangs under an earlier one."""
    size = draw(st.integers(1, 25))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, size)]
    texts = [draw(TEXT) for _ in range(size)]
    kids: dict[int, list[int]] = {i: [] for i in range(size)}
    for i, p in enumerate(parents):
        if p is not None:
            kids[p].append(i)
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    return [(f"n{i}", texts[i], None if parents[i] is None else f"n{parents[i]}")
            for i in order]


@settings(max_examples=60, deadline=None)
@given(trees(), st.data())
def test_property_what_damask_writes_reads_back(nodes: list[tuple[str, str, str | None]],
                                                pick: st.DataObject) -> None:
    focus = pick.draw(st.sampled_from([nid for nid, _, _ in nodes]))
    data = damask_file(nodes, focus=focus)
    assert detect_format(data) == "Bonsai"
    doc, notes = bonsai.convert(json.loads(json.dumps(data)), None)
    tree = doc["trees"][0]
    assert notes == [] and tree["rootNodeIds"] == ["n0"] and tree["currentNodeId"] == focus
    assert {k: v["content"] for k, v in tree["nodes"].items()} == {
        nid: [{"type": "text", "text": text}] for nid, text, _ in nodes}
    got = [(e["sources"][0]["nodeId"], e["targetNodeId"]) for e in tree["edges"]]
    want = [(p, nid) for nid, _, p in nodes if p is not None]
    assert sorted(got) == sorted(want)
    for parent, _, _ in nodes:  # sibling order
        assert [t for s, t in got if s == parent] == [t for s, t in want if s == parent]


# ── the 764-node socketteer tree, through Bonsai ───────────────────────────────
def bonsai_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A Loom export as damask's Bonsai shape, focused on the tree's current node."""
    tree = doc["trees"][0]
    kids: dict[str, list[str]] = {nid: [] for nid in tree["nodes"]}
    parent: dict[str, str] = {}
    for e in tree["edges"]:
        if e["type"] == "continuation":
            kids[e["sources"][0]["nodeId"]].append(e["targetNodeId"])
            parent[e["targetNodeId"]] = e["sources"][0]["nodeId"]
    order: list[tuple[str, str, str | None]] = []
    stack = list(reversed(tree["rootNodeIds"]))
    while stack:
        nid = stack.pop()
        text = "".join(b.get("text", "") for b in tree["nodes"][nid]["content"])
        order.append((nid, text, parent.get(nid)))
        stack.extend(reversed(kids[nid]))
    return damask_file(order, name=tree["title"], focus=tree.get("currentNodeId"))


def test_the_socketteer_demo_through_bonsai(tmp_path: Path) -> None:
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    ws = fresh(tmp_path / "loom.db")
    first = import_file(ws, DEMO).trees[0].tree
    doc = json.loads(json.dumps(export_openloom(ws, first)))
    data = bonsai_of(doc)
    text = json.dumps(data, ensure_ascii=False)
    ws.db.close()
    other = fresh(tmp_path / "other.db")
    started = time.perf_counter()
    report = import_data(other, json.loads(text))
    seconds = time.perf_counter() - started
    assert report.format == "Bonsai" and report.notes == [] and report.repairs == []
    again = export_openloom(other, report.trees[0].tree)["trees"][0]
    tree = doc["trees"][0]
    assert len(again["nodes"]) == len(tree["nodes"]) == 764
    assert {k: v["content"] for k, v in again["nodes"].items()} == {
        k: [{"type": "text", "text": "".join(b.get("text", "") for b in v["content"])}]
        for k, v in tree["nodes"].items()}
    pairs = [(e["sources"][0]["nodeId"], e["targetNodeId"]) for e in again["edges"]]
    want = [(e["sources"][0]["nodeId"], e["targetNodeId"]) for e in tree["edges"]
            if e["type"] == "continuation"]
    assert sorted(pairs) == sorted(want)
    for source in {s for s, _ in want}:
        assert [t for s, t in pairs if s == source] == [t for s, t in want if s == source]
    assert again["currentNodeId"] == tree["currentNodeId"]
    assert again["rootNodeIds"] == tree["rootNodeIds"]
    print(f"\nBonsai file {len(text.encode()):,} bytes, {len(data['nodes'])} nodes, "
          f"imported in {seconds:.2f} s")
