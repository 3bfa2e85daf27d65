"""Open Loom 2.0: export → import → export is exact, and the tree's structure survives."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import import_file
from loom.interchange.markdown import export_markdown
from loom.interchange.openloom import export_openloom, import_openloom, parse_openloom
from loom.store.db import open_database
from loom.store.schema import Document, Generation, Link, Node, Participant, RawResponse, Tree
from loom.store.workspace import Workspace


def fresh(path: Path) -> Workspace:
    """A workspace as the app opens one (the human and the subject model exist). The store
    binds one global database, so a test uses one workspace at a time."""
    ws = Workspace(open_database(path))
    ws.human()
    ws.subject()
    return ws


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
def exported(tmp_path: Path) -> tuple[dict[str, Any], Built]:
    ws = fresh(tmp_path / "origin.db")
    built = build(ws)
    data = json.loads(json.dumps(export_openloom(ws, built.tree)))  # it is plain JSON
    ws.db.close()
    return data, built


def test_round_trip_is_exact(exported: tuple[dict[str, Any], Built], tmp_path: Path) -> None:
    first, _ = exported
    ws = fresh(tmp_path / "copy.db")
    trees = import_openloom(ws, copy.deepcopy(first))
    assert len(trees) == 1
    second = export_openloom(ws, trees[0])
    assert second == first
    assert trees[0].id == first["trees"][0]["id"]  # ULIDs kept when nothing clashes


def test_export_shape(exported: tuple[dict[str, Any], Built]) -> None:
    data, built = exported
    parse_openloom(data)  # validates against the format's own model
    assert (data["format"], data["version"]) == ("open-loom", "2.0")
    t = data["trees"][0]
    n = built.nodes
    assert t["root"] == n["root"].id and len(t["nodes"]) == 11
    assert next(iter(t["nodes"])) == n["root"].id
    assert t["summary"] == "Marie decides whether to go out." and t["summarySource"] == "model"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", t["created"])
    b1 = t["nodes"][n["b1"].id]
    assert b1["author"] == {"name": "model", "role": "model"}
    assert b1["generation"]["model"] == "davinci-002"
    assert b1["generation"]["latencyMs"] == 812.5
    assert b1["generation"]["rawId"] in t["extensions"]["loom"]["rawResponses"]
    v2 = t["nodes"][n["v2"].id]
    assert v2["editedFrom"] == n["v1"].id
    assert v2["extensions"]["loom"]["versionOf"] == n["b1"].id
    assert v2["extensions"]["loom"]["label"] == n["b1"].local_id + "''"
    # Edge order is sibling order; the shared edge lists the parent first, versions after.
    edges = {e["target"]: e for e in t["edges"]}
    targets = [e["target"] for e in t["edges"]]
    assert targets.index(n["b1"].id) < targets.index(n["b2"].id)
    assert edges[n["v1"].id]["kind"] == "version"
    assert [s["node"] for s in edges[n["c"].id]["sources"]] == [n["b1"].id, n["v1"].id,
                                                                n["v2"].id]
    assert edges[n["c"].id]["sources"][1]["position"] == 0
    assert [(s["node"], s["role"]) for s in edges[n["multi"].id]["sources"]] == [
        (n["c"].id, "primary"), (n["b2"].id, "context"), (n["a"].id, "instruction")]
    assert edges[n["ann"].id]["kind"] == "annotation"
    kinds = sorted(link["target"]["kind"] for link in t["links"])
    assert kinds == ["doc", "node", "tree"]
    assert [d["name"] for d in data["documents"]] == ["notes"]
    assert [p["name"] for p in data["participants"]] == ["claude", "human", "model"]
    assert all("key" not in json.dumps(p).lower() for p in data["participants"])


def test_structure_survives(exported: tuple[dict[str, Any], Built], tmp_path: Path) -> None:
    data, built = exported
    n = built.nodes
    ws = fresh(tmp_path / "copy.db")
    tree = import_openloom(ws, data)[0]
    assert ws.node_count(tree) == 11
    # The buffer-mode versions share the original's descendants and take its place.
    b1, v1, v2 = (ws.node(n[k].id) for k in ("b1", "v1", "v2"))
    assert [x.id for x in ws.children(v1)] == [n["c"].id, n["d"].id]
    assert [x.id for x in ws.children(v2)] == [n["c"].id, n["d"].id]
    assert [x.id for x in ws.children(b1)] == [n["c"].id]
    assert ws.resolve(tree, n["b1"].local_id + "''").id == v2.id
    assert [x.id for x in ws.path(ws.node(n["c"].id))] == [n[k].id for k in
                                                           ("root", "a", "v2", "c")]
    # Annotations, localIds, labels, flags, summaries, extra.
    assert ws.resolve(tree, "ann-1").id == n["ann"].id
    assert ws.resolve(tree, "ann-2").id == n["ann2"].id
    for key, original in n.items():
        got = ws.node(original.id)
        assert (got.local_id, got.label, got.depth, got.parent, got.content_hash) == (
            original.local_id, original.label, original.depth, original.parent,
            original.content_hash), key
    assert ws.node(n["b2"].id).bookmarked and ws.node(n["c"].id).excluded
    assert (ws.node(n["a"].id).summary, ws.node(n["a"].id).summary_source) == (
        "The rain stops.", "model")
    assert ws.node(n["d"].id).extra == {"socketteer": {"id": "abc", "tags": ["demo"]}}
    assert Tree.get_by_id(tree.id).ann_counter == 2
    # Links to a node, a tree (not in this database: kept as it was) and a doc section.
    links = {link.target_kind: link for link in Link.select().where(Link.tree == tree.id)}
    assert links["node"].target_node == n["b2"].id and links["node"].note == "the other choice"
    assert links["tree"].target_tree == built.other.id
    doc = Document.get(Document.name == "notes")
    assert (links["doc"].target_doc, links["doc"].target_section) == (doc.id, "marie")
    assert Participant.get(Participant.name == "claude").id == links["tree"].author
    # Provenance, with the raw response stored once.
    gen = Generation.get(Generation.node == n["b2"].id)
    assert (gen.provider, gen.model, gen.completion_index, gen.latency_ms) == (
        "openai", "davinci-002", 1, 812.5)
    assert gen.params == {"temperature": 0.9, "max_tokens": 50}
    assert json.loads(RawResponse.get_by_id(gen.raw).body)["id"] == "cmpl-1"


def _canonical(data: dict[str, Any]) -> dict[str, Any]:
    """The document with ids replaced by names that do not depend on the database."""
    t = data["trees"][0]
    names = {t["id"]: "TREE"}
    for nid, node in t["nodes"].items():
        names[nid] = "N:" + node["extensions"]["loom"]["localId"]
        if node["generation"]:
            names[node["generation"]["id"]] = "G:" + names[nid]
    for i, link in enumerate(t["links"]):
        names[link["id"]] = f"L{i}"
    for i, rid in enumerate(t["extensions"]["loom"].get("rawResponses", {})):
        names[rid] = f"R{i}"
    text = json.dumps(data, sort_keys=True)
    for old, new in names.items():
        text = text.replace(old, new)
    out = json.loads(text)
    out["trees"][0]["title"] = "TITLE"
    return out


def test_reimport_makes_a_copy(exported: tuple[dict[str, Any], Built], tmp_path: Path) -> None:
    data, _ = exported
    ws = fresh(tmp_path / "copy.db")
    first = import_openloom(ws, data)[0]
    again = import_openloom(ws, data)[0]
    assert again.id != first.id and again.title == "Marie (2)"
    assert ws.node_count(again) == ws.node_count(first) == 11
    assert Document.select().count() == 1  # the same document is not imported twice
    export_again = export_openloom(ws, again)
    assert not set(export_again["trees"][0]["nodes"]) & set(data["trees"][0]["nodes"])
    assert _canonical(export_again) == _canonical(data)
    # The copy's versions still take their original's place (ids keep their order).
    lid = data["trees"][0]["nodes"][data["trees"][0]["root"]]["extensions"]["loom"]["localId"]
    assert ws.resolve(again, lid).id == again.root


def test_unknown_fields_and_extensions_are_kept(exported: tuple[dict[str, Any], Built],
                                                tmp_path: Path) -> None:
    data, built = exported
    t = data["trees"][0]
    data["generator"] = "another loom 0.3"
    data["extensions"] = {"exoloom": {"workspace": "w1"}}
    t["colour"] = "blue"
    t["extensions"]["exoloom"] = {"pinned": True}
    node = t["nodes"][built.nodes["c"].id]
    node["mood"] = "tense"
    node["extensions"]["exoloom"] = {"score": 3}
    node["extensions"]["loom"]["futureField"] = [1, 2]
    t["edges"][0]["weight"] = 0.5
    t["edges"][0]["extensions"]["exoloom"] = {"x": 1}
    t["links"][0]["colour"] = "red"
    ws = fresh(tmp_path / "copy.db")
    tree = import_openloom(ws, copy.deepcopy(data))[0]
    assert export_openloom(ws, tree) == data


def test_permissions_are_not_granted_by_a_file(exported: tuple[dict[str, Any], Built],
                                               tmp_path: Path) -> None:
    data, _ = exported
    for p in data["participants"]:
        if p["name"] == "claude":
            p.update(permissions=["loom_aware", "loom_write", "cross_tree"], loomAware=True)
    ws = fresh(tmp_path / "copy.db")
    import_openloom(ws, data)
    claude = Participant.get(Participant.name == "claude")
    assert (claude.kind, claude.role, claude.permissions, claude.loom_aware) == (
        "model", "collaborator", [], False)
    human = Participant.get(Participant.name == "human")
    assert human.permissions  # an existing participant is left as it is
    ws.db.close()
    ws = fresh(tmp_path / "trusted.db")
    import_openloom(ws, data, trust_permissions=True)
    claude = Participant.get(Participant.name == "claude")
    assert claude.permissions == ["loom_aware", "loom_write", "cross_tree"]
    assert claude.loom_aware


def test_a_document_of_the_same_name_is_not_overwritten(
        exported: tuple[dict[str, Any], Built], tmp_path: Path) -> None:
    data, _ = exported
    ws = fresh(tmp_path / "copy.db")
    mine = ws.create_document("notes", "my own notes")
    tree = import_openloom(ws, data)[0]
    assert Document.get_by_id(mine.id).content == "my own notes"
    imported = Document.get(Document.name == "notes (2)")
    link = Link.get((Link.tree == tree.id) & (Link.target_kind == "doc"))
    assert link.target_doc == imported.id and imported.content.startswith("# Notes")


def test_a_minimal_file_from_another_loom(tmp_path: Path) -> None:
    """No Loom extensions, ids that are not ULIDs: Loom derives what it needs."""
    human, model = {"name": "ana", "role": "human"}, {"name": "gpt", "role": "model"}
    data = {
        "format": "open-loom", "version": "2.0",
        "trees": [{
            "title": "Elsewhere", "mode": "dialogue",
            "nodes": {
                "r": {"content": "", "author": human},
                "q": {"content": "Where are we?", "author": human},
                "x": {"content": "In a forest.", "author": model},
                "y": {"content": "On a boat.", "author": model},
                "y2": {"content": "On a ship.", "author": human, "editedFrom": "y"},
                "n": {"content": "Odd answer.", "author": human},
            },
            "edges": [
                {"target": "q", "sources": [{"node": "r"}]},
                {"target": "y", "sources": [{"node": "q"}]},
                {"target": "x", "sources": [{"node": "q"}]},
                {"target": "y2", "sources": [{"node": "q"}]},
                {"target": "n", "kind": "annotation", "sources": [{"node": "y"}]},
            ],
        }],
    }
    path = tmp_path / "elsewhere.openloom"
    path.write_text(json.dumps(data), encoding="utf-8")
    ws = fresh(tmp_path / "copy.db")
    tree = import_file(ws, path)[0]
    assert (tree.title, tree.mode, ws.node_count(tree)) == ("Elsewhere", "dialogue", 6)
    root = ws.node(tree.root)
    assert root.content == "" and root.kind == "root"
    q = ws.children(root)[0]
    assert [c.content for c in ws.children(q)] == ["On a boat.", "In a forest.", "On a ship."]
    y, _, y2 = ws.children(q)
    assert (y2.edited_from, y2.version_of, y2.version_number, y2.label) == (
        y.id, y.id, 1, y.label + "'")
    note = ws.children(y, "annotation")[0]
    assert (note.label, note.depth, note.kind) == ("ann-1", y.depth, "annotation")
    assert ws.resolve(tree, y.local_id).id == y.id
    gpt = Participant.get(Participant.name == "gpt")
    assert y.author_id == gpt.id and gpt.kind == "model"
    assert [n.depth for n in ws.path(y)] == [0, 1, 2]
    again = export_openloom(ws, tree)
    ws.db.close()
    ws = fresh(tmp_path / "third.db")
    assert export_openloom(ws, import_openloom(ws, again)[0]) == again


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
    ws.db.close()
    ws = fresh(tmp_path / "copy.db")
    trees = [import_openloom(ws, data)[0] for data in exports]
    assert [export_openloom(ws, t) for t in trees] == exports
    assert [n.id for n in ws.path(ws.node(first.id))] == [root_v.id, first.id]
    assert ws.node(root_v.id).depth == 0 and ws.node(root_v.id).label.endswith("'")
    assert [n.id for n in ws.children(ws.node(q.id))] == [a.id, a_v.id]
    assert ws.resolve(trees[1], ws.node(a.id).label + "'").id == a_v.id


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
