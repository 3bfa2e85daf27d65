"""Loom → socketteer/loom: the writer's files open in socketteer's loader (checked by a
validator written from its code), and come back into Loom as the tree they were."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from loom.errors import LoomError
from loom.interchange import import_data
from loom.interchange.socketteer_tokens import from_socketteer
from loom.interchange.socketteer_write import MAX_DEPTH, write_socketteer
from loom.interchange.written import Written
from loom.store.schema import Tree
from loom.store.workspace import Workspace
from tests.unit.interchange_support import (
    DEMO,
    data_uri,
    fresh,
    loom_doc,
    ol_node,
    ol_tokens,
    png,
)

# ── socketteer's loader, as a validator ──────────────────────────────────────────────
# Written from github.com/socketteer/loom at commit 91ca920551120ad4508540e8da057c0b94067afc
# (2024-06-28), not copied: model.py TreeModel.load_tree_data (l. 1734), _init_global_objects
# (l. 1626), rebuild_tree (l. 527), select_node (l. 695), text (l. 1254), visible_conditions
# (l. 836), has_tag (l. 1529), _build_chapter_trees (l. 622), get_request_info (l. 2461),
# unzip (l. 1152); util/util_tree.py flatten_tree (l. 307), add_immutable_root (l. 365),
# fix_miro_tree (l. 334), fix_tree (l. 386); util/util.py json_open (l. 294, default
# encoding: so the file must be ASCII to open everywhere); the token readers in
# controller.py select_token (l. 1253) and components/dialogs.py NodeInfoDialog (l. 75).

SOCKETTEER_COMMIT = "91ca920551120ad4508540e8da057c0b94067afc"
_DEFAULT_TAGS = {"bookmark": "node", "canonical": "ancestry", "archived": "node",
                 "note": "node", "pinned": "node"}  # model.py DEFAULT_TAGS: name → scope
_SETTINGS = ("generation_settings", "inline_generation_settings", "visualization_settings",
             "preferences", "module_settings", "tags")  # merged over defaults: {**d, **file}


class Loaded:
    """What socketteer's TreeModel holds after ``load_tree_data`` (the state the validator
    derived): the root after ``add_immutable_root``, the node index, the selection."""

    def __init__(self, root: dict[str, Any], nodes: dict[str, dict[str, Any]],
                 selected: str | None, wrapped: bool) -> None:
        self.root, self.nodes, self.selected, self.wrapped = root, nodes, selected, wrapped


def _flatten(root: dict[str, Any], problems: list[str]) -> list[dict[str, Any]]:
    """flatten_tree: the node and its children, depth first (ids minted when missing)."""
    out, stack = [], [root]
    while stack:
        d = stack.pop()
        if not isinstance(d, dict):
            problems.append(f"a child is {type(d).__name__}, not a node (TypeError)")
            continue
        out.append(d)
        kids = d.get("children", [])
        if not isinstance(kids, list):
            problems.append(f"{d.get('id')}: children is not a list")
            continue
        stack.extend(reversed(kids))
    return out


def socketteer_load(data: Any) -> tuple[Loaded | None, list[str]]:
    """(the loaded state, the problems that make socketteer fail or lose something)."""
    problems: list[str] = []
    if not isinstance(data, dict) or "root" not in data:
        # load_tree_data's other branch: a bare node ("text") or a list of nodes; a dict
        # without either has fix_tree iterate its keys as nodes: TypeError.
        if not (isinstance(data, dict) and "text" in data) and not isinstance(data, list):
            return None, ["no root: load_tree_data makes the object the root's children, "
                          "fix_tree then fails (TypeError)"]
        return None, ["a bare node or node list (the writer always writes a root)"]
    root = data["root"]
    if not isinstance(root, dict):
        return None, ["root is not a node"]
    for key in ("chapters", "summaries", "model_responses", *_SETTINGS):
        if key in data and not isinstance(data[key], dict):
            problems.append(f"{key} is not an object ({{**defaults, **file}} fails)")
    if "canonical" in data and not isinstance(data["canonical"], list):
        problems.append("canonical is not a list")
    if problems:
        return None, problems
    wrapped = root.get("mutable", True) not in (False, None, 0)
    if wrapped:  # add_immutable_root
        root = {"mutable": False, "visited": True, "text": "", "id": "(added root)",
                "children": [root]}
    flat = _flatten(root, problems)
    nodes: dict[str, dict[str, Any]] = {}
    for d in flat:
        nid = d.get("id")
        if nid is None:
            problems.append("a node without an id (socketteer mints one: unstable)")
            continue
        if nid in nodes:
            problems.append(f"id {nid!r} is used twice: the node index keeps one")
        nodes[nid] = d
        if not isinstance(d.get("text"), str):
            problems.append(f"{nid}: text is missing or not a string (TreeModel.text)")
        elif "<p>" in d["text"] or "</p" in d["text"]:
            problems.append(f"{nid}: text has <p>: fix_miro_tree rewrites it as HTML")
        if not isinstance(d.get("children"), list):
            problems.append(f"{nid}: no children list (_build_chapter_trees)")
    kids = root.get("children")
    if not isinstance(kids, list) or not kids or not isinstance(kids[0], dict):
        problems.append("root has no first child: load_tree_data reads "
                        "root()['children'][0]['id'] (IndexError)")
    selected = data.get("selected_node_id")
    if selected is not None and selected not in nodes:
        problems.append(f"selected_node_id {selected!r} is no node: nothing is selected")
    tags = {**{k: {"scope": v, "hide": False, "show_only": False}
               for k, v in _DEFAULT_TAGS.items()}, **(data.get("tags") or {})}
    for name, tag in tags.items():
        if not (isinstance(tag, dict) and {"hide", "show_only", "scope"} <= set(tag)):
            problems.append(f"tag {name!r} lacks hide/show_only/scope (visible_conditions)")
        elif tag["scope"] not in ("node", "subtree", "ancestry"):
            problems.append(f"tag {name!r} has scope {tag['scope']!r} (has_tag: invalid)")
    chapters = data.get("chapters") or {}
    responses = data.get("model_responses") or {}
    undefined: dict[str, int] = {}
    for nid, d in nodes.items():
        for tag in d.get("tags") or ():
            if tag not in tags:
                undefined[tag] = undefined.get(tag, 0) + 1
        if "chapter_id" in d and d["chapter_id"] not in chapters:
            problems.append(f"{nid}: chapter {d['chapter_id']!r} is not in chapters")
        meta = d.get("meta")
        if meta is not None and (not isinstance(meta, dict) or meta.get("source", "prompt")
                                 not in ("AI", "prompt", "mixed")):
            problems.append(f"{nid}: meta.source is not AI, prompt or mixed")
        if "masked_head" in d:
            head_ids = {h.get("id") for h in _flatten(d["masked_head"], problems)}
            if d.get("tail_id") not in head_ids:
                problems.append(f"{nid}: tail_id is not in masked_head (unzip: KeyError)")
        if "generation" in d:
            problems.extend(_generation(nid, d, responses))
    problems.extend(f"tag {tag!r} of {n} node(s) is not defined: has_tag is False for it"
                    for tag, n in undefined.items())
    return Loaded(root, nodes, selected if selected in nodes else None, wrapped), problems


def _generation(nid: str, d: dict[str, Any], responses: dict[str, Any]) -> list[str]:
    gen = d["generation"]
    if not isinstance(gen, dict) or "id" not in gen:
        return [f"{nid}: generation has no id (get_request_info: KeyError)"]
    response = responses.get(gen["id"])
    if not response:
        return []  # socketteer's own saves often lack the response (backed up apart)
    try:
        response["prompt"]["text"]
        completion = response["completions"][gen["index"]]
        response["model"]
        for token in completion["tokens"]:
            math.exp(token["generatedToken"]["logprob"])
            assert isinstance(token["generatedToken"]["token"], str)
            start, end = token["position"]["start"], token["position"]["end"]
            assert completion["text"][start:end] == token["generatedToken"]["token"]
            assert isinstance(token["counterfactuals"], dict)
    except (KeyError, IndexError, TypeError, AssertionError) as err:
        return [f"{nid}: model_responses[{gen['id']!r}] is not what socketteer reads "
                f"({type(err).__name__}: {err})"]
    return []


def assert_loads(written: Written) -> tuple[dict[str, Any], Loaded]:
    assert written.media_type == "application/json" and written.extension == ".json"
    assert isinstance(written.data, str) and written.data.isascii()  # json_open's encoding
    data = json.loads(written.data)
    loaded, problems = socketteer_load(data)
    assert problems == []
    assert loaded is not None
    return data, loaded


# ── Loom's view of a tree, to compare two imports ────────────────────────────────────


def shape(doc: dict[str, Any]) -> dict[str, Any]:
    """What a round trip must keep: each node's text, author role and model, flags and
    tags, in tree order with its path of child positions; the current node's path."""
    tree = doc["trees"][0]
    agents = {**doc.get("agents", {}), **tree.get("agents", {})}
    nodes = tree["nodes"]
    kids: dict[str, list[str]] = {}
    targets = set()
    for e in tree["edges"]:
        if e["type"] == "continuation":
            kids.setdefault(e["sources"][0]["nodeId"], []).append(e["targetNodeId"])
            targets.add(e["targetNodeId"])
    roots = [r for r in tree["rootNodeIds"] if r not in targets]
    out: dict[tuple[int, ...], Any] = {}
    where: dict[str, tuple[int, ...]] = {}
    stack = [(r, (i,)) for i, r in enumerate(roots)]
    while stack:
        nid, path = stack.pop()
        n = nodes[nid]
        where[nid] = path
        meta = n.get("meta", {})
        role = n["author"]["role"]
        model = (n.get("generation") or {}).get("model") or \
            agents.get(n["author"].get("agentId"), {}).get("name") if role == "model" else None
        out[path] = ("".join(b.get("text", "") for b in n["content"]), role, model,
                     bool(meta.get("bookmarked")), bool(meta.get("pruned")),
                     sorted(set(meta.get("tags", [])) - {"bookmark", "archived"}))
        stack.extend((k, (*path, i)) for i, k in enumerate(kids.get(nid, [])))
    return {"nodes": out, "current": where.get(tree.get("currentNodeId", "")),
            "title": tree["title"]}


