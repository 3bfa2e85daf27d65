"""Tapestry Loom's ``.tapestry`` weave, byte for byte: the only version its loader reads.

Read from transkatgirl/Tapestry-Loom at f2d2feb3f0af5ac1d2e5f6ee6aee666b14a7eb59
(``tapestry-weave/src/lib.rs``, ``v0.rs``), its ``universal-weave`` submodule at
42ab0eae19e4051288514c2857965aa5944a564e (``src/versioning.rs``,
``src/dependent/legacy_dependent.rs``, ``src/dependent.rs``) and rkyv 0.8.14 (the crate
version in Tapestry's Cargo.lock; features ``little_endian``, ``aligned``,
``pointer_width_32``, ``indexmap-2``):

- a 32-byte header: ``b"VersionedTapestryWeave__"`` then the version as a little-endian
  u64; ``VersionedWeave::from_bytes`` accepts version 0 only, and nothing is compressed;
- then an rkyv archive of ``DependentWeave<u128, NodeContent, IndexMap<String, String>>``
  whose root object is the last 112 bytes. Relative pointers are i32 offsets from the
  pointer's own position, lengths u32, u128 aligned to 16; strings of up to 8 bytes are
  inline (padded with 0xff), longer ones out of line; hash maps and index maps are rkyv's
  swiss tables (FxHasher64, load factor 7/8, buckets stored below the control bytes).

``decode`` checks every offset and length against the buffer (a damaged file raises
``WeaveError`` naming what is wrong, never reads out of bounds); ``encode`` lays the
archive out in the order rkyv's serializer does, which is the order its validator
(``bytecheck``, run by ``rkyv::from_bytes``) requires.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loom.interchange.heap import collector_paused

MAGIC = b"VersionedTapestryWeave__"
VERSION = 0
HEADER = 32
ROOT_SIZE = 112
NODE_ENTRY = 144  # Entry<u128, ArchivedDependentNode>: 16 + 128
MAX_GROUP_WIDTH = 16

Pairs = list[tuple[str, str]]
"""An ``IndexMap<String, String>``: ordered, keys unique."""


class WeaveError(ValueError):
    """The bytes are not a weave Tapestry Loom would load; the message says why."""


@dataclass
class Model:
    label: str
    metadata: Pairs = field(default_factory=list)


@dataclass
class WeaveNode:
    id: int
    parent: int | None
    children: list[int]
    active: bool
    bookmarked: bool
    content: bytes
    tokens: list[tuple[bytes, Pairs]] | None  # ``InnerNodeContent::Tokens``, else a snippet
    metadata: Pairs = field(default_factory=list)
    model: Model | None = None


@dataclass
class Weave:
    nodes: dict[int, WeaveNode]
    roots: list[int]
    active: int | None
    bookmarked: list[int]
    metadata: Pairs
    thread: list[int] = field(default_factory=list)


# ── reading ──────────────────────────────────────────────────────────────────────────


def version_of(data: bytes) -> int | None:
    """The header's version, or None when ``data`` has no weave header."""
    if not data.startswith(MAGIC) or len(data) < HEADER:
        return None
    return int(struct.unpack_from("<Q", data, len(MAGIC))[0])


