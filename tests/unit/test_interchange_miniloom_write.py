"""Loom → MiniLoom: the save MiniLoom loads, checked against a validator written from its
loader, and round trips through it.

The validator follows JD-P/miniloom at commit b559337da9c3d9f8a9bedd7c8795acc94bc6508c:
src/file-manager.js ``loadFileData`` hands ``data.loomTree`` to ``LoomTree.loadFromData``
and focuses ``nodeStore[data.focus.id]`` (else the root); src/model.js ``loadFromData``
copies each ``nodeStore`` entry (``id, type, parent, patch, summary, timestamp, rating,
read, children, model, error, finishReason``) and takes ``nodeStore["1"]`` as the root;
``applyPatches`` renders the root as ``""`` and any other node by applying, from the root
down, each ancestor's and its own patch with diff-match-patch's ``patch_apply`` (a ``""``
patch skipped); ``createNode`` names a new node ``String(count + 1)``, so ids are "1".."N";
src/preload.js makes patches with the npm ``diff-match-patch`` (^1.0.5 in package.json),
whose strings are JavaScript's: UTF-16 code units.
"""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import diff_match_patch as dmp_module
import pytest

from loom.errors import LoomError
from loom.interchange import import_data
from loom.interchange.miniloom_write import write_miniloom
from loom.interchange.openloom import export_document
from loom.interchange.openloom.render import ExportOptions
from loom.interchange.strict_tree import strict_tree
from loom.interchange.utf16 import from_units, to_units
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

DMP = dmp_module.diff_match_patch()


def _objects(patch: list[dict[str, Any]]) -> list[Any]:
    out = []
    for item in patch:
        assert set(item) == {"diffs", "start1", "start2", "length1", "length2"}
        p = dmp_module.patch_obj()
        assert all(isinstance(d, list) and len(d) == 2 and d[0] in (-1, 0, 1)
                   for d in item["diffs"]), "diffs are [operation, text] pairs"
        p.diffs = [(d[0], to_units(d[1])) for d in item["diffs"]]
        p.start1, p.start2 = item["start1"], item["start2"]
        p.length1, p.length2 = item["length1"], item["length2"]
        out.append(p)
    return out


def validate(data: Any) -> dict[str, Any]:
    """What MiniLoom does with a save, or an AssertionError saying where it would break:
    each node's rendered text, the focus, and the children lists."""
    store = data["loomTree"]["nodeStore"]
    assert isinstance(store, dict) and "1" in store, 'the root is nodeStore["1"]'
    assert sorted(store, key=int) == [str(i) for i in range(1, len(store) + 1)], \
        "ids are 1..N (createNode names the next String(count + 1))"
    for key, node in store.items():
        assert node["id"] == key, f"{key}: its id is its key"
        for field in ("timestamp", "type", "patch", "summary", "rating", "read", "parent",
                      "children", "model", "error", "finishReason"):
            assert field in node, f"{key}: has {field}"
        assert node["parent"] is None or node["parent"] in store, f"{key}: parent resolves"
        for child in node["children"]:
            assert store[child]["parent"] == key, f"{key}: child {child} names it"
        assert node["rating"] in (True, False, None)
        assert node["patch"] == "" or isinstance(node["patch"], list)
    assert store["1"]["parent"] is None and store["1"]["patch"] == ""
    texts: dict[str, str] = {}
    for key, node in store.items():  # applyPatches
        if key == "1":
            texts[key] = ""
            continue
        chain, at = [node["patch"]], node
        while at["parent"] is not None:
            at = store[at["parent"]]
            chain.append(at["patch"])
            assert len(chain) <= len(store), f"{key}: its parents loop"
        out = ""
        for patch in reversed(chain):
            if patch == "":
                continue
            out, results = DMP.patch_apply(_objects(patch), out)
            assert all(results), f"{key}: a hunk of its patches failed"
        texts[key] = from_units(out)
    focus = data.get("focus") or {}
    focused = focus.get("id") if focus.get("id") in store else "1"
    return {"texts": texts, "focus": focused,
            "children": {k: n["children"] for k, n in store.items()}, "failed": []}


