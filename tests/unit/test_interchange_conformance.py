"""The draft's own examples import into the right tree and re-export unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from loom.interchange import ExportOptions, import_data
from loom.interchange.openloom import export_openloom
from loom.store.schema import Generation, Media, Node, Participant, Position, RawResponse, Tree
from tests.unit.interchange_support import (
    MINIMAL,
    RAW_BODY,
    fresh,
    rich,
    without_export_stamp,
)


def test_the_minimal_example(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    report = import_data(ws, copy.deepcopy(MINIMAL))
    assert report.repairs == [] and report.format == "Open Loom 2.0"
    tree = report.trees[0].tree
    assert (tree.title, tree.mode, report.trees[0].nodes) == ("Hello", "dialogue", 3)
    root = ws.node(tree.root)
    b, c = ws.children(root)  # sibling order is edge order
    assert (root.content, b.content, c.content) == (
        "Once upon a time", " there was a fox.", " there was a loom.")
    assert (root.author_type, b.author_type) == ("human", "model")
    assert Participant.get_by_id(b.author_id).name == "model"
    human = ws.human()
    assert Position.get((Position.participant == human.id) & (Position.tree == tree.id)).node \
        == c.id
    assert without_export_stamp(export_openloom(ws, tree)) == MINIMAL


def test_the_rich_examples(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    doc = rich()
    report = import_data(ws, copy.deepcopy(doc))
    assert report.repairs == []
    made = report.trees[0]
    assert (made.nodes, made.bookmarks, made.images, made.audio, made.unverified) == (
        5, 1, 1, 1, [])
    assert report.summary(made) == (
        'imported "Marie Character Study" (5 nodes, 1 bookmark, 1 image and 1 audio file '
        "kept)")
    tree = made.tree
    assert (tree.mode, tree.system_context) == ("dialogue",
                                                "You are Marie, a painter in 1920s Paris.")
    nodes = {n.extra["interchange"]["id"]: n for n in Node.select().where(Node.tree == tree.id)}
    root, a1, a2, b, note = (nodes[k] for k in ("n-root", "n-a7x1", "n-a7x2", "n-b3k9",
                                                "n-note"))
    # Authors from the agent registry, a name as fallback.
    claude = Participant.get(Participant.name == "Claude Creative")
    asher = Participant.get(Participant.name == "Asher")
    assert (claude.kind, asher.kind) == ("model", "human")
    assert (a2.author_id, root.author_id, note.author_id) == (claude.id, asher.id, asher.id)
    assert claude.permissions == []  # a file grants no permissions
    # Edit lineage: a dialogue-mode version of its original, a sibling.
    assert (a2.edited_from, a2.version_of, a2.version_number, a2.label) == (
        a1.id, a1.id, 1, a1.label + "'")
    siblings = [x.id for x in ws.children(root)]
    assert siblings.index(a1.id) < siblings.index(a2.id)
    # The hyperedge: the primary source is the parent, the context source is kept.
    assert b.parent == a2.id and b.id in siblings
    assert [n.id for n in ws.path(b)] == [root.id, a2.id, b.id]
    # Content blocks: text as text, media as a placeholder with their alt text.
    assert b.content == "Like this one?[image: Marie at the window][audio: rain on the glass]"
    assert Media.select().count() == 2
    # Annotations, flags, provenance.
    assert (note.kind, note.label, note.depth) == ("annotation", "ann-1", a2.depth)
    assert a2.bookmarked and not a2.pruned
    gen = Generation.get(Generation.node == a2.id)
    assert (gen.provider, gen.model, gen.latency_ms, gen.usage) == (
        "openrouter", "anthropic/claude-sonnet-4.5", 1830.0,
        {"prompt_tokens": 912, "completion_tokens": 208})
    assert RawResponse.get_by_id(gen.raw).body == RAW_BODY  # gzip+base64, inflated
    # Unchanged on re-export, up to key order.
    again = export_openloom(ws, tree)
    assert without_export_stamp(again) == without_export_stamp(doc)
    assert again["generator"]["name"] == "Loom"


def test_export_options_leave_out_what_is_private(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    tree = import_data(ws, rich()).trees[0].tree
    out = export_openloom(ws, tree, ExportOptions(system_context=False, raw_responses=False,
                                                  agent_prompts=False))
    t = out["trees"][0]
    assert "systemContext" not in t
    gen = t["nodes"]["n-a7x2"]["generation"]
    assert "rawResponse" not in gen and gen["contentHash"].startswith("sha256:9f2b")
    config = out["agents"]["agent-claude-creative"]["configuration"]
    assert config == {"temperature": 1.0}
    assert "Write vividly" not in json.dumps(out) and "1920s" not in json.dumps(out)


def test_a_failed_hash_check_flags_the_tree_and_still_loads(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    doc = rich()
    raw = doc["trees"][0]["nodes"]["n-a7x2"]["generation"]["rawResponse"]
    raw["bodyHash"] = "sha256:" + "0" * 64
    report = import_data(ws, copy.deepcopy(doc))
    made = report.trees[0]
    assert made.unverified == ['trees[0].nodes["n-a7x2"].generation.rawResponse.bodyHash '
                               "does not match the body"]
    assert "is unverified" in report.text()
    assert Tree.get_by_id(made.tree.id).extra["interchange"]["unverified"] == made.unverified
    # Kept verbatim: nothing is re-hashed.
    assert without_export_stamp(export_openloom(ws, made.tree)) == without_export_stamp(doc)


def test_loom_checks_its_own_hash_chain(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    tree = ws.create_tree("Chain", "buffer", root_content="It began.")
    child = ws.add_node(tree, ws.node(tree.root), " Then rain.", ws.subject())
    Generation.create(id="01J00000000000000000000GEN", node=child.id, provider="local",
                      model="m", params={}, usage={}, completion_index=0, created=1.0)
    doc = export_openloom(ws, tree)
    ws.db.close()
    node = doc["trees"][0]["nodes"][child.id]
    assert node["generation"]["contentHash"] == "sha256:" + child.content_hash
    node["content"][0]["text"] = " Then snow."  # edited by hand after the export
    ws = fresh(tmp_path / "b.db")
    made = import_data(ws, doc).trees[0]
    assert made.unverified == [f'trees[0].nodes["{child.id}"].generation.contentHash does '
                               "not match the node's text"]


def test_a_later_minor_version_is_read_and_written_back(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "loom.db")
    doc = copy.deepcopy(MINIMAL)
    doc["version"] = "2.3"
    doc["trees"][0]["futureField"] = {"x": 1}
    doc["trees"][0]["nodes"]["a"]["content"].append({"type": "video", "ref": "clip.mp4"})
    report = import_data(ws, copy.deepcopy(doc))
    assert report.format == "Open Loom 2.3"
    root = ws.node(report.trees[0].tree.root)
    assert root.content == "Once upon a time[video]"  # an unknown block: a placeholder
    assert without_export_stamp(export_openloom(ws, report.trees[0].tree)) == doc