class _Reader:
    def __init__(self, buf: bytes) -> None:
        self.b = memoryview(buf)
        self.n = len(buf)

    def need(self, pos: int, size: int, what: str) -> None:
        if pos < 0 or size < 0 or pos + size > self.n:
            raise WeaveError(f"{what} points outside the file (offset {pos}, {size} bytes, "
                             f"archive of {self.n} bytes): the weave is truncated or damaged")

    def u8(self, pos: int, what: str) -> int:
        self.need(pos, 1, what)
        return int(self.b[pos])

    def u32(self, pos: int, what: str) -> int:
        self.need(pos, 4, what)
        return int(struct.unpack_from("<I", self.b, pos)[0])

    def rel(self, pos: int, what: str) -> int:
        self.need(pos, 4, what)
        return pos + int(struct.unpack_from("<i", self.b, pos)[0])

    def u128(self, pos: int, what: str) -> int:
        self.need(pos, 16, what)
        return int.from_bytes(self.b[pos:pos + 16], "little")

    def flag(self, pos: int, what: str) -> bool:
        v = self.u8(pos, what)
        if v > 1:
            raise WeaveError(f"{what} is {v}, not a boolean or option tag")
        return v == 1

    def slice(self, pos: int, count: int, size: int, what: str) -> int:
        start = self.rel(pos, what)
        if count * size > self.n:
            raise WeaveError(f"{what} claims {count} items, more than the file holds")
        self.need(start, count * size, what)
        return start

    def bytes_vec(self, pos: int, what: str) -> bytes:
        count = self.u32(pos + 4, what)
        start = self.slice(pos, count, 1, what)
        return bytes(self.b[start:start + count])

    def string(self, pos: int, what: str) -> str:
        self.need(pos, 8, what)
        if self.b[pos] & 0xC0 != 0x80:
            raw = bytes(self.b[pos:pos + 8])
            end = raw.find(b"\xff")
            data = raw if end < 0 else raw[:end]
        else:
            length = self.u32(pos, what)
            length = (length & 0x3F) | ((length & ~0xFF) >> 2)
            if length <= 8:
                raise WeaveError(f"{what}: an out-of-line string of {length} bytes")
            self.need(pos, 8, what)
            start = pos + int(struct.unpack_from("<i", self.b, pos + 4)[0])  # from the string
            self.need(start, length, what)
            data = bytes(self.b[start:start + length])
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise WeaveError(f"{what} is not UTF-8") from None

    def table(self, pos: int, what: str) -> tuple[int, int, int]:
        """(control bytes' position, len, capacity) of an ``ArchivedHashTable``."""
        length, cap = self.u32(pos + 4, what), self.u32(pos + 8, what)
        if length == 0 and cap == 0:
            return 0, 0, 0
        if length >= cap:
            raise WeaveError(f"{what}: a hash table of {length} entries in {cap} slots")
        ctrl = self.rel(pos, what)
        self.need(ctrl, _control_count(cap), what)
        return ctrl, length, cap

    def index_entries(self, pos: int, size: int, what: str) -> tuple[int, int]:
        """(first entry's position, count) of an ``ArchivedIndexMap``/``IndexSet``."""
        _, length, _ = self.table(pos, what)
        return self.slice(pos + 12, length, size, what), length

    def id_set(self, pos: int, what: str) -> list[int]:
        start, count = self.index_entries(pos, 16, what)
        out = [self.u128(start + 16 * i, what) for i in range(count)]
        if len(set(out)) != len(out):
            raise WeaveError(f"{what} repeats an id")
        return out

    def pairs(self, pos: int, what: str) -> Pairs:
        start, count = self.index_entries(pos, 16, what)
        out = [(self.string(start + 16 * i, f"{what} key"),
                self.string(start + 16 * i + 8, f"{what} value")) for i in range(count)]
        if len({k for k, _ in out}) != len(out):
            raise WeaveError(f"{what} repeats a key")
        return out


def decode(data: bytes) -> Weave:
    """The weave in ``data`` (header included), or ``WeaveError`` saying what is wrong."""
    version = version_of(data)
    if version is None:
        raise WeaveError("the file does not start with Tapestry Loom's weave header "
                         f"({MAGIC.decode()} and a version)")
    if version != VERSION:
        raise WeaveError(f"the weave is format version {version}; Tapestry Loom's loader "
                         f"(and Loom) read version {VERSION} only")
    body = data[HEADER:]
    if len(body) < ROOT_SIZE:
        raise WeaveError(f"the weave holds {len(body)} bytes after its header, fewer than "
                         f"its {ROOT_SIZE}-byte root: it is truncated")
    try:
        weave = _archive(body)
    except WeaveError as err:
        text = str(err)
        raise WeaveError(text if "truncated" in text else
                         f"{text} (the weave is damaged or truncated)") from None
    problem = check(weave)
    if problem:
        raise WeaveError(problem)
    return weave


def _archive(body: bytes) -> Weave:
    r = _Reader(body)
    root = len(body) - ROOT_SIZE
    ctrl, count, cap = r.table(root, "the node map")
    nodes: dict[int, WeaveNode] = {}
    for index in range(cap):
        if body[ctrl + index] & 0x80:
            continue
        entry = ctrl - (index + 1) * NODE_ENTRY
        r.need(entry, NODE_ENTRY, f"node slot {index}")
        key = r.u128(entry, f"node slot {index}")
        node = _node(r, entry + 16, f"node {_hex(key)}")
        if node.id != key:
            raise WeaveError(f"node {_hex(key)} is stored under another id ({_hex(node.id)})")
        if key in nodes:
            raise WeaveError(f"node {_hex(key)} is stored twice")
        nodes[key] = node
    if len(nodes) != count:
        raise WeaveError(f"the node map says {count} nodes but holds {len(nodes)}")
    roots = r.id_set(root + 12, "the root list")
    active = r.u128(root + 48, "the active node") if r.flag(root + 32, "the active node") \
        else None
    bookmarked = r.id_set(root + 64, "the bookmark list")
    tcount = r.u32(root + 84, "the active thread")
    tstart = r.slice(root + 80, tcount, 16, "the active thread")
    thread = [r.u128(tstart + 16 * i, "the active thread") for i in range(tcount)]
    metadata = r.pairs(root + 88, "the weave's metadata")
    return Weave(nodes, roots, active, bookmarked, metadata, thread)


