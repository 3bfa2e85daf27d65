"""Tapestry Loom's ``.tapestry`` weaves: Tapestry's own example weaves import with every
node's text exact, Loom's weaves pass a validator written from Tapestry's loader, and trees
go Loom → weave → Loom (and weave → Loom → weave) keeping what a weave holds."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from loom.errors import LoomError
from loom.interchange import import_bytes, import_data
from loom.interchange.openloom.render import block_text
from loom.interchange.tapestry import read_tapestry
from loom.interchange.tapestry_weave import Model, Weave, WeaveNode, encode
from loom.interchange.tapestry_write import write_tapestry
from loom.interchange.times import parse_iso
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

# ── Tapestry's loader, as a validator ────────────────────────────────────────────────
# Written from (not copied from) transkatgirl/Tapestry-Loom at commit
# f2d2feb3f0af5ac1d2e5f6ee6aee666b14a7eb59: src/editor/mod.rs (l. 263, the load:
# VersionedWeave::from_bytes, then into_latest), tapestry-weave/src/lib.rs
# (FORMAT_IDENTIFIER, version 0 only), tapestry-weave/src/v0.rs (NodeContent,
# InnerNodeContent, Model, from_unversioned_bytes = rkyv::from_bytes); its universal-weave
# submodule at 42ab0eae19e4051288514c2857965aa5944a564e: src/versioning.rs (the 32-byte
# header), src/dependent/legacy_dependent.rs (DependentWeave's fields and validate()),
# src/dependent.rs (DependentNode); and rkyv 0.8.14 (Tapestry's Cargo.lock): the archived
# layouts (string/repr.rs, collections/swiss_table/{table,index_map}.rs, option.rs) and
# the checks from_bytes runs (validation/archive/validator.rs: every pointer inside the
# buffer and aligned, subtrees claimed in order without overlap; table.rs verify: len <
# cap; string/repr.rs: out-of-line strings longer than 8 bytes, UTF-8). No compression:
# the archive follows the header as it is.

TAPESTRY_COMMIT = "f2d2feb3f0af5ac1d2e5f6ee6aee666b14a7eb59"
MAGIC = b"VersionedTapestryWeave__"


class Refused(Exception):
    """What Tapestry's loader would say: 'Invalid weave header' or a deserialize error."""


