"""Open Loom 2.0 from Loom's side: a Loom tree exports in the published shape, and
Loom → Open Loom → Loom loses nothing Loom had."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import import_data
from loom.interchange.markdown import export_markdown
from loom.interchange.openloom import export_openloom, import_openloom
from loom.store.schema import Document, Generation, Link, Node, Participant, RawResponse, Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import fresh, tree_rows, without_export_stamp


@dataclass
class Built:
    tree: Tree
    other: Tree
    nodes: dict[str, Node]


def build(ws: Workspace) -> Built:
    """Branches, a buffer-mode version of a version, annotations, a multi-source hyperedge,
    links to a node, a tree and a document section, provenance, summaries, flags, extra."""
    human, model = ws.human(), ws.subject()
    claude = ws.ensure_participant("claude", "model", "collaborator", ())
    tree = ws.create_tree("Marie", "buffer", description="A story about Marie.",
                          root_content="Marie stood at the door.")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, " The rain had stopped.", human)
    b1 = ws.add_node(tree, a, " She ran into the street.", model)
    b2 = ws.add_node(tree, a, " She stayed inside.", model)
    c = ws.add_node(tree, b1, " Thomas was waiting.", model)
    v1 = ws.add_version(tree, b1, " She walked into the street.", human)
    d = ws.add_node(tree, v1, " Slowly.", human)
    v2 = ws.add_version(tree, v1, " She strolled into the street.", human)
    ann = ws.add_node(tree, b2, "Why does she stay?", claude, kind="annotation")
    ann2 = ws.add_node(tree, c, "Thomas again.", human, kind="annotation")
    multi = ws.add_node(tree, c, " He smiled.", model, role="primary",
                        extra_sources=[(b2, "context"), (a, "instruction")])
    raw_id = "01J00000000000000000000RAW"
    RawResponse.create(id=raw_id, body=json.dumps({"id": "cmpl-1", "choices": [1, 2]}))
    for i, node in enumerate((b1, b2)):
        Generation.create(id=f"01J0000000000000000000GEN{i}", node=node.id, provider="openai",
                          model="davinci-002", params={"temperature": 0.9, "max_tokens": 50},
                          usage={"input_tokens": 12, "output_tokens": 8}, latency_ms=812.5,
                          completion_index=i, logprobs=[{"token": " She", "logprob": -0.5}],
                          raw=raw_id, created=1_700_000_000.25 + i)
    ws.set_summary(a, "The rain stops.", "model")
    ws.update_tree(tree, summary="Marie decides whether to go out.", summary_source="model")
    ws.set_flags(b2, bookmarked=True)
    ws.set_flags(c, excluded=True)
    Node.update(extra={"socketteer": {"id": "abc", "tags": ["demo"]}}).where(
        Node.id == d.id).execute()
    other = ws.create_tree("Thomas", "dialogue", system_context="You are Thomas.")
    doc = ws.create_document("notes", "# Notes\n\n## Marie\n\nShe hesitates.\n")
    ws.add_link(tree, c, human, target_kind="node", target_node=b2, note="the other choice")
    ws.add_link(tree, a, claude, target_kind="tree", target_tree=other)
    ws.add_link(tree, d, human, target_kind="doc", target_doc=doc, section="marie")
    nodes = dict(root=root, a=a, b1=b1, b2=b2, c=c, v1=v1, d=d, v2=v2, ann=ann, ann2=ann2,
                 multi=multi)
    return Built(Tree.get_by_id(tree.id), other, {k: Node.get_by_id(n.id)
                                                  for k, n in nodes.items()})


@pytest.fixture
def exported(tmp_path: Path) -> tuple[dict[str, Any], Built, dict[str, Any]]:
    ws = fresh(tmp_path / "origin.db")
    built = build(ws)
    data = json.loads(json.dumps(export_openloom(ws, built.tree)))  # it is plain JSON
    rows = tree_rows(ws, built.tree)
    ws.db.close()
    return data, built, rows


def test_loom_open_loom_loom_loses_nothing(exported: tuple[dict[str, Any], Built,
                                                           dict[str, Any]],
                                           tmp_path: Path) -> None:
    first, _, rows = exported
    ws = fresh(tmp_path / "copy.db")
    report = import_openloom(ws, copy.deepcopy(first))
    assert report.repairs == [] and len(report.trees) == 1
    tree = report.trees[0].tree
    assert tree.id == first["trees"][0]["id"]  # ULIDs kept when nothing clashes
    assert tree_rows(ws, tree) == rows  # every row as it was, ids included
    # Nothing had to be kept aside: Loom's rendering is the file.
    for n in Node.select().where(Node.tree == tree.id):
        ic = (n.extra or {}).get("interchange", {})
        assert "keep" not in ic and "keep" not in ic.get("edge", {}), n.label
    assert "keep" not in Tree.get_by_id(tree.id).extra["interchange"]
    second = export_openloom(ws, tree)
    assert without_export_stamp(second) == without_export_stamp(first)


def test_export_shape(exported: tuple[dict[str, Any], Built, dict[str, Any]]) -> None:
    data, built, _ = exported
    n = built.nodes
    assert (data["format"], data["version"]) == ("open-loom", "2.0")
    assert data["generator"] == {"name": "Loom", "version": data["generator"]["version"]}
    t = data["trees"][0]
    assert t["rootNodeIds"] == [n["root"].id] and len(t["nodes"]) == 11
    assert "root" not in t and "created" not in t and "links" not in t
    assert t["extensions"]["loom"]["summary"] == "Marie decides whether to go out."
    b1 = t["nodes"][n["b1"].id]
    assert b1["content"] == [{"type": "text", "text": " She ran into the street."}]
    assert b1["author"]["role"] == "model"
    assert data["agents"][b1["author"]["agentId"]]["name"] == "model"
    gen = b1["generation"]
    assert (gen["model"], gen["latencyMs"], gen["requestId"]) == ("davinci-002", 812.5,
                                                                  "cmpl-1")
    assert gen["contentHash"] == "sha256:" + n["b1"].content_hash
    assert gen["parentHashes"] == ["sha256:" + n["a"].content_hash]
    assert gen["rawResponse"]["encoding"] == "identity"
    assert json.loads(gen["rawResponse"]["body"])["id"] == "cmpl-1"
    v2 = t["nodes"][n["v2"].id]
    assert v2["editedFrom"] == n["v1"].id
    assert v2["extensions"]["loom"]["versionOf"] == n["b1"].id
    assert v2["extensions"]["loom"]["localId"] == n["v2"].local_id
    assert "label" not in v2["extensions"]["loom"]  # derivable: b1's localId and two primes
    assert t["nodes"][n["b2"].id]["meta"] == {"bookmarked": True}
    assert t["nodes"][n["c"].id]["meta"] == {"excluded": True}
    assert t["nodes"][n["d"].id]["extensions"]["loom"]["extra"] == {
        "socketteer": {"id": "abc", "tags": ["demo"]}}
    # Edge order is sibling order; the shared edge lists the parent first, versions after.
    edges = {e["targetNodeId"]: e for e in t["edges"]}
    targets = [e["targetNodeId"] for e in t["edges"]]
    assert targets.index(n["b1"].id) < targets.index(n["b2"].id)
    assert edges[n["v1"].id]["type"] == "continuation"
    assert edges[n["v1"].id]["extensions"]["loom"]["kind"] == "version"
    assert [s["nodeId"] for s in edges[n["c"].id]["sources"]] == [n["b1"].id, n["v1"].id,
                                                                  n["v2"].id]
    assert edges[n["c"].id]["extensions"]["loom"]["positions"] == [0, 0, 0]
    assert [(s["nodeId"], s["role"]) for s in edges[n["multi"].id]["sources"]] == [
        (n["c"].id, "primary"), (n["b2"].id, "context"), (n["a"].id, "instruction")]
    assert edges[n["ann"].id]["type"] == "annotation"
    kinds = sorted(link["target"]["kind"] for link in t["extensions"]["loom"]["links"])
    assert kinds == ["doc", "node", "tree"]
    assert [d["name"] for d in data["extensions"]["loom"]["documents"]] == ["notes"]
    assert sorted(a["name"] for a in data["agents"].values()) == ["claude", "human", "model"]
    assert "key" not in json.dumps(data["agents"]).lower()


def test_structure_survives(exported: tuple[dict[str, Any], Built, dict[str, Any]],
                            tmp_path: Path) -> None:
    data, built, _ = exported
    n = built.nodes
    ws = fresh(tmp_path / "copy.db")
    tree = import_openloom(ws, data).trees[0].tree
    assert ws.node_count(tree) == 11
    b1, v1, v2 = (ws.node(n[k].id) for k in ("b1", "v1", "v2"))
    assert [x.id for x in ws.children(v1)] == [n["c"].id, n["d"].id]
    assert [x.id for x in ws.children(b1)] == [n["c"].id]
    assert ws.resolve(tree, n["b1"].local_id + "''").id == v2.id
    assert [x.id for x in ws.path(ws.node(n["c"].id))] == [n[k].id for k in
                                                           ("root", "a", "v2", "c")]
    assert ws.resolve(tree, "ann-2").id == n["ann2"].id
    links = {link.target_kind: link for link in Link.select().where(Link.tree == tree.id)}
    assert links["tree"].target_tree == built.other.id
    doc = Document.get(Document.name == "notes")
    assert (links["doc"].target_doc, links["doc"].target_section) == (doc.id, "marie")
    gen = Generation.get(Generation.node == n["b2"].id)
    assert json.loads(RawResponse.get_by_id(gen.raw).body)["id"] == "cmpl-1"
    assert Generation.get(Generation.node == n["b1"].id).raw == gen.raw  # stored once


def test_reimport_makes_a_copy_that_exports_as_the_original(
        exported: tuple[dict[str, Any], Built, dict[str, Any]], tmp_path: Path) -> None:
    data, _, _ = exported
    ws = fresh(tmp_path / "copy.db")
    first = import_openloom(ws, copy.deepcopy(data)).trees[0].tree
    again = import_openloom(ws, copy.deepcopy(data)).trees[0].tree
    assert again.id != first.id and again.title == "Marie (2)"
    assert ws.node_count(again) == ws.node_count(first) == 11
    assert not {n.id for n in Node.select().where(Node.tree == again.id)} & set(
        data["trees"][0]["nodes"])  # remapped on collision...
    assert Document.select().count() == 1  # the same document is not imported twice
    # ... with the originals kept: the copy exports as the file it came from.
    assert without_export_stamp(export_openloom(ws, again)) == without_export_stamp(data)
    lid = data["trees"][0]["nodes"][data["trees"][0]["rootNodeIds"][0]]["extensions"][
        "loom"]["localId"]
    assert ws.resolve(again, lid).id == again.root
    # Changed in Loom after the import: Loom's state wins over what the file said.
    ws.update_tree(again, title="Marie, again")
    root = ws.node(again.root)
    ws.set_flags(root, bookmarked=True)
    out = export_openloom(ws, again)["trees"][0]
    assert out["title"] == "Marie, again"
    assert out["nodes"][data["trees"][0]["rootNodeIds"][0]]["meta"] == {"bookmarked": True}


def test_unknown_fields_and_extensions_are_kept(
        exported: tuple[dict[str, Any], Built, dict[str, Any]], tmp_path: Path) -> None:
    data, built, _ = exported
    t = data["trees"][0]
    data["extensions"]["exoloom"] = {"workspace": "w1"}
    data["colour"] = "green"
    t["colour"] = "blue"
    t["extensions"]["exoloom"] = {"pinned": True}
    node = t["nodes"][built.nodes["c"].id]
    node["mood"] = "tense"
    node["extensions"]["exoloom"] = {"score": 3}
    node["extensions"]["loom"]["futureField"] = [1, 2]
    node["meta"]["tags"] = ["x"]
    t["edges"][0]["weight"] = 0.5
    t["edges"][0]["extensions"] = {"exoloom": {"x": 1}}
    t["extensions"]["loom"]["links"][0]["colour"] = "red"
    ws = fresh(tmp_path / "copy.db")
    tree = import_openloom(ws, copy.deepcopy(data)).trees[0].tree
    assert without_export_stamp(export_openloom(ws, tree)) == without_export_stamp(data)


def test_permissions_are_not_granted_by_a_file(
        exported: tuple[dict[str, Any], Built, dict[str, Any]], tmp_path: Path) -> None:
    data, _, _ = exported
    for agent in data["agents"].values():
        if agent["name"] == "claude":
            agent["extensions"]["loom"].update(
                permissions=["loom_aware", "loom_write", "cross_tree"], loomAware=True)
    ws = fresh(tmp_path / "copy.db")
    import_openloom(ws, copy.deepcopy(data))
    claude = Participant.get(Participant.name == "claude")
    assert (claude.kind, claude.role, claude.permissions, claude.loom_aware) == (
        "model", "collaborator", [], False)
    assert Participant.get(Participant.name == "human").permissions  # left as it is
    ws.db.close()
    ws = fresh(tmp_path / "trusted.db")
    import_openloom(ws, copy.deepcopy(data), trust_permissions=True)
    claude = Participant.get(Participant.name == "claude")
    assert claude.permissions == ["loom_aware", "loom_write", "cross_tree"]
    assert claude.loom_aware


def test_a_document_of_the_same_name_is_not_overwritten(
        exported: tuple[dict[str, Any], Built, dict[str, Any]], tmp_path: Path) -> None:
    data, _, _ = exported
    ws = fresh(tmp_path / "copy.db")
    mine = ws.create_document("notes", "my own notes")
    tree = import_openloom(ws, data).trees[0].tree
    assert Document.get_by_id(mine.id).content == "my own notes"
    imported = Document.get(Document.name == "notes (2)")
    link = Link.get((Link.tree == tree.id) & (Link.target_kind == "doc"))
    assert link.target_doc == imported.id and imported.content.startswith("# Notes")


def test_root_versions_and_dialogue_versions_round_trip(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "origin.db")
    human, model = ws.human(), ws.subject()
    buffer = ws.create_tree("Draft", "buffer", root_content="It was dark.")
    root = ws.node(buffer.root)
    first = ws.add_node(buffer, root, " Very dark.", model)
    root_v = ws.add_version(buffer, root, "It was night.", human)  # no incoming edge
    chat = ws.create_tree("Chat", "dialogue")
    q = ws.add_node(chat, ws.node(chat.root), "Hi", human)
    a = ws.add_node(chat, q, "Hello.", model)
    a_v = ws.add_version(chat, a, "Hello there.", human)  # a sibling branch
    exports = [json.loads(json.dumps(export_openloom(ws, t))) for t in (buffer, chat)]
    assert exports[0]["trees"][0]["rootNodeIds"] == [root.id, root_v.id]
    rows = [tree_rows(ws, t) for t in (buffer, chat)]
    ws.db.close()
    ws = fresh(tmp_path / "copy.db")
    trees = [import_openloom(ws, data).trees[0].tree for data in exports]
    assert [tree_rows(ws, t) for t in trees] == rows
    assert [without_export_stamp(export_openloom(ws, t)) for t in trees] == [
        without_export_stamp(e) for e in exports]
    assert [n.id for n in ws.path(ws.node(first.id))] == [root_v.id, first.id]
    assert [n.id for n in ws.children(ws.node(q.id))] == [a.id, a_v.id]


def test_files_of_earlier_loom_versions_still_import(tmp_path: Path) -> None:
    """The dialect Loom wrote before the published draft: detected and converted."""
    human, model = {"name": "ana", "role": "human"}, {"name": "gpt", "role": "model"}
    raw_id = "01J00000000000000000000RAW"
    data = {
        "format": "open-loom", "version": "2.0",
        "trees": [{
            "id": "01J0000000000000000000TREE", "title": "Elsewhere", "mode": "dialogue",
            "created": "2024-05-01T10:00:00Z", "updated": "2024-05-01T11:00:00Z",
            "root": "r", "summary": "A trip.", "summarySource": "model",
            "nodes": {
                "r": {"content": "", "author": human, "kind": "root"},
                "q": {"content": "Where are we?", "author": human, "bookmarked": True},
                "x": {"content": "In a forest.", "author": model,
                      "generation": {"id": "01J0000000000000000000GEN0", "provider": "openai",
                                     "model": "gpt-4o", "params": {"temperature": 1},
                                     "usage": {"prompt_tokens": 3}, "latencyMs": 10.5,
                                     "completionIndex": 0, "created": "2024-05-01T10:01:00Z",
                                     "rawId": raw_id}},
                "y": {"content": "On a boat.", "author": model},
                "y2": {"content": "On a ship.", "author": human, "editedFrom": "y"},
                "n": {"content": "Odd answer.", "author": human, "mood": "odd",
                      "extensions": {"loom": {"annNumber": 4}, "exoloom": {"k": 1}}},
            },
            "edges": [
                {"target": "q", "sources": [{"node": "r"}]},
                {"target": "y", "sources": [{"node": "q"}]},
                {"target": "x", "sources": [{"node": "q"}]},
                {"target": "y2", "sources": [{"node": "q"}]},
                {"target": "n", "kind": "annotation", "sources": [{"node": "y"}]},
            ],
            "links": [{"source": "x", "target": {"kind": "node", "node": "y"},
                       "note": "compare", "author": "ana"}],
            "extensions": {"loom": {"annCounter": 4, "rawResponses": {
                raw_id: json.dumps({"id": "cmpl-9"})}}},
        }],
        "participants": [{"name": "gpt", "kind": "model", "role": "subject"}],
    }
    ws = fresh(tmp_path / "copy.db")
    report = import_data(ws, copy.deepcopy(data))
    assert report.format == "Open Loom as earlier Loom versions wrote it"
    assert report.repairs == []
    tree = report.trees[0].tree
    assert (tree.title, tree.mode, tree.summary, ws.node_count(tree)) == (
        "Elsewhere", "dialogue", "A trip.", 6)
    q = ws.children(ws.node(tree.root))[0]
    assert q.bookmarked and q.content == "Where are we?"
    y, x, y2 = ws.children(q)
    assert [c.content for c in (y, x, y2)] == ["On a boat.", "In a forest.", "On a ship."]
    assert (y2.version_of, y2.label) == (y.id, y.label + "'")
    note = ws.children(y, "annotation")[0]
    assert note.label == "ann-4" and Tree.get_by_id(tree.id).ann_counter == 4
    gen = Generation.get(Generation.node == x.id)
    assert (gen.model, gen.latency_ms, gen.usage) == ("gpt-4o", 10.5, {"prompt_tokens": 3})
    assert json.loads(RawResponse.get_by_id(gen.raw).body) == {"id": "cmpl-9"}
    assert Participant.get_by_id(x.author_id).name == "gpt"
    link = Link.get(Link.tree == tree.id)
    assert (link.source, link.target_node, link.note) == (x.id, y.id, "compare")
    out = export_openloom(ws, tree)["trees"][0]
    assert out["rootNodeIds"] and "root" not in out  # written in the published shape
    ext = out["nodes"]["n"]["extensions"]
    assert ext["exoloom"] == {"k": 1} and out["nodes"]["n"]["mood"] == "odd"


# ── Markdown export (here until it has a test file of its own) ───────────────────
def test_markdown_buffer_is_continuous_prose(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    built = build(ws)
    tip = built.nodes["c"]
    assert export_markdown(ws, built.tree, tip) == (
        "# Marie\n\nA story about Marie.\n\nMarie stood at the door. The rain had stopped. "
        "She strolled into the street. Thomas was waiting.\n")
    with_notes = export_markdown(ws, built.tree, tip, annotations=True)
    assert with_notes.endswith(
        "She strolled into the street. Thomas was waiting.[^ann-2]\n\n"
        "[^ann-2]: **human**: Thomas again.\n")


def test_markdown_dialogue_has_a_block_per_node(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    human, model = ws.human(), ws.subject()
    tree = ws.create_tree("Chat", "dialogue", description="Two lines.",
                          system_context="Be brief.\nBe kind.")
    q = ws.add_node(tree, ws.node(tree.root), "Hello?", human)
    a = ws.add_node(tree, q, "Hi.\n\nHow can I help?", model)
    ws.add_node(tree, a, "Friendly.", human, kind="annotation")
    for n in (q, a):
        Node.update(created=1_700_000_000).where(Node.id == n.id).execute()
    text = export_markdown(ws, tree, ws.node(a.id))
    assert text == (
        "# Chat\n\nTwo lines.\n\n**System context**\n\n> Be brief.\n> Be kind.\n\n"
        "**human** · 2023-11-14 22:13 UTC\n\nHello?\n\n"
        "**model** · 2023-11-14 22:13 UTC\n\nHi.\n\nHow can I help?\n")
    noted = export_markdown(ws, tree, ws.node(a.id), annotations=True)
    assert noted.startswith(text.rstrip("\n"))
    assert "\n\n> **human** · ann-1 · " in noted and noted.endswith("\n>\n> Friendly.\n")


def test_markdown_of_a_node_from_another_tree_is_an_error(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    built = build(ws)
    with pytest.raises(LoomError) as err:
        export_markdown(ws, built.other, built.nodes["c"])
    assert err.value.code == "CROSS_TREE"