def miniloom_save() -> dict[str, Any]:
    """A save as MiniLoom writes one (its patches as diff-match-patch 1.0.5 makes them):
    a user prompt, two generations by different models, a user rewrite (an edit anywhere),
    emoji before a split point, CRLF, ratings, summaries, and its own extra fields."""
    texts = {"1": "", "2": "Once upon a time 🦊", "3": "Once upon a time 🦊 a fox ran.\r\n",
             "4": "Once upon a time 🦊 a loom wove.", "5": "Long ago 🌍 a fox ran.\r\n",
             "6": "Long ago 🌍 a fox ran.\r\nThe end."}
    parents = {"2": "1", "3": "2", "4": "2", "5": "3", "6": "5"}
    kinds = {"1": "root", "2": "user", "3": "gen", "4": "gen", "5": "user", "6": "gen"}
    store: dict[str, Any] = {}
    for key, text in texts.items():
        parent = parents.get(key)
        patch = "" if parent is None else [
            {"diffs": [[op, from_units(t)] for op, t in p.diffs], "start1": p.start1,
             "start2": p.start2, "length1": p.length1, "length2": p.length2}
            for p in DMP.patch_make(to_units(texts[parent]), to_units(text))]
        store[key] = {"id": key, "timestamp": 1_754_000_000_000 + int(key) * 1234,
                      "type": kinds[key], "patch": patch,
                      "summary": "Root Node" if key == "1" else f"Branch {key}",
                      "rating": {"3": True, "4": False}.get(key), "read": key != "4",
                      "parent": parent,
                      "children": [k for k, p in parents.items() if p == key],
                      "model": {"3": "llama-3-70b", "4": "gpt-4", "6": "llama-3-70b"}.get(key),
                      "error": None, "finishReason": "stop" if kinds[key] == "gen" else None}
    focus = {**store["6"], "cachedRenderText": texts["6"], "depth": 4, "treeStats": {}}
    return {"loomTree": {"nodeStore": store}, "focus": focus,
            "samplerSettingsStore": {"temperature": 0.9}}


def back(tmp_path: Path, w: Written, name: str = "back") -> dict[str, Any]:
    ws = fresh(tmp_path / f"{name}.db")
    report = import_data(ws, json.loads(w.data), name=name)
    assert len(report.trees) == 1
    return document(ws, report.trees[0].tree)


def held(doc: dict[str, Any], *, after: bool = False, wrapped: bool = False
         ) -> dict[str, Any]:
    """What MiniLoom holds of a tree's shape: texts, structure, order, current node, who
    wrote each node (a model, or not), which model, the rating's sign. ``after``: the tree
    came back from MiniLoom (its models are kept fields); ``wrapped``: under an added
    empty root."""
    s = shape(doc, skip_root=wrapped)
    st = strict_tree(doc)
    # (back from MiniLoom a model's node names its model; a user's node keeps MiniLoom's)
    models = [(n.ext("miniloom").get("model") or st.model_of(n)) if after else st.model_of(n)
              for n in (st.nodes[i] for i in st.order)]
    if wrapped:
        models = models[1:]
    nodes = []
    for n, model in zip(s["nodes"], models, strict=True):
        rating = n["rating"]
        nodes.append({"path": n["path"], "text": n["text"], "full": n["full"],
                      "model_written": n["role"] == "model", "model": model,
                      "rating": None if not rating else rating > 0})
    return {"current": s["current"], "nodes": nodes}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return demo_document(tmp_path_factory.mktemp("demo") / "demo.db")