def reimport(tmp_path: Path, written: Written, name: str) -> tuple[Workspace, Tree]:
    ws = fresh(tmp_path / f"{name}.db")
    report = import_data(ws, json.loads(written.data), name=name)
    assert report.format == "socketteer/loom" and report.repairs == []
    return ws, report.trees[0].tree


# ── the 764-node demo ────────────────────────────────────────────────────────────────


def test_the_validator_reads_socketteers_own_save_and_refuses_open_loom(
        tmp_path: Path) -> None:
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    demo = json.loads(DEMO.read_text(encoding="utf-8"))
    loaded, problems = socketteer_load(demo)
    # socketteer's own file: one tag is used and never defined (the writer defines it)
    assert problems == ["tag 'demo' of 302 node(s) is not defined: has_tag is False for it"]
    assert loaded is not None and len(loaded.nodes) == 764
    assert loaded.selected == demo["selected_node_id"] and not loaded.wrapped
    ws = fresh(tmp_path / "l.db")
    tree = import_data(ws, demo, name="demo").trees[0].tree
    _, problems = socketteer_load(loom_doc(ws, tree))  # the TypeError
    assert problems and "TypeError" in problems[0]


def test_the_demo_goes_back_as_it_came_and_round_trips(tmp_path: Path) -> None:
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    demo = json.loads(DEMO.read_text(encoding="utf-8"))
    ws = fresh(tmp_path / "a.db")
    first = import_data(ws, demo, name="socketteer-loom-demo").trees[0].tree
    doc = loom_doc(ws, first)
    started = time.perf_counter()
    written = write_socketteer(doc)
    took = time.perf_counter() - started
    data, loaded = assert_loads(written)
    assert written.cannot_hold == []
    assert len(loaded.nodes) == 764 and loaded.selected == demo["selected_node_id"]
    # As close to the original as the import kept it: every top-level field, and each
    # node's own fields; socketteer's meta.source is written where the file had none, and
    # the one tag the file uses without defining it ("demo", on 302 nodes: socketteer's
    # has_tag is False for it) is defined.
    assert {k: v for k, v in data.items() if k not in ("root", "tags")} == \
        {k: v for k, v in demo.items() if k not in ("root", "tags")}
    assert {k: v for k, v in data["tags"].items() if k != "demo"} == demo["tags"]
    assert data["tags"]["demo"] == {"name": "demo", "scope": "node", "hide": False,
                                    "show_only": False, "toggle_key": "None", "icon": "None"}
    original = {n["id"]: n for n in _flatten(demo["root"], [])}
    for nid, node in loaded.nodes.items():
        before = original[nid]
        assert node["text"] == before["text"]
        assert [c["id"] for c in node["children"]] == [c["id"] for c in before["children"]]
        strip = ("children", "meta", "tags", "bookmark")
        assert {k: v for k, v in node.items() if k not in strip} == \
            {k: v for k, v in before.items() if k not in strip}
        assert {k: v for k, v in node["meta"].items() if k != "source"} == \
            {k: v for k, v in (before.get("meta") or {}).items() if k != "source"}
        assert node["meta"]["source"] == (before.get("meta") or {}).get(
            "source", "AI" if "generation" in before else "prompt")
        assert sorted(node.get("tags", [])) == sorted(before.get("tags", []))
    # … and back into Loom: the same tree.
    started = time.perf_counter()
    ws2, second = reimport(tmp_path, written, "socketteer-loom-demo")
    back = time.perf_counter() - started
    assert ws2.node_count(second) == 764
    assert shape(loom_doc(ws2, second)) == shape(doc)
    print(f"\n764-node demo: {len(written.data):,} bytes written in {took * 1000:.0f} ms, "
          f"imported back in {back * 1000:.0f} ms")