class _Check:
    """rkyv's ArchiveValidator over the archive, with the weave's types' check_bytes."""

    def __init__(self, buf: bytes) -> None:
        self.b, self.start, self.end = buf, 0, len(buf)

    def claim(self, ptr: int, size: int, align: int, inside: Any) -> Any:
        if ptr < self.start or ptr + size > self.end:
            raise Refused(f"subtree pointer overran range: {ptr}+{size} not in "
                          f"{self.start}..{self.end}")
        if ptr % align:
            raise Refused(f"unaligned pointer {ptr} for alignment {align}")
        after = (ptr + size, self.end)
        self.end = ptr  # what it points to lies before it
        value = inside()
        self.start, self.end = after
        return value

    def u32(self, p: int) -> int:
        return int(struct.unpack_from("<I", self.b, p)[0])

    def i32(self, p: int) -> int:
        return int(struct.unpack_from("<i", self.b, p)[0])

    def u128(self, p: int) -> int:
        return int.from_bytes(self.b[p:p + 16], "little")

    def tag(self, p: int) -> bool:
        if self.b[p] > 1:
            raise Refused(f"invalid tag or bool {self.b[p]} at {p}")
        return self.b[p] == 1

    def string(self, p: int) -> str:
        raw = self.b[p:p + 8]
        if raw[0] & 0xC0 != 0x80:
            end = raw.find(b"\xff")
            data = raw if end < 0 else raw[:end]
        else:
            n = self.u32(p)
            n = (n & 0x3F) | ((n & ~0xFF) >> 2)
            if n <= 8:
                raise Refused("String representation was out-of-line but the length was "
                              "too short")
            q = p + self.i32(p + 4)
            data = self.claim(q, n, 1, lambda: self.b[q:q + n])
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"invalid UTF-8 in a string at {p}") from None

    def raw(self, p: int) -> bytes:
        q, n = p + self.i32(p), self.u32(p + 4)
        return self.claim(q, n, 1, lambda: self.b[q:q + n])

    def vec(self, p: int, size: int, align: int, item: Any) -> list[Any]:
        q, n = p + self.i32(p), self.u32(p + 4)
        return self.claim(q, n * size, align, lambda: [item(q + i * size) for i in range(n)])

    def table(self, p: int, size: int, align: int, item: Any) -> list[Any]:
        n, cap = self.u32(p + 4), self.u32(p + 8)
        if n == 0 and cap == 0:
            return []
        if n >= cap:
            raise Refused(f"hash table length must be strictly less than its capacity "
                          f"(length: {n}, capacity: {cap})")
        ctrl = p + self.i32(p)
        controls = -(-cap // 16) * 16 + 15
        start = ctrl - cap * size
        # buckets (index i at ctrl - (i + 1) * size), then the control bytes
        return self.claim(start, cap * size + controls, align, lambda: [
            item(ctrl - (i + 1) * size) for i in range(cap) if self.b[ctrl + i] < 0x80])

    def index_map(self, p: int, size: int, align: int, item: Any) -> list[Any]:
        self.table(p, 4, 4, lambda q: self.u32(q))
        n = self.u32(p + 4)
        q = p + 12 + self.i32(p + 12)
        return self.claim(q, n * size, align, lambda: [item(q + i * size) for i in range(n)])

    def ids(self, p: int) -> list[int]:
        return self.index_map(p, 16, 16, self.u128)

    def pairs(self, p: int) -> list[tuple[str, str]]:
        return self.index_map(p, 16, 4, lambda q: (self.string(q), self.string(q + 8)))

    def node(self, e: int) -> dict[str, Any]:
        key, n = self.u128(e), e + 16
        out: dict[str, Any] = {"key": key, "id": self.u128(n)}
        out["from"] = self.u128(n + 32) if self.tag(n + 16) else None
        out["to"] = self.ids(n + 48)
        out["active"], out["bookmarked"] = self.tag(n + 64), self.tag(n + 65)
        c = n + 68
        if self.b[c] == 0:
            out["bytes"], out["tokens"] = self.raw(c + 4), None
        elif self.b[c] == 1:
            out["tokens"] = self.vec(c + 4, 24, 4, lambda q: (
                self.raw(q), self.pairs(q + 8)))
            out["bytes"] = b"".join(t for t, _ in out["tokens"])
        else:
            raise Refused(f"invalid InnerNodeContent tag {self.b[c]}")
        out["metadata"] = self.pairs(c + 12)
        out["model"] = (self.string(c + 32), self.pairs(c + 40)) if self.tag(c + 28) else None
        return out


def tapestry_load(data: bytes) -> dict[str, Any]:
    """What Tapestry Loom's editor holds after loading ``data``, or ``Refused``."""
    if not data.startswith(MAGIC) or len(data) < 32:  # VersionedBytes::try_from_bytes
        raise Refused("Invalid weave header")
    version = struct.unpack_from("<Q", data, 24)[0]
    if version != 0:  # VersionedWeave::from_bytes: `_ => None`
        raise Refused("Invalid weave header")
    buf = data[32:]
    root = len(buf) - 112  # rkyv root_position: the root object ends the buffer
    if root < 0:
        raise Refused("buffer too short for the root")
    ck = _Check(buf)

    def weave() -> dict[str, Any]:
        nodes = ck.table(root, 144, 16, ck.node)
        return {"nodes": nodes, "roots": ck.ids(root + 12),
                "active": ck.u128(root + 48) if ck.tag(root + 32) else None,
                "bookmarked": ck.ids(root + 64),
                "thread": ck.vec(root + 80, 16, 16, ck.u128), "metadata": ck.pairs(root + 88)}
    w = ck.claim(root, 112, 16, weave)
    nodes = {n["key"]: n for n in w["nodes"]}
    if len(nodes) != len(w["nodes"]):
        raise Refused("a node key repeats")
    w["nodes"] = nodes
    # DependentWeave::validate (asserted by every save: a weave failing it panics later)
    roots, marks = set(w["roots"]), set(w["bookmarked"])
    assert roots <= nodes.keys() and marks <= nodes.keys()
    assert w["active"] is None or w["active"] in nodes
    for key, n in nodes.items():
        assert n["id"] == key and n["from"] != key and key not in n["to"]
        assert n["from"] is None or (n["from"] in nodes and n["from"] not in n["to"])
        assert set(n["to"]) <= nodes.keys()
        assert (n["from"] is None) == (key in roots)
        assert n["active"] == (w["active"] == key)
        assert n["bookmarked"] == (key in marks)
        assert n["from"] is None or key in nodes[n["from"]]["to"]
        assert all(nodes[c]["from"] == key for c in n["to"])
    return w


# ── helpers ──────────────────────────────────────────────────────────────────────────

EXAMPLES = Path(os.environ.get("LOOM_TAPESTRY_EXAMPLES",
                               Path(__file__).resolve().parents[1] / "fixtures" / "tapestry"))
#: Tapestry's docs/example-weaves at the commit above, and their node counts
EXAMPLE_COUNTS = {"welcome.tapestry": 329, "write good.tapestry": 138,
                  "playground angel.tapestry": 330, "library.tapestry": 1649}
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(v: int) -> str:
    return "".join(_CROCKFORD[(v >> (5 * i)) & 31] for i in range(25, -1, -1))


def example(name: str) -> bytes:
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip(f"Tapestry's example weave {path} is not here (set "
                    "LOOM_TAPESTRY_EXAMPLES to the folder holding them)")
    return path.read_bytes()


def shape(doc: dict[str, Any]) -> dict[str, Any]:
    """What a round trip keeps, by place in the tree (a path of child positions): each
    node's text, role, model, bookmark, token data and time; the current node's place."""
    tree = doc["trees"][0]
    agents = {**doc.get("agents", {}), **tree.get("agents", {})}
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
        n = tree["nodes"][nid]
        where[nid] = path
        role = n["author"]["role"]
        model = ((n.get("generation") or {}).get("model") or agents.get(
            n["author"].get("agentId"), {}).get("name") or n["author"].get("name")
        ) if role == "model" else None
        out[path] = (block_text(n["content"]), role, model,
                     bool(n.get("meta", {}).get("bookmarked")), tokens(n), n.get("createdAt"))
        stack.extend((k, (*path, i)) for i, k in enumerate(kids.get(nid, [])))
    return {"nodes": out, "current": where.get(tree.get("currentNodeId", ""))}


def ms(view: dict[str, Any]) -> dict[str, Any]:
    """``shape`` with node times to the millisecond (a weave's ids hold no finer)."""
    def cut(t: str | None) -> float | None:
        ts = parse_iso(t)
        return None if ts is None else round(ts * 1000)
    return {**view, "nodes": {k: (*v[:5], cut(v[5])) for k, v in view["nodes"].items()}}


def tokens(node: dict[str, Any]) -> list[tuple[str, float | None]] | None:
    for g in node.get("extensions", {}).get("loom", {}).get("generations", []):
        if g.get("logprobs"):
            return [(t["token"], None if t["logprob"] is None else round(t["logprob"], 9))
                    for t in g["logprobs"]]
    return None


def import_weave(tmp_path: Path, data: bytes, name: str) -> tuple[Workspace, Tree]:
    ws = fresh(tmp_path / f"{name}-{time.perf_counter_ns()}.db")
    report = import_bytes(ws, data, f"{name}.tapestry")
    assert report.format == "Tapestry Loom weave"
    return ws, report.trees[0].tree


# ── Tapestry's own weaves ────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", sorted(EXAMPLE_COUNTS))
def test_an_example_weave_imports_with_every_text_exact(tmp_path: Path, name: str) -> None:
    data = example(name)
    loaded = tapestry_load(data)  # the validator accepts what Tapestry itself wrote
    assert len(loaded["nodes"]) == EXAMPLE_COUNTS[name]
    ws, tree = import_weave(tmp_path, data, name)
    assert ws.node_count(tree) == EXAMPLE_COUNTS[name]
    doc = loom_doc(ws, tree)
    t = doc["trees"][0]
    assert len(t["nodes"]) == EXAMPLE_COUNTS[name]
    kids: dict[str, list[str]] = {}
    for e in t["edges"]:
        kids.setdefault(e["sources"][0]["nodeId"], []).append(e["targetNodeId"])
    for key, n in loaded["nodes"].items():
        node = t["nodes"][ulid(key)]
        assert "".join(b["text"] for b in node["content"]) == n["bytes"].decode("utf-8")
        assert kids.get(ulid(key), []) == [ulid(c) for c in n["to"]]
        assert bool(node.get("meta", {}).get("bookmarked")) == n["bookmarked"]
        if n["model"] is not None:
            assert node["author"]["role"] == "model"
            assert node["generation"]["model"] == n["model"][0]
        else:
            assert node["author"]["role"] == "human"
        spelled = [b.decode() for b, _ in n["tokens"] or () if b]
        if spelled:  # token data: one entry a token, probability → logprob
            entries = tokens(node)
            assert entries is not None
            assert [e[0] for e in entries] == spelled
            for (_, lp), (_, meta) in zip(entries, [t for t in n["tokens"] if t[0]],
                                          strict=True):
                p = float(dict(meta)["probability"])
                assert lp is None if p == 0 else math.isclose(lp, math.log(p), abs_tol=1e-8)
    assert t["rootNodeIds"] == [ulid(r) for r in loaded["roots"]]
    assert t["currentNodeId"] == ulid(loaded["active"])


@pytest.mark.parametrize("name", ["welcome.tapestry", "write good.tapestry"])
def test_an_example_weave_round_trips(tmp_path: Path, name: str) -> None:
    data = example(name)
    ws, tree = import_weave(tmp_path, data, name)
    doc = loom_doc(ws, tree)
    written = write_tapestry(doc)
    assert written.extension == ".tapestry" and isinstance(written.data, bytes)
    before, after = tapestry_load(data), tapestry_load(written.data)
    assert after == before  # the same weave: nodes, tokens, metadata, models, ids, order
    ws2, tree2 = import_weave(tmp_path, written.data, name)
    assert shape(loom_doc(ws2, tree2)) == shape(doc)


def test_the_codec_writes_the_bytes_tapestry_wrote() -> None:
    """Read and written back without Loom between, a weave is byte-identical to the file
    Tapestry (rkyv) wrote: the layout, padding, hashes and table placement are rkyv's."""
    from loom.interchange.tapestry_weave import decode

    for name in ("welcome.tapestry", "write good.tapestry", "playground angel.tapestry"):
        data = example(name)
        assert encode(decode(data)) == data


# ── Loom → weave → Loom ──────────────────────────────────────────────────────────────


def test_the_764_node_demo_goes_to_tapestry_and_back(tmp_path: Path) -> None:
    if not DEMO.exists():
        pytest.skip(f"fixture {DEMO} is missing")
    ws = fresh(tmp_path / "a.db")
    first = import_data(ws, json.loads(DEMO.read_text(encoding="utf-8")),
                        name="socketteer-loom-demo").trees[0].tree
    doc = loom_doc(ws, first)
    started = time.perf_counter()
    written = write_tapestry(doc)
    took = time.perf_counter() - started
    loaded = tapestry_load(written.data)
    assert len(loaded["nodes"]) == 764
    started = time.perf_counter()
    ws2, second = import_weave(tmp_path, written.data, "socketteer-loom-demo")
    back = time.perf_counter() - started
    assert ws2.node_count(second) == 764
    again = loom_doc(ws2, second)
    before, after = ms(shape(doc)), ms(shape(again))
    assert after["current"] == before["current"] and after["nodes"].keys() == \
        before["nodes"].keys()
    for path, (text, role, model, mark, toks, created) in before["nodes"].items():
        # a weave has no "mixed" (a person's text) and gives every node a time
        assert after["nodes"][path][:5] == (text, "human" if role == "mixed" else role,
                                            model, mark, toks)
        assert after["nodes"][path][5] == created or created is None
    assert sum(v[4] is not None for v in before["nodes"].values()) == \
        sum(v[4] is not None for v in after["nodes"].values())
    assert any("sub-millisecond" in said for said in written.cannot_hold)
    # (shape compares the node times too: they survive in the ids, to the millisecond)
    assert write_tapestry(again).data != b""  # and once more
    print(f"\n764-node demo → weave: {len(written.data):,} bytes in {took * 1000:.0f} ms, "
          f"imported back in {back * 1000:.0f} ms; cannot hold: {written.cannot_hold}")


def every_feature() -> dict[str, Any]:
    """Human and model nodes, two models, tokens, a person's edit of model text,
    bookmarks, tags, an annotation, a link, a pruned and an excluded node, a rating and a
    note, an image, unicode with emoji and CRLF."""
    fox, loom_ = " the fox 🦊 ran.\r\nThen", " a loom wove — «ünïcödé»"
    gen = {"id": "01J8ZC3YV3N9K5T2W7QF4XH2MC", "provider": "openai", "model": "davinci-002",
           "params": {"temperature": 1.0, "logprobs": 2}, "usage": {}, "latencyMs": 120,
           "completionIndex": 1, "created": "2026-07-01T12:30:01Z",
           "logprobs": ol_tokens(fox, [4, 8, 11, 16])}
    nodes = {
        "r": ol_node("r", "Once upon a time", "human", "ag-h"),
        "a": ol_node("a", fox, "model", "ag-d",
                   generation={"model": "davinci-002", "completionIndex": 1},
                   meta={"bookmarked": True, "tags": ["animal"]},
                   extensions={"loom": {"generations": [gen]}}),
        "b": ol_node("b", loom_, "model", "ag-c", generation={"model": "claude-3-opus"},
                   meta={"pruned": True, "rating": 1, "bookmarked": True}),
        "c": ol_node("c", " the fox 🦊 walked.", "mixed", "ag-h", editedFrom="a",
                   meta={"excluded": True, "note": "tamer"}),
        "d": ol_node("d", "\r\n\r\nAnd then\tnothing.", "human", "ag-h",
                   meta={"tags": ["ending"]}),
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


def test_every_feature_is_written_or_listed(tmp_path: Path) -> None:
    ws = fresh(tmp_path / "a.db")
    first = import_data(ws, every_feature(), name="fox").trees[0].tree
    doc = loom_doc(ws, first)
    written = write_tapestry(doc)
    loaded = tapestry_load(written.data)
    by_text = {n["bytes"].decode(): n for n in loaded["nodes"].values()}
    assert "a note on the fox" not in by_text  # the annotation
    assert len(by_text) == 6
    fox = by_text[" the fox 🦊 ran.\r\nThen"]
    assert fox["model"] == ("davinci-002", []) and fox["bookmarked"]
    assert [t for t, _ in fox["tokens"]] == [s.encode() for s in (" the", " fox", " 🦊 ",
                                                                   "ran.\r", "\nThen")]
    first_token = dict(fox["tokens"][0][1])
    assert first_token["probability"] == "0.7788"  # exp(-0.25), as Tapestry rounds it
    assert json.loads(first_token["counterfactual"])[1] == ["Pw", {"probability": "0.0302"}]
    assert by_text[" a loom wove — «ünïcödé»"]["model"][0] == "claude-3-opus"
    assert by_text[" the fox 🦊 walked."]["model"] is None  # mixed: a person's text
    assert by_text["\r\n\r\nAnd then\tnothing."]["active"]
    said = "\n".join(written.cannot_hold)
    for what in ("1 annotation node", "1 link", "the tags of 2 node", "1 pruned mark",
                 "1 excluded", "the ratings of 1", "the notes of 1", "1 media block",
                 "human-edited model node", "edit lineage", "exact logprobs"):
        assert what in said, what
    ws2, second = import_weave(tmp_path, written.data, "fox")
    before, after = shape(doc), shape(loom_doc(ws2, second))
    # what a weave holds comes back in place: text, order, models, bookmarks, the current
    # node, times; roles but for the mixed node (a person's text in Tapestry); token
    # probabilities to 4 places. (shape follows continuations: the annotation is in neither)
    assert after["current"] == before["current"] and after["nodes"].keys() == \
        before["nodes"].keys()
    for path, (text, role, model, mark, toks, created) in before["nodes"].items():
        a = after["nodes"][path]
        assert a[0] == text and a[2] == model and a[3] == mark
        assert a[5] == created or created is None  # (a weave's node always has a time)
        assert a[1] == ("human" if role == "mixed" else role)
        if toks is not None:
            assert a[4] is not None and [t for t, _ in a[4]] == [t for t, _ in toks]
            assert all(abs(math.exp(x) - math.exp(y)) < 1e-4
                       for (_, x), (_, y) in zip(a[4], toks, strict=True))


def test_a_character_split_between_nodes_keeps_its_bytes(tmp_path: Path) -> None:
    """Tapestry's nodes are bytes: a split can fall inside a character (and a token can
    be part of one). Loom shows U+FFFD and writes the bytes back as they were."""
    fox = "🦊".encode()
    root = WeaveNode(1 << 80 | 1, None, [1 << 80 | 2], False, False, b"a " + fox[:2], None)
    tail = WeaveNode(1 << 80 | 2, 1 << 80 | 1, [], True, True, fox[2:] + b" b",
                     [(fox[2:], [("probability", "0.5")]), (b" b", [("probability", "1")])],
                     [("temperature", "1")], None)
    weave = Weave({root.id: root, tail.id: tail}, [root.id], tail.id, [tail.id],
                  [("created", "2026-01-01T00:00:00+00:00"), ("notes", "")], [tail.id, root.id])
    data = encode(weave)
    assert tapestry_load(data)["nodes"][tail.id]["bytes"] == fox[2:] + b" b"
    doc = read_tapestry(data, "split.tapestry")
    assert [n["content"][0]["text"] for n in doc["trees"][0]["nodes"].values()] == \
        ["a \ufffd", "\ufffd\ufffd b"]
    ws, tree = import_weave(tmp_path, data, "split")
    assert tapestry_load(write_tapestry(loom_doc(ws, tree)).data) == tapestry_load(data)


_text = hs.text(hs.characters(blacklist_categories=("Cs",)), max_size=12)
_pairs = hs.dictionaries(_text, _text, max_size=4).map(lambda d: list(d.items()))


@hs.composite
def weaves(draw: Any) -> Weave:
    """Random weaves: a random forest, strings on both sides of the 8-byte inline limit,
    empty and full maps, snippets and tokens, models or none."""
    count = draw(hs.integers(1, 24))
    ids = draw(hs.lists(hs.integers(0, (1 << 128) - 1), min_size=count, max_size=count,
                        unique=True))
    parents = [None] + [draw(hs.one_of(hs.none(), hs.sampled_from(ids[:i])))
                        for i in range(1, count)]
    nodes: dict[int, WeaveNode] = {}
    for nid, parent in zip(ids, parents, strict=True):
        tokens = draw(hs.one_of(hs.none(), hs.lists(hs.tuples(
            hs.binary(max_size=6), _pairs), max_size=5)))
        content = b"".join(t for t, _ in tokens) if tokens is not None else \
            draw(hs.binary(max_size=40))
        model = draw(hs.one_of(hs.none(), hs.builds(Model, _text, _pairs)))
        nodes[nid] = WeaveNode(nid, parent, [], False, False, content, tokens,
                               draw(_pairs), model)
    for nid, parent in zip(ids, parents, strict=True):
        if parent is not None:
            nodes[parent].children.append(nid)
    active = draw(hs.one_of(hs.none(), hs.sampled_from(ids)))
    if active is not None:
        nodes[active].active = True
    marks = draw(hs.lists(hs.sampled_from(ids), unique=True, max_size=count))
    for m in marks:
        nodes[m].bookmarked = True
    thread = draw(hs.lists(hs.sampled_from(ids), max_size=3))
    return Weave(nodes, [i for i, p in zip(ids, parents, strict=True) if p is None], active,
                 marks, draw(_pairs), thread)


@settings(max_examples=150, deadline=None)
@given(weaves())
def test_any_weave_written_passes_the_validator_and_reads_back(weave: Weave) -> None:
    from loom.interchange.tapestry_weave import decode

    data = encode(weave)
    loaded = tapestry_load(data)
    assert set(loaded["nodes"]) == set(weave.nodes)
    for nid, n in weave.nodes.items():
        got = loaded["nodes"][nid]
        assert (got["from"], got["to"], got["active"], got["bookmarked"], got["bytes"],
                got["tokens"], got["metadata"]) == (n.parent, n.children, n.active,
                                                    n.bookmarked, n.content, n.tokens,
                                                    n.metadata)
        assert got["model"] == (None if n.model is None else (n.model.label,
                                                              n.model.metadata))
    assert (loaded["roots"], loaded["active"], loaded["bookmarked"], loaded["thread"],
            loaded["metadata"]) == (weave.roots, weave.active, weave.bookmarked, weave.thread,
                                    weave.metadata)
    assert decode(data) == weave


# ── damaged weaves ───────────────────────────────────────────────────────────────────


def _small_weave() -> bytes:
    ws_doc = every_feature()
    return write_tapestry(ws_doc).data  # type: ignore[return-value]


@pytest.mark.parametrize("cut, says", [
    (lambda d: d[:40], "truncated"),
    (lambda d: d[:-7], ""),
    (lambda d: d[:24] + struct.pack("<Q", 1) + d[32:], "version 1"),
    (lambda d: d[:24] + struct.pack("<Q", 7) + d[32:], "version 7"),
    (lambda d: d[:23], "header"),
    (lambda d: b"VersionedTapestryWeave!!" + d[24:], "header"),
])
def test_a_damaged_weave_is_a_clear_error_and_writes_nothing(
        tmp_path: Path, cut: Any, says: str) -> None:
    data = cut(_small_weave())
    ws = fresh(tmp_path / "d.db")
    trees = Tree.select().count()
    with pytest.raises(LoomError) as err:
        import_bytes(ws, data, "broken.tapestry")
    assert err.value.code == "INVALID_SYNTAX"
    assert "broken.tapestry" in err.value.message and says in err.value.message
    assert Tree.select().count() == trees


def test_an_empty_weave_says_so(tmp_path: Path) -> None:
    empty = encode(Weave({}, [], None, [], [("created", "2026-01-01T00:00:00-08:00"),
                                            ("notes", "")], []))
    tapestry_load(empty)  # Tapestry opens it: a new weave
    with pytest.raises(LoomError) as err:
        import_bytes(fresh(tmp_path / "e.db"), empty, "empty.tapestry")
    assert err.value.code == "INVALID_SYNTAX" and "has no nodes" in err.value.message


def test_flipped_bytes_never_crash_the_reader() -> None:
    """Any byte of a weave changed: the reader gives a document or a WeaveError, never
    another exception or a read outside the file."""
    from loom.interchange.tapestry_weave import WeaveError

    data = bytearray(_small_weave())
    rng = random.Random(28)
    for _ in range(400):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(32, len(damaged))] = rng.randrange(256)
        with contextlib.suppress(WeaveError):
            read_tapestry(bytes(damaged), "x.tapestry")


def test_empty_and_write_errors() -> None:
    with pytest.raises(LoomError) as err:
        write_tapestry({"format": "open-loom", "version": "2.0", "trees": []})
    assert err.value.code == "INVALID_SYNTAX"
    with pytest.raises(LoomError):
        write_tapestry(every_feature(), tree_index=3)