@pytest.fixture(scope="module")
def every(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("every")
    return every_feature_document(d / "every.db", d / "scratch.db")


# ── the validator, and patches as MiniLoom makes them ─────────────────────────────────


def test_the_validator_reads_minilooms_own_save() -> None:
    got = validate(miniloom_save())
    assert got["texts"]["6"] == "Long ago 🌍 a fox ran.\r\nThe end."
    assert got["texts"]["4"] == "Once upon a time 🦊 a loom wove."
    assert got["focus"] == "6" and got["children"]["2"] == ["3", "4"]


@pytest.mark.parametrize("damage, message", [
    (lambda s: s["loomTree"]["nodeStore"].pop("1"), r'the root is nodeStore\["1"\]'),
    (lambda s: s["loomTree"]["nodeStore"]["2"].update(id="7"), "its id is its key"),
    (lambda s: s["loomTree"]["nodeStore"]["3"].update(parent="4"), "names it"),
    (lambda s: s["loomTree"]["nodeStore"].update({"9": s["loomTree"]["nodeStore"].pop("6")}),
     "ids are 1..N"),
])
def test_the_validator_refuses_what_miniloom_would_break_on(damage: Any, message: str) -> None:
    save = miniloom_save()
    damage(save)
    with pytest.raises(AssertionError, match=message):
        validate(save)


# diff-match-patch 1.0.5 (npm) on node 20: JSON.stringify(dmp.patch_make(a, b)).
JS_PATCHES = [
    ("0123456789😀abcdefg", "0123456789😀abcdefgZ",
     r'[{"diffs":[[0,"\ude00abcdefg"],[1,"Z"]],"start1":11,"start2":11,"length1":8,'
     r'"length2":9}]'),
    ("Héllo 🌍\r\nline", "Héllo 🌏\r\nline end",
     r'[{"diffs":[[0,"lo \ud83c"],[-1,"\udf0d"],[1,"\udf0f"],[0,"\r\nline"],[1," end"]],'
     r'"start1":3,"start2":3,"length1":11,"length2":15}]'),
]


@pytest.mark.parametrize("parent, child, js", JS_PATCHES)
def test_patches_are_the_ones_miniloom_makes(parent: str, child: str, js: str) -> None:
    doc = copy.deepcopy(MINIMAL)
    t = doc["trees"][0]
    t["nodes"]["a"]["content"] = [{"type": "text", "text": ""}]
    t["nodes"]["b"]["content"] = [{"type": "text", "text": parent}]
    t["nodes"]["c"]["content"] = [{"type": "text", "text": child[len(parent):]}] \
        if child.startswith(parent) else [{"type": "text", "text": child}]
    t["edges"][1]["sources"][0]["nodeId"] = "b"
    if not child.startswith(parent):  # a MiniLoom rewrite: the node holds its whole text
        t["nodes"]["c"]["extensions"] = {"miniloom": {"rewrite": True}}
    w = write_miniloom(doc)
    written = w.data if isinstance(w.data, str) else w.data.decode()
    assert '"patch":' + js in written  # byte for byte, escapes included
    assert validate(json.loads(written))["texts"]["3"] == child


# ── the 764-node socketteer fixture ───────────────────────────────────────────────────


def test_the_demo_round_trips(demo: dict[str, Any], tmp_path: Path) -> None:
    w = write_miniloom(demo)
    assert (w.media_type, w.extension) == ("application/json", ".json")
    data = json.loads(w.data)
    loaded = validate(data)
    st = strict_tree(demo)
    assert len(loaded["texts"]) == 764  # the demo's root is empty: it is MiniLoom's root
    fulls = {s["full"] for s in shape(demo)["nodes"]}
    assert set(loaded["texts"].values()) == fulls
    again = back(tmp_path, w)
    assert held(again, after=True) == held(demo)
    assert data["focus"]["id"] == loaded["focus"] != "1" and st.current is not None
    said = " | ".join(w.cannot_hold)
    for what in ("22 bookmark(s)", "tags of 432", "106 pruned", "generation records of 368",
                 "24 human-edited"):
        assert what in said, what


def test_the_demo_loads_in_minilooms_steps_on_node(demo: dict[str, Any],
                                                  tmp_path: Path) -> None:
    w = write_miniloom(demo)
    file = tmp_path / "save.json"
    file.write_text(str(w.data), encoding="utf-8")
    got = run_js("miniloom_load.js", str(file), module="diff-match-patch")
    assert got == validate(json.loads(w.data))


# ── a tree with every feature ─────────────────────────────────────────────────────────


def test_every_feature_round_trips_what_miniloom_holds(every: dict[str, Any],
                                                       tmp_path: Path) -> None:
    w = write_miniloom(every)
    data = json.loads(w.data)
    loaded = validate(data)
    assert any(CRLF_EMOJI in t for t in loaded["texts"].values())
    # The tree's root has text, which MiniLoom's root cannot show: an empty root is above.
    assert data["loomTree"]["nodeStore"]["1"]["type"] == "root"
    assert loaded["texts"]["2"] == "Marie stood at the door."
    again = back(tmp_path, w)
    assert held(again, after=True, wrapped=True) == held(every)
    models = {n["model"] for n in data["loomTree"]["nodeStore"].values()}
    assert {"davinci-002", "claude-3-opus"} <= models
    said = " | ".join(w.cannot_hold)
    for what in ("1 bookmark(s)", "tags of 1 node", "1 tag definition", "1 pruned",
                 "1 excluded", "size of 1 rating", "token logprobs of 3", "edit lineage",
                 "1 media block", "3 link(s)", "2 annotation node(s)", "context/instruction",
                 "description", 'empty root node "1"', "title"):
        assert what in said, (what, w.cannot_hold)


def test_every_feature_loads_on_node(every: dict[str, Any], tmp_path: Path) -> None:
    w = write_miniloom(every)
    file = tmp_path / "save.json"
    file.write_text(str(w.data), encoding="utf-8")
    got = run_js("miniloom_load.js", str(file), module="diff-match-patch")
    assert got == validate(json.loads(w.data))


# ── trees that came from MiniLoom ─────────────────────────────────────────────────────


def test_a_miniloom_save_goes_back_as_it_was(tmp_path: Path) -> None:
    save = miniloom_save()
    ws = fresh(tmp_path / "a.db")
    report = import_data(ws, copy.deepcopy(save), name="fox")
    doc, _ = export_document(ws, [report.trees[0].tree], ExportOptions())
    w = write_miniloom(doc)
    data = json.loads(w.data)
    assert data["loomTree"]["nodeStore"] == save["loomTree"]["nodeStore"]  # every field
    assert data["focus"]["id"] == "6"
    assert data["samplerSettingsStore"] == {"temperature": 0.9}
    assert validate(data)["texts"] == validate(save)["texts"]
    assert w.cannot_hold == []


def test_miniloom_types_the_importer_does_not_keep_become_user(tmp_path: Path) -> None:
    save = miniloom_save()
    save["loomTree"]["nodeStore"]["5"]["type"] = "rewrite"
    ws = fresh(tmp_path / "a.db")
    report = import_data(ws, save, name="fox")
    doc, _ = export_document(ws, [report.trees[0].tree], ExportOptions())
    assert json.loads(write_miniloom(doc).data)["loomTree"]["nodeStore"]["5"]["type"] == "user"


# ── ids, roots and bad input ──────────────────────────────────────────────────────────


def test_ids_are_numbered_and_a_root_with_text_goes_under_an_empty_one() -> None:
    w = write_miniloom(copy.deepcopy(MINIMAL))
    data = json.loads(w.data)
    store = data["loomTree"]["nodeStore"]
    assert list(store) == ["1", "2", "3", "4"]
    assert (store["1"]["children"], store["2"]["children"]) == (["2"], ["3", "4"])
    assert [store[k]["type"] for k in store] == ["root", "user", "gen", "gen"]
    assert validate(data)["texts"] == {"1": "", "2": "Once upon a time",
                                       "3": "Once upon a time there was a fox.",
                                       "4": "Once upon a time there was a loom."}
    assert data["focus"]["id"] == "4"
    assert any('empty root node "1"' in s for s in w.cannot_hold)


def test_several_roots_go_under_one_empty_root() -> None:
    doc = copy.deepcopy(MINIMAL)
    t = doc["trees"][0]
    t["edges"] = t["edges"][:1]
    t["rootNodeIds"] = ["a", "c"]
    data = json.loads(write_miniloom(doc).data)
    store = data["loomTree"]["nodeStore"]
    assert store["1"]["children"] == ["2", "4"]
    assert validate(data)["texts"]["4"] == " there was a loom."


def _bad(mutate: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL)
    mutate(doc)
    return doc


@pytest.mark.parametrize("doc, index, message", [
    ({}, 0, "not an Open Loom document"),
    ({"format": "open-loom", "trees": {}}, 0, "no trees"),
    (MINIMAL, 3, "trees 0 to 0"),
    (MINIMAL, True, "trees 0 to 0"),
    (_bad(lambda d: d["trees"][0].pop("nodes")), 0, "no nodes"),
    (_bad(lambda d: d["trees"][0].update(edges={})), 0, "a list of edges"),
    (_bad(lambda d: d["trees"][0]["edges"][1].update(sources=[])), 0,
     "source and target are nodes"),
    (_bad(lambda d: d["trees"][0]["edges"].append(
        {"type": "continuation", "sources": [{"nodeId": "c"}], "targetNodeId": "a"})), 0,
     "cycle"),
])
def test_bad_input_is_refused_with_where(doc: Any, index: Any, message: str) -> None:
    with pytest.raises(LoomError, match=message) as e:
        write_miniloom(copy.deepcopy(doc), index)
    assert e.value.code == "INVALID_SYNTAX"


# ── a patch cut inside a character ────────────────────────────────────────────────────


def _cut_document() -> dict[str, Any]:
    """Texts where MiniLoom's patch context starts inside an emoji (its low surrogate)."""
    texts = ["", "0123456789😀abcdefg", "Z", "😀😁😂 a", "🙂"]
    keys = "abcde"
    return {"format": "open-loom", "version": "2.0", "trees": [{
        "id": "t", "title": "cut", "rootNodeIds": ["a"], "currentNodeId": "e",
        "nodes": {k: {"id": k, "content": [{"type": "text", "text": t}],
                      "author": {"role": "human"}} for k, t in zip(keys, texts, strict=True)},
        "edges": [{"type": "continuation", "sources": [{"nodeId": p}], "targetNodeId": c}
                  for p, c in pairwise(keys)]}]}


CUT_TEXTS = {"1": "", "2": "0123456789😀abcdefg", "3": "0123456789😀abcdefgZ",
             "4": "0123456789😀abcdefgZ😀😁😂 a", "5": "0123456789😀abcdefgZ😀😁😂 a🙂"}


def test_a_patch_cut_inside_an_emoji_is_written_as_minilooms() -> None:
    w = write_miniloom(_cut_document())
    assert r'"diffs":[[0,"\ude00abcdefg"],[1,"Z"]]' in str(w.data)  # as JSON.stringify
    assert validate(json.loads(w.data))["texts"] == CUT_TEXTS


def test_a_patch_cut_inside_an_emoji_loads_on_node(tmp_path: Path) -> None:
    w = write_miniloom(_cut_document())
    want = CUT_TEXTS
    file = tmp_path / "save.json"
    file.write_text(str(w.data), encoding="utf-8")
    assert run_js("miniloom_load.js", str(file), module="diff-match-patch")["texts"] == want


def test_a_patch_cut_inside_an_emoji_imports_back(tmp_path: Path) -> None:
    doc = _cut_document()
    again = back(tmp_path, write_miniloom(doc))
    assert held(again, after=True) == held(doc)