# ── a generated tree with every feature ──────────────────────────────────────────────


def every_feature() -> dict[str, Any]:
    """Human and model nodes, two models, tokens, a person's edit of model text,
    bookmarks with a label, tags with colours, an annotation, a link, a pruned and an
    excluded node, a rating and a note, an image, unicode with emoji and CRLF."""
    fox, loom_ = " the fox 🦊 ran.\r\nThen", " a loom wove — «ünïcödé»"
    gen = {"id": "01J8ZC3YV3N9K5T2W7QF4XH2MC", "provider": "openai", "model": "davinci-002",
           "params": {"temperature": 1.0}, "usage": {}, "latencyMs": 120,
           "completionIndex": 1, "created": "2026-07-01T12:30:01Z",
           "logprobs": ol_tokens(fox, [4, 8, 11, 16], offsets=True)}
    nodes = {
        "r": ol_node("r", "Once upon a time", "human", "ag-h"),
        "a": ol_node("a", fox, "model", "ag-d",
                   generation={"model": "davinci-002", "requestId": "cmpl-1",
                               "completionIndex": 1, "provider": "openai"},
                   meta={"bookmarked": True, "bookmarkLabel": "the fox", "tags": ["animal"]},
                   extensions={"loom": {"generations": [gen]}}),
        "b": ol_node("b", loom_, "model", "ag-c",
                   generation={"model": "claude-3-opus", "completionIndex": 0},
                   meta={"pruned": True, "rating": 1}),
        "c": ol_node("c", " the fox 🦊 walked.", "mixed", "ag-h", editedFrom="a",
                   meta={"excluded": True, "note": "tamer"}),
        "d": ol_node("d", "\r\n\r\nAnd then\tnothing.", "human", "ag-h",
                   meta={"tags": ["ending", "animal"]}),
        "e": {"id": "e", "content": [{"type": "text", "text": " See:"},
                                     {"type": "image", "ref": data_uri("image/png", png()),
                                      "mimeType": "image/png", "altText": "a fox"}],
              "author": {"role": "human", "agentId": "ag-h"}},
        "n": ol_node("n", "a note on the fox", "human", "ag-h"),
    }
    edges = [{"type": "continuation", "sources": [{"nodeId": "r"}], "targetNodeId": t}
             for t in ("a", "b", "c")]
    edges += [{"type": "continuation", "sources": [{"nodeId": "a"}], "targetNodeId": "d"},
              {"type": "continuation", "sources": [{"nodeId": "a"}], "targetNodeId": "e"},
              {"type": "annotation", "sources": [{"nodeId": "a"}], "targetNodeId": "n"}]
    return {"format": "open-loom", "version": "2.0",
            "agents": {"ag-h": {"name": "human", "type": "human"},
                       "ag-d": {"name": "davinci-002", "type": "model"},
                       "ag-c": {"name": "claude-3-opus", "type": "model"}},
            "trees": [{"id": "t1", "title": "The fox", "mode": "buffer",
                       "rootNodeIds": ["r"], "currentNodeId": "d", "nodes": nodes,
                       "edges": edges, "tags": [{"name": "animal", "color": "#f80"},
                                                {"name": "ending"}],
                       "extensions": {"loom": {"links": [
                           {"id": "01J8ZC3YV3N9K5T2W7QF4XH2MD", "source": "d",
                            "target": {"kind": "node", "node": "b"}}]}}}]}