def _node(r: _Reader, n: int, what: str) -> WeaveNode:
    r.need(n, 128, what)
    nid = r.u128(n, what)
    parent = r.u128(n + 32, f"{what}'s parent") if r.flag(n + 16, f"{what}'s parent") \
        else None
    children = r.id_set(n + 48, f"{what}'s children")
    active, bookmarked = r.flag(n + 64, f"{what}'s active flag"), \
        r.flag(n + 65, f"{what}'s bookmark flag")
    c = n + 68
    tag = r.u8(c, f"{what}'s content")
    tokens: list[tuple[bytes, Pairs]] | None = None
    if tag == 0:
        content = r.bytes_vec(c + 4, f"{what}'s text")
    elif tag == 1:
        count = r.u32(c + 8, f"{what}'s tokens")
        start = r.slice(c + 4, count, 24, f"{what}'s tokens")
        tokens = [(r.bytes_vec(start + 24 * i, f"{what}'s token {i}"),
                   r.pairs(start + 24 * i + 8, f"{what}'s token {i} metadata"))
                  for i in range(count)]
        content = b"".join(t for t, _ in tokens)
    else:
        raise WeaveError(f"{what}'s content has kind {tag} (0 text, 1 tokens)")
    metadata = r.pairs(c + 12, f"{what}'s metadata")
    model = None
    if r.flag(c + 28, f"{what}'s model"):
        model = Model(r.string(c + 32, f"{what}'s model label"),
                      r.pairs(c + 40, f"{what}'s model metadata"))
    return WeaveNode(nid, parent, children, active, bookmarked, content, tokens, metadata,
                     model)


def check(weave: Weave) -> str | None:
    """What breaks ``DependentWeave::validate`` (legacy_dependent.rs), or None."""
    nodes = weave.nodes
    for rid in weave.roots:
        if rid not in nodes:
            return f"root {_hex(rid)} is not a node of the weave"
    if weave.active is not None and weave.active not in nodes:
        return f"the active node {_hex(weave.active)} is not a node of the weave"
    marks = set(weave.bookmarked)
    roots = set(weave.roots)
    for bid in marks - nodes.keys():
        return f"bookmark {_hex(bid)} is not a node of the weave"
    for nid, node in nodes.items():
        name = f"node {_hex(nid)}"
        if node.parent == nid or nid in node.children or (
                node.parent is not None and node.parent in node.children):
            return f"{name} is its own parent or child"
        if node.parent is not None and node.parent not in nodes:
            return f"{name}'s parent {_hex(node.parent)} is not a node of the weave"
        if (node.parent is None) != (nid in roots):
            return f"{name} is {'not ' if nid not in roots else ''}listed as a root but has " \
                   f"{'no ' if node.parent is None else 'a '}parent"
        if node.active != (weave.active == nid):
            return f"{name}'s active flag disagrees with the weave's active node"
        if node.bookmarked != (nid in marks):
            return f"{name}'s bookmark flag disagrees with the weave's bookmark list"
        if node.parent is not None and nid not in nodes[node.parent].children:
            return f"{name} is not among its parent's children"
        for cid in node.children:
            child = nodes.get(cid)
            if child is None:
                return f"{name}'s child {_hex(cid)} is not a node of the weave"
            if child.parent != nid:
                return f"{name} lists {_hex(cid)} as a child, whose parent is another node"
    return None


def _hex(v: int) -> str:
    return f"{v:032x}"


# ── writing ──────────────────────────────────────────────────────────────────────────

_SEED = 0x517CC1B727220A95
_M64 = (1 << 64) - 1


def _word(h: int, w: int) -> int:
    return ((((h << 5) | (h >> 59)) & _M64) ^ w) * _SEED & _M64


def hash_u128(v: int) -> int:
    """rkyv's ``FxHasher64`` of a u128 (``write_u128``: low word, then high word)."""
    return _word(_word(0, v & _M64), v >> 64)


