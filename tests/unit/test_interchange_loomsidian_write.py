"""Loom → loomsidian: the data.json the Obsidian plugin loads, checked against a validator
written from the plugin's loader, and round trips through it.

The validator follows cosmicoptima/loom (the plugin's repository) at commit
afbb3519f10d668d4688c68370d7b9305c9f80dc: main.ts ``loadState`` takes ``data.state`` as it
is (``(await this.loadData())?.state || {}``), ``onFileOpen`` indexes
``state[file.path]`` and walks ``ancestors(file, state.current)`` through
``state.nodes[id].parentId`` without a check, ``fullText`` joins the texts from the root;
views.ts lists roots as ``Object.entries(state.nodes)`` whose ``parentId === null`` and
children as those whose ``parentId`` is the node (so in JS key order, where integer-like
keys come first), and reads ``state.hoisted[state.hoisted.length - 1]``; common.ts gives a
node's fields (``text, parentId, collapsed, unread, bookmarked, lastVisited?,
searchResultState``) and a note's (``current, hoisted, searchTerm, nodes, generating``).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import import_data
from loom.interchange.loomsidian_write import write_loomsidian
from loom.interchange.openloom import export_document
from loom.interchange.openloom.render import ExportOptions
from loom.interchange.written import Written
from tests.unit.foreign_support import (
    CRLF_EMOJI,
    demo_document,
    document,
    every_feature_document,
    run_js,
    shape,
)
from tests.unit.interchange_support import MINIMAL, fresh
from tests.unit.test_interchange_loomsidian import DATA_JSON, SINGLE

_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")


def js_key_order(keys: list[str]) -> list[str]:
    """The order a JS object lists its keys in: array indexes ascending, then the rest."""
    index = sorted((k for k in keys if _INDEX_KEY.fullmatch(k) and int(k) < 2**32 - 1),
                   key=int)
    return index + [k for k in keys if k not in index]


def validate(data: Any, path: str) -> dict[str, Any]:
    """What the plugin does with ``data`` (a data.json) when the note ``path`` opens, or an
    AssertionError saying where it would break: the note's whole texts, roots, children in
    the order its views list them, current node and bookmarks."""
    state = (data or {}).get("state") or {}
    assert isinstance(state, dict), "state is an object keyed by note path"
    note = state.get(path)
    assert isinstance(note, dict), f"no state for {path}: the plugin would start a new one"
    nodes = note.get("nodes")
    assert isinstance(nodes, dict) and nodes, "nodes is a non-empty object"
    assert isinstance(note.get("hoisted"), list), "hoisted is an array"
    assert all(h in nodes for h in note["hoisted"]), "every hoisted id is a node"
    assert isinstance(note.get("searchTerm"), str) and note.get("generating") is None
    assert isinstance(note.get("current"), str) and note["current"] in nodes, \
        "current is a node (onFileOpen indexes it)"
    for key, node in nodes.items():
        assert isinstance(node, dict), key
        assert isinstance(node.get("text"), str), f"{key}: text is a string"
        parent = node.get("parentId", "missing")
        assert parent is None or parent in nodes, f"{key}: parentId is null or a node"
        for flag in ("collapsed", "unread", "bookmarked"):
            assert isinstance(node.get(flag), bool), f"{key}: {flag} is a boolean"
        assert node.get("searchResultState") in (None, "result", "ancestor", "none")
    order = js_key_order(list(nodes))
    full: dict[str, str] = {}
    for key in order:  # fullText, with ancestors' loop guard
        text, at, seen = "", key, set()
        while at is not None:
            assert at not in seen, f"{key}: its parentIds loop"
            seen.add(at)
            text = nodes[at]["text"] + text
            at = nodes[at]["parentId"]
        full[key] = text
    return {"texts": full,
            "roots": [k for k in order if nodes[k]["parentId"] is None],
            "children": {k: [c for c in order if nodes[c]["parentId"] == k] for k in order},
            "current": note["current"],
            "bookmarked": [k for k in order if nodes[k]["bookmarked"]]}


def written_path(w: Written) -> tuple[dict[str, Any], str]:
    data = json.loads(w.data)
    assert list(data) == ["state"] and len(data["state"]) == 1
    return data, next(iter(data["state"]))


def back(tmp_path: Path, w: Written) -> tuple[dict[str, Any], Any]:
    """The written file imported into a fresh Loom and exported again."""
    ws = fresh(tmp_path / "back.db")
    report = import_data(ws, json.loads(w.data), name="back")
    assert len(report.trees) == 1
    return document(ws, report.trees[0].tree), report


def held(s: dict[str, Any]) -> dict[str, Any]:
    """What loomsidian holds of a shape: no authorship, no models, no ratings."""
    return {"current": s["current"], "nodes": [
        {k: n[k] for k in ("path", "text", "full", "bookmarked")} for n in s["nodes"]]}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return demo_document(tmp_path_factory.mktemp("demo") / "demo.db")


@pytest.fixture(scope="module")
def every(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("every")
    return every_feature_document(d / "every.db", d / "scratch.db")


# ── the validator itself ─────────────────────────────────────────────────────────────


def test_the_validator_reads_the_plugins_own_data_json() -> None:
    got = validate(DATA_JSON | {"state": {"n.md": SINGLE | {"searchTerm": "",
                                                            "generating": None}}}, "n.md")
    assert got["texts"]["c"] == "The lighthouse keeper climbed the stairs. At the top, a light."
    assert got["roots"] == ["r"] and got["children"]["r"] == ["a", "b"]


@pytest.mark.parametrize("damage, message", [
    (lambda n: n.update(current="gone"), "current is a node"),
    (lambda n: n["nodes"]["a"].update(parentId="gone"), "parentId is null or a node"),
    (lambda n: n.pop("hoisted"), "hoisted is an array"),
    (lambda n: n["nodes"]["a"].update(text=None), "text is a string"),
])
def test_the_validator_refuses_what_the_plugin_would_break_on(damage: Any,
                                                              message: str) -> None:
    note = copy.deepcopy(SINGLE) | {"searchTerm": "", "generating": None}
    damage(note)
    with pytest.raises(AssertionError, match=message):
        validate({"state": {"n.md": note}}, "n.md")


def test_integer_like_keys_come_first_in_js() -> None:
    assert js_key_order(["b", "10", "a", "2"]) == ["2", "10", "b", "a"]


# ── the 764-node socketteer fixture ───────────────────────────────────────────────────


def test_the_demo_round_trips(demo: dict[str, Any], tmp_path: Path) -> None:
    w = write_loomsidian(demo)
    assert (w.media_type, w.extension) == ("application/json", ".json")
    data, path = written_path(w)
    assert path == f"{demo['trees'][0]['title']}.md"
    loaded = validate(data, path)
    assert len(loaded["texts"]) == 764
    again, report = back(tmp_path, w)
    assert report.repairs == []
    before, after = shape(demo), shape(again)
    assert held(after) == held(before)  # texts byte-exact, structure, order, bookmarks, current
    assert sum(n["bookmarked"] for n in after["nodes"]) == 22
    # What the plugin cannot hold is said, never dropped silently.
    said = " | ".join(w.cannot_hold)
    for what in ("authorship of 374 model-written", "tags of 432", "106 pruned",
                 "generation records of 368"):
        assert what in said, what


def test_the_demo_loads_in_the_plugins_steps_on_node(demo: dict[str, Any],
                                                     tmp_path: Path) -> None:
    w = write_loomsidian(demo)
    data, path = written_path(w)
    file = tmp_path / "data.json"
    file.write_text(w.data, encoding="utf-8")
    assert run_js("loomsidian_load.js", str(file), path) == validate(data, path)


# ── a tree with every feature ─────────────────────────────────────────────────────────


def test_every_feature_round_trips_what_loomsidian_holds(every: dict[str, Any],
                                                         tmp_path: Path) -> None:
    w = write_loomsidian(every)
    data, path = written_path(w)
    assert path == "Marie.md"
    loaded = validate(data, path)
    assert CRLF_EMOJI in "".join(loaded["texts"].values())
    again, _ = back(tmp_path, w)
    before, after = shape(every), shape(again)
    assert held(after) == held(before)
    assert before["current"] is not None and any(n["bookmarked"] for n in before["nodes"])
    said = " | ".join(w.cannot_hold)
    for what in ("model-written", "the model of", "tags of 1 node", "1 tag definition",
                 "1 pruned", "1 excluded", "ratings of 2", "notes of 1", "summaries of 1",
                 "token logprobs of 3", "edit lineage", "1 media block", "3 link(s)",
                 "2 annotation node(s)", "context/instruction source", "description"):
        assert what in said, (what, w.cannot_hold)
    assert all(s.endswith("loomsidian has no place for it") for s in w.cannot_hold)


def test_every_feature_loads_on_node(every: dict[str, Any], tmp_path: Path) -> None:
    w = write_loomsidian(every)
    data, path = written_path(w)
    file = tmp_path / "data.json"
    file.write_text(w.data, encoding="utf-8")
    assert run_js("loomsidian_load.js", str(file), path) == validate(data, path)


# ── trees that came from loomsidian ───────────────────────────────────────────────────


def test_a_note_goes_back_as_it_was(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    report = import_data(ws, copy.deepcopy(DATA_JSON))
    for imported in report.trees:
        doc, _ = export_document(ws, [imported.tree], ExportOptions())
        data, path = written_path(write_loomsidian(doc))
        original = DATA_JSON["state"][path]
        note = data["state"][path]
        validate(data, path)
        # Every field the plugin had is back, ids included; nothing else is added but
        # what the plugin's own new notes have.
        assert note["current"] == original["current"]
        assert note["hoisted"] == original["hoisted"]
        assert list(note["nodes"]) == list(original["nodes"])
        for key, node in original["nodes"].items():
            assert {k: v for k, v in note["nodes"][key].items() if k in node} == node, key
            assert set(note["nodes"][key]) - set(node) <= {"searchResultState"}
        assert set(note) - set(original) <= {"searchTerm", "generating"}
        assert "settings" not in data  # never written: they hold API keys


def test_a_note_whose_current_is_gone_opens_at_its_root(tmp_path: Path) -> None:
    note = copy.deepcopy(SINGLE)
    note["current"] = "nowhere"
    ws = fresh(tmp_path / "a.db")
    report = import_data(ws, note, name="keeper")
    doc, _ = export_document(ws, [report.trees[0].tree], ExportOptions(participant="nobody"))
    doc["trees"][0].pop("currentNodeId", None)
    data, path = written_path(write_loomsidian(doc))
    assert path == "keeper.md" and data["state"][path]["current"] == "r"


# ── ids, paths and bad input ──────────────────────────────────────────────────────────


def test_integer_like_ids_become_uuids_so_siblings_keep_their_order() -> None:
    doc = copy.deepcopy(MINIMAL)
    t = doc["trees"][0]
    t["nodes"] = {new: {**t["nodes"][old], "id": new}
                  for old, new in (("a", "10"), ("b", "9"), ("c", "x"))}
    t["rootNodeIds"], t["currentNodeId"] = ["10"], "x"
    for e, target in zip(t["edges"], ("9", "x"), strict=True):
        e["sources"][0]["nodeId"], e["targetNodeId"] = "10", target
    w1, w2 = write_loomsidian(doc), write_loomsidian(copy.deepcopy(doc))
    assert w1.data == w2.data  # reproducible
    data, path = written_path(w1)
    keys = list(data["state"][path]["nodes"])
    assert "x" in keys and "10" not in keys and "9" not in keys
    assert all(re.fullmatch(r"[0-9a-f-]{36}", k) for k in keys if k != "x")
    loaded = validate(data, path)
    root = loaded["roots"][0]
    assert [loaded["texts"][c] for c in loaded["children"][root]] == [
        "Once upon a time there was a fox.", "Once upon a time there was a loom."]
    assert loaded["current"] == "x"


@pytest.mark.parametrize("title, path", [
    ("Hello", "Hello.md"), ("a/b: c?", "a b c.md"), ("", "Untitled.md"), ("  ..", "Untitled.md"),
])
def test_the_note_path_comes_from_the_title(title: str, path: str) -> None:
    doc = copy.deepcopy(MINIMAL)
    doc["trees"][0]["title"] = title
    assert written_path(write_loomsidian(doc))[1] == path


def _bad(mutate: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL)
    mutate(doc)
    return doc


@pytest.mark.parametrize("doc, index, message", [
    ({}, 0, "not an Open Loom document"),
    ([], 0, "not an Open Loom document"),
    ({"format": "open-loom", "version": "2.0", "trees": []}, 0, "no trees"),
    (MINIMAL, 1, "trees 0 to 0"),
    (MINIMAL, -1, "trees 0 to 0"),
    (_bad(lambda d: d["trees"][0].update(nodes={})), 0, "no nodes"),
    (_bad(lambda d: d["trees"][0]["nodes"].update(b=[])), 0, "a node is a JSON object"),
    (_bad(lambda d: d["trees"][0]["nodes"]["b"].update(content="x")), 0, "content blocks"),
    (_bad(lambda d: d["trees"][0]["edges"][0].update(targetNodeId="zz")), 0,
     "source and target are nodes"),
    (_bad(lambda d: d["trees"][0]["edges"].append(
        {"type": "continuation", "sources": [{"nodeId": "b"}], "targetNodeId": "a"})), 0,
     "cycle"),
])
def test_bad_input_is_refused_with_where(doc: Any, index: int, message: str) -> None:
    with pytest.raises(LoomError, match=message) as e:
        write_loomsidian(copy.deepcopy(doc), index)
    assert e.value.code == "INVALID_SYNTAX"