@pytest.mark.parametrize("generator", [None, "Loom"])
def test_every_feature_round_trips_or_is_listed(tmp_path: Path, generator: str | None) -> None:
    """As another program's file (kept whole) and as Loom's own (rendered by Loom: ULID-free
    ids kept, generation records with hashes and times, extensions.loom)."""
    source = every_feature()
    if generator:
        source["generator"] = {"name": generator}
    ws = fresh(tmp_path / "a.db")
    first = import_data(ws, source, name="fox").trees[0].tree
    doc = loom_doc(ws, first)
    written = write_socketteer(doc)
    data, loaded = assert_loads(written)
    assert not loaded.wrapped and data["root"]["mutable"] is False
    by_text = {n["text"]: n for n in loaded.nodes.values()}
    fox = by_text[" the fox 🦊 ran.\r\nThen"]
    assert fox["meta"]["source"] == "AI" and fox["tags"] == ["animal", "bookmark"]
    assert fox["generation"] == {"id": "cmpl-1", "index": 1}
    response = data["model_responses"]["cmpl-1"]
    assert response["model"] == "davinci-002" and response["completions"][0] is None
    tokens = response["completions"][1]["tokens"]
    assert "".join(t["generatedToken"]["token"] for t in tokens) == fox["text"]
    assert [t["position"] for t in tokens][:2] == [{"start": 0, "end": 4},
                                                   {"start": 4, "end": 8}]
    loom_tokens = doc["trees"][0]["nodes"]["a"]["extensions"]["loom"]["generations"][0][
        "logprobs"]
    assert from_socketteer(response, 1) == loom_tokens  # the file holds Loom's token data
    assert tokens[1]["counterfactuals"] == {tokens[1]["generatedToken"]["token"]: -1.25,
                                            "?": -3.5}
    assert by_text[" a loom wove — «ünïcödé»"]["tags"] == ["archived"]
    assert by_text[" a loom wove — «ünïcödé»"]["meta"]["generation"] == {
        "model": "claude-3-opus", "index": 0}
    assert by_text[" the fox 🦊 walked."]["meta"]["source"] == "mixed"
    assert data["selected_node_id"] == by_text["\r\n\r\nAnd then\tnothing."]["id"]
    assert set(data["tags"]) >= {"animal", "ending", "bookmark", "archived"}
    assert "a note on the fox" not in by_text
    said = "\n".join(written.cannot_hold)
    for what in ("1 annotations", "1 links", "1 bookmark labels", "1 ratings",
                 "1 node notes", "1 nodes excluded", "1 image, audio",
                 "1 edit lineages", "1 tag colours", "times below the second",
                 "generation records beyond"):
        assert what in said, what
    ws2, second = reimport(tmp_path, written, "fox")
    # (shape reads continuations only: the annotation, listed, is in neither; the image
    # block, listed, has no text)
    again = loom_doc(ws2, second)
    before, after = shape(doc), shape(again)
    assert len(before["nodes"]) == 6 and after == before
    # the token data back in Loom, as it left
    back = next(n for n in again["trees"][0]["nodes"].values()
                if n["content"][0]["text"] == fox["text"])
    assert back["extensions"]["loom"]["generations"][0]["logprobs"] == loom_tokens