def hash_str(s: str) -> int:
    """rkyv's ``FxHasher64`` of a ``str`` (``write(bytes)`` then ``write_u8(0xff)``)."""
    b = s.encode("utf-8")
    h, n = 0, len(b)
    for i in range(n // 8):
        h = _word(h, int.from_bytes(b[8 * i:8 * i + 8], "little"))
    if n & 4:
        h = _word(h, int.from_bytes(b[n & ~7:(n & ~7) + 4], "little"))
    if n & 2:
        h = _word(h, int.from_bytes(b[n & ~3:(n & ~3) + 2], "little"))
    if n & 1:
        h = _word(h, b[n - 1])
    return _word(h, 0xFF)


def _capacity(length: int) -> int:
    return max(length * 8 // 7, length + 1) if length else 0


def _control_count(cap: int) -> int:
    return -(-cap // MAX_GROUP_WIDTH) * MAX_GROUP_WIDTH + MAX_GROUP_WIDTH - 1


def place(hashes: Sequence[int]) -> tuple[int, list[int], bytearray]:
    """rkyv's swiss-table insertion (``ArchivedHashTable::serialize_from_iter``): the
    capacity, each item's slot, and the control bytes."""
    cap = _capacity(len(hashes))
    probe_cap = -(-cap // MAX_GROUP_WIDTH) * MAX_GROUP_WIDTH
    count = probe_cap + MAX_GROUP_WIDTH - 1
    mask = (1 << (count - 1).bit_length()) - 1
    ctrl = bytearray(b"\xff" * count)
    slots = []
    for h in hashes:
        h2, pos, stride = h >> 57, h % cap, 0
        while True:
            bit = ctrl.find(b"\xff", pos, pos + MAX_GROUP_WIDTH)
            if bit >= 0:
                index = bit % cap
                ctrl[index] = h2
                if index < count - cap:
                    ctrl[cap + index] = h2
                slots.append(index)
                break
            while True:
                stride += MAX_GROUP_WIDTH
                pos = (pos + stride) & mask
                if pos < probe_cap:
                    break
    return cap, slots, ctrl


class _Out:
    def __init__(self) -> None:
        self.b = bytearray()

    def align(self, n: int) -> int:
        self.b.extend(b"\0" * (-len(self.b) % n))
        return len(self.b)

    def put(self, data: bytes | bytearray) -> int:
        pos = len(self.b)
        self.b.extend(data)
        return pos


# An archivable value: serialize(out) writes what it points to and returns a resolver;
# resolve(resolver, at) gives its inline bytes when placed at ``at``.
Resolve = Callable[[Any, int], bytes]


class _A:
    __slots__ = ("align", "resolve", "serialize", "size")

    def __init__(self, size: int, align: int, serialize: Callable[[_Out], Any],
                 resolve: Resolve) -> None:
        self.size, self.align, self.serialize, self.resolve = size, align, serialize, resolve


def _none(out: _Out) -> None:
    return None


def _raw(data: bytes, align: int) -> _A:
    return _A(len(data), align, _none, lambda r, at: data)


def _u128(v: int) -> _A:
    return _raw(v.to_bytes(16, "little"), 16)


def _rel(target: int, at: int) -> bytes:
    return struct.pack("<i", target - at)


def _bytes(data: bytes) -> _A:
    def ser(out: _Out) -> int:
        return out.put(data)
    return _A(8, 4, ser, lambda pos, at: _rel(pos, at) + struct.pack("<I", len(data)))


def _str(s: str) -> _A:
    b = s.encode("utf-8")
    if len(b) <= 8:
        return _raw(b + b"\xff" * (8 - len(b)), 4)
    n = len(b)
    enc = (n & 0x3F) | 0x80 | ((n & ~0x3F) << 2)

    def ser(out: _Out) -> int:
        return out.put(b)
    return _A(8, 4, ser, lambda pos, at: struct.pack("<I", enc) + _rel(pos, at))


def _struct(fields: list[_A]) -> _A:
    offsets, size, align = [], 0, 1
    for f in fields:
        size += -size % f.align
        offsets.append(size)
        size += f.size
        align = max(align, f.align)
    size += -size % align

    def ser(out: _Out) -> list[Any]:
        return [f.serialize(out) for f in fields]

    def res(rs: list[Any], at: int) -> bytes:
        buf = bytearray(size)
        for f, off, r in zip(fields, offsets, rs, strict=True):
            buf[off:off + f.size] = f.resolve(r, at + off)
        return bytes(buf)
    return _A(size, align, ser, res)


def _option(value: _A | None, like: _A) -> _A:
    some = _struct([_raw(b"\x01", 1), like if value is None else value])
    if value is None:
        return _raw(b"\0" * some.size, some.align)
    return some


def _vec(items: list[_A], size: int, align: int) -> _A:
    def ser(out: _Out) -> int:
        rs = [i.serialize(out) for i in items]
        pos = out.align(align)
        for i, r in zip(items, rs, strict=True):
            out.put(i.resolve(r, len(out.b)))
        return pos
    return _A(8, 4, ser, lambda pos, at: _rel(pos, at) + struct.pack("<I", len(items)))


def _table(out: _Out, items: list[_A], hashes: list[int], size: int, align: int
           ) -> tuple[int, int]:
    """Serializes a swiss table; (control bytes' position, capacity), (0, 0) when empty."""
    if not items:
        return 0, 0
    cap, slots, ctrl = place(hashes)
    ordered: list[_A | None] = [None] * cap
    for item, slot in zip(items, slots, strict=True):
        ordered[slot] = item
    rs = {i: a.serialize(out) for i, a in enumerate(ordered) if a is not None}
    out.align(align)
    zero = b"\0" * size
    for i in range(cap - 1, -1, -1):
        a = ordered[i]
        out.put(zero if a is None else a.resolve(rs[i], len(out.b)))
    return out.put(ctrl), cap


def _table_header(ctrl: int, length: int, cap: int, at: int) -> bytes:
    ptr = struct.pack("<i", 1) if not length else _rel(ctrl, at)
    return ptr + struct.pack("<II", length, cap)


def _hash_map(entries: list[_A], hashes: list[int], size: int, align: int) -> _A:
    def ser(out: _Out) -> tuple[int, int]:
        return _table(out, entries, hashes, size, align)
    return _A(12, 4, ser, lambda r, at: _table_header(r[0], len(entries), r[1], at))


def _index_map(pairs: list[tuple[_A, _A]], hashes: list[int], ealign: int) -> _A:
    entries = [_struct([k, v]) for k, v in pairs]

    def ser(out: _Out) -> tuple[int, int, int]:
        indices = [_raw(struct.pack("<I", i), 4) for i in range(len(pairs))]
        ctrl, cap = _table(out, indices, hashes, 4, 4)
        rs = [e.serialize(out) for e in entries]
        pos = out.align(ealign)
        for e, r in zip(entries, rs, strict=True):
            out.put(e.resolve(r, len(out.b)))
        return ctrl, cap, pos
    return _A(16, 4, ser, lambda r, at: _table_header(r[0], len(pairs), r[1], at) +
              _rel(r[2], at + 12))


def _id_set(ids: list[int]) -> _A:
    return _index_map([(_u128(i), _raw(b"", 1)) for i in ids], [hash_u128(i) for i in ids], 16)


def _pairs(pairs: Pairs) -> _A:
    return _index_map([(_str(k), _str(v)) for k, v in pairs], [hash_str(k) for k, _ in pairs],
                      4)


_NO_MODEL = _struct([_str(""), _pairs([])])


def _node_value(node: WeaveNode) -> _A:
    if node.tokens is None:
        content = _struct([_raw(b"\0", 1), _bytes(node.content)])
    else:
        toks = [_struct([_bytes(t), _pairs(m)]) for t, m in node.tokens]
        content = _struct([_raw(b"\x01", 1), _vec(toks, 24, 4)])
    model = None if node.model is None else _struct([_str(node.model.label),
                                                     _pairs(node.model.metadata)])
    contents = _struct([content, _pairs(node.metadata), _option(model, _NO_MODEL)])
    parent = None if node.parent is None else _u128(node.parent)
    return _struct([_u128(node.id), _option(parent, _u128(0)), _id_set(node.children),
                    _raw(bytes([node.active]), 1), _raw(bytes([node.bookmarked]), 1),
                    contents])


def encode(weave: Weave) -> bytes:
    """The weave's file: header (version 0) and archive. ``check`` must pass first."""
    problem = check(weave)
    if problem:
        raise WeaveError(problem)
    with collector_paused():  # (a node is a few dozen small objects, none in a cycle)
        return _encode(weave)


def _encode(weave: Weave) -> bytes:
    ids = list(weave.nodes)
    entries = [_struct([_u128(i), _node_value(weave.nodes[i])]) for i in ids]
    active = None if weave.active is None else _u128(weave.active)
    root = _struct([
        _hash_map(entries, [hash_u128(i) for i in ids], NODE_ENTRY, 16),
        _id_set(weave.roots), _option(active, _u128(0)), _id_set(weave.bookmarked),
        _vec([_u128(i) for i in weave.thread], 16, 16), _pairs(weave.metadata)])
    out = _Out()
    rs = root.serialize(out)
    pos = out.align(root.align)
    out.put(root.resolve(rs, pos))
    return MAGIC + struct.pack("<Q", VERSION) + bytes(out.b)