def test_a_tree_made_in_loom(tmp_path: Path) -> None:
    """Loom's own rows: a buffer-mode version sharing its original's children, a
    hyperedge, an annotation, a link, the subject model's nodes without a request id."""
    ws = fresh(tmp_path / "a.db")
    human, model = ws.human(), ws.subject()
    tree = ws.create_tree("Native", root_content="It began")
    root = ws.node(tree.root)
    rain = ws.add_node(tree, root, " with rain.", model)
    snow = ws.add_node(tree, root, " with snow 🌨.\r\n", human)
    sun = ws.add_node(tree, rain, " Then sun.", model)
    ws.add_node(tree, rain, "a remark", human, kind="annotation")
    ws.add_version(tree, rain, " with heavy rain.", human)
    both = ws.add_node(tree, sun, " Both.", human, extra_sources=[(snow, "context")])
    ws.add_link(tree, sun, human, target_kind="node", target_node=snow, note="see")
    ws.set_position(human, tree, both)
    doc = loom_doc(ws, tree)
    written = write_socketteer(doc)
    _, loaded = assert_loads(written)
    assert loaded.selected == both.id and len(loaded.nodes) == 6
    said = "\n".join(written.cannot_hold)
    for what in ("2 extra parents", "1 annotations", "1 edit lineages", "1 links"):
        assert what in said, what
    ws2, second = reimport(tmp_path, written, "native")
    assert shape(loom_doc(ws2, second)) == shape(doc)


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(LoomError) as err:
        write_socketteer({"format": "open-loom", "version": "2.0", "trees": []})
    assert err.value.code == "INVALID_SYNTAX" and "no trees" in err.value.message
    with pytest.raises(LoomError) as err:
        write_socketteer(every_feature(), tree_index=1)
    assert err.value.code == "INVALID_SYNTAX" and "tree 1 is not in the document" in \
        err.value.message
    with pytest.raises(LoomError) as err:
        write_socketteer(every_feature(), tree_index=-1)
    assert err.value.code == "INVALID_SYNTAX"
    with pytest.raises(LoomError) as err:
        write_socketteer({"trees": [{"id": "t", "nodes": {}, "edges": []}]})
    assert err.value.code == "INVALID_SYNTAX"


# ── socketteer's own shapes: hoists, several roots, depth ────────────────────────────


def hoisted() -> dict[str, Any]:
    """A tree socketteer saved while hoisted at "b": the mask stands for r … b."""
    def n(nid: str, text: str, kids: list[dict[str, Any]], parent: str | None = None,
          **more: Any) -> dict[str, Any]:
        node = {"text": text, "children": kids, "id": nid, **more,
                "meta": {"source": "prompt"}}
        if parent is not None:
            node["parent_id"] = parent
        return node
    chain = n("r", "Once", [n("a", " upon", [n("b", " a time", [], "a")], "r"),
                            n("a2", " again", [], "r", tags=["bookmark"])], None,
              mutable=False)
    return {"root": {"id": "m", "text": "Once upon a time", "mutable": False,
                     "hoisted": True, "open": True, "masked_head": chain, "tail_id": "b",
                     "text_attributes": {"nav_preview": "Once... a time"},
                     "children": [n("c", " there", [], "m"), n("d", " here", [], "m")],
                     "meta": {"source": "prompt"}},
            "selected_node_id": "m", "chapters": {}}


def test_a_hoisted_tree_goes_back_hoisted(tmp_path: Path) -> None:
    original = hoisted()
    ws = fresh(tmp_path / "a.db")
    tree = import_data(ws, json.loads(json.dumps(original)), name="h").trees[0].tree
    written = write_socketteer(loom_doc(ws, tree))
    data, loaded = assert_loads(written)
    root = data["root"]
    assert root["id"] == "m" and root["masked_head"]["id"] == "r"
    assert [c["id"] for c in root["children"]] == ["c", "d"]
    assert root["masked_head"]["children"][0]["children"][0]["children"] == []
    assert data["selected_node_id"] == "m" and loaded.selected == "m"
    assert written.cannot_hold == []


def test_several_roots_and_a_deep_tree(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    report = import_data(ws, [{"id": "x", "text": "One", "children": []},
                              {"id": "y", "text": "Two", "children": []}], name="two")
    written = write_socketteer(loom_doc(ws, report.trees[0].tree))
    data, loaded = assert_loads(written)
    assert [c["text"] for c in data["root"]["children"]] == ["One", "Two"]
    assert any("2 roots" in line for line in written.cannot_hold)

    def chain(depth: int) -> dict[str, Any]:
        nodes = {f"n{i}": ol_node(f"n{i}", f" {i}", "human", "ag") for i in range(depth)}
        edges = [{"type": "continuation", "sources": [{"nodeId": f"n{i}"}],
                  "targetNodeId": f"n{i + 1}"} for i in range(depth - 1)]
        return {"format": "open-loom", "version": "2.0", "trees": [
            {"id": "t", "title": "deep", "rootNodeIds": ["n0"], "nodes": nodes,
             "edges": edges}]}
    data, loaded = assert_loads(write_socketteer(chain(MAX_DEPTH)))
    assert len(loaded.nodes) == MAX_DEPTH
    with pytest.raises(LoomError) as err:
        write_socketteer(chain(MAX_DEPTH + 1))
    assert err.value.code == "LIMIT_EXCEEDED"
