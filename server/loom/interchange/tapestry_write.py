"""An Open Loom 2.0 document's tree → a Tapestry Loom ``.tapestry`` weave (version 0, the
one Tapestry's loader reads; ``tapestry_weave`` writes the bytes).

Mapping (``docs/openloom.md``, "Other looms"):

- text → the node's bytes (UTF-8; ``extensions.tapestry.bytes`` when it holds the weave's
  own bytes for this text); tree structure, sibling order and root order → ``from``/``to``
  and ``roots``;
- node id → its u128: a ULID id keeps its random part, and its time part is the node's
  ``createdAt`` (Tapestry shows a node's time from its id), else the id's own time;
- a model's node (``author.role`` model) → ``model.label`` from its generation's model,
  agent or author name, ``model.metadata`` kept from ``extensions.tapestry.model``; its
  ``metadata`` from ``extensions.tapestry.metadata``, else the generation's parameters
  (scalars, as strings);
- token data (``extensions.tapestry.tokens``, else Loom's logprobs entries in
  ``extensions.loom.generations``) → token content with ``probability`` (exp of the
  logprob, 4 decimals as Tapestry writes it), ``original_length`` and ``counterfactual``
  (the alternatives); text the tokens do not cover is one last token without metadata;
- ``meta.bookmarked`` → bookmarked (in ``extensions.tapestry.bookmarks`` order when
  given); ``currentNodeId`` → the active node; the tree's ``extensions.tapestry.metadata``,
  else ``created``/``notes`` from its ``createdAt``/description → the weave's metadata.
"""

from __future__ import annotations

import base64
import json
import math
import os
from typing import Any

from loom.interchange.strict_tree import (
    StrictNode,
    StrictTree,
    cannot_hold,
    inventory,
    strict_tree,
)
from loom.interchange.tapestry import NS, ulid_value
from loom.interchange.tapestry_weave import Model, Pairs, Weave, WeaveNode, encode
from loom.interchange.times import parse_iso
from loom.interchange.written import Written

MEDIA_TYPE = "application/octet-stream"
EXTENSION = ".tapestry"
LOOM = "Tapestry Loom"
#: what a weave has no place for (``strict_tree.CANNOT_HOLD`` keys)
_LACKS = ("mixed", "system", "tags", "tree tags", "pruned", "excluded", "ratings", "notes",
          "summaries", "edits", "media", "links", "annotations", "second parents",
          "extra sources", "system context")


def write_tapestry(document: dict[str, Any], tree_index: int = 0) -> Written:
    """The tree at ``tree_index`` of an Open Loom document as a weave file's bytes."""
    st = strict_tree(document, tree_index)
    ids = _ids(st)
    nodes: dict[int, WeaveNode] = {}
    for key in st.order:
        node = st.nodes[key]
        nodes[ids[key]] = _node(st, node, ids)
    marks = _bookmarks(st, ids)
    for nid in marks:
        nodes[nid].bookmarked = True
    active = ids[st.current] if st.current is not None else None
    if active is not None:
        nodes[active].active = True
    thread: list[int] = []
    at = active
    while at is not None:
        thread.append(at)
        at = nodes[at].parent
    weave = Weave(nodes, [ids[r] for r in st.roots], active, marks, _weave_metadata(st),
                  thread)
    counts = inventory(st)
    notes = cannot_hold(counts, _LACKS, LOOM)
    if any(st.agent_name(n) for n in st.nodes.values() if n.role == "human"):
        notes.append(f"the names of the people who wrote {counts['human']} human node(s): "
                     f"{LOOM} records no author for text a person wrote")
    finer = sum(1 for n in st.nodes.values()
                if (t := parse_iso(n.raw.get("createdAt"))) is not None and
                abs(t * 1000 - round(t * 1000)) > 1e-3)
    if finer:
        notes.append(f"the sub-millisecond part of {finer} node time(s): {LOOM} keeps a "
                     "node's time in its id, to the millisecond")
    if counts["generations"]:
        notes.append(f"the generation records of {counts['generations']} node(s) beyond "
                     f"model and parameters (provider, usage, latency, hashes, raw "
                     f"responses): {LOOM} has no place for them")
    if counts["logprobs"]:
        notes.append(f"the exact logprobs of {counts['logprobs']} node(s): {LOOM} keeps "
                     "each token's probability to 4 decimals")
    return Written(encode(weave), MEDIA_TYPE, EXTENSION, notes)


def _ids(st: StrictTree) -> dict[str, int]:
    """Each node's u128: a ULID's random part with the node's creation time."""
    out: dict[str, int] = {}
    used: set[int] = set()
    for key in st.order:
        node = st.nodes[key]
        given = ulid_value(key)
        created = parse_iso(node.raw.get("createdAt"))
        millis = round(created * 1000) if created is not None and created >= 0 else None
        if given is not None:
            rand = given & ((1 << 80) - 1)
            millis = millis if millis is not None else given >> 80
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        if millis is None or millis >= 1 << 48:
            millis = (given >> 80) if given is not None else _now_ms()
        value = (millis << 80) | rand
        while value in used:
            value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
        used.add(value)
        out[key] = value
    return out


def _now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def _bookmarks(st: StrictTree, ids: dict[str, int]) -> list[int]:
    marked = [k for k in st.order if st.nodes[k].meta.get("bookmarked") is True]
    given = st.ext(NS).get("bookmarks")
    if isinstance(given, list) and sorted(map(str, given)) == sorted(marked):
        marked = [str(k) for k in given]
    return [ids[k] for k in marked]


def _weave_metadata(st: StrictTree) -> Pairs:
    given = st.ext(NS).get("metadata")
    if isinstance(given, dict) and all(isinstance(v, str) for v in given.values()):
        return [(str(k), v) for k, v in given.items()]
    created = st.tree.get("createdAt")
    notes = st.tree.get("description")
    return [("created", created if isinstance(created, str) else ""),
            ("notes", notes if isinstance(notes, str) else "")]


def _str_pairs(value: Any) -> Pairs | None:
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return [(str(k), v) for k, v in value.items()]
    return None


def _text_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def _generations(node: StrictNode) -> list[dict[str, Any]]:
    gens = node.ext("loom").get("generations")
    return [g for g in gens if isinstance(g, dict)] if isinstance(gens, list) else []


def _node(st: StrictTree, node: StrictNode, ids: dict[str, int]) -> WeaveNode:
    ext = node.ext(NS)
    content = node.text.encode("utf-8")
    raw = ext.get("bytes")
    if isinstance(raw, str):
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            data = None
        if data is not None and data.decode("utf-8", "replace") == node.text:
            content = data
    model = None
    metadata = _str_pairs(ext.get("metadata"))
    if node.role == "model":
        label = st.model_of(node) or "model"
        kept = ext.get("model")
        model_meta = _str_pairs(kept.get("metadata")) if isinstance(kept, dict) else None
        if isinstance(kept, dict) and kept.get("label") == label and model_meta is not None:
            model = Model(label, model_meta)
        else:
            model = Model(label, [])
        if metadata is None:
            params: dict[str, Any] = {}
            gen = node.raw.get("generation")
            if isinstance(gen, dict) and isinstance(gen.get("parameters"), dict):
                params = gen["parameters"]
            for g in _generations(node):
                if isinstance(g.get("params"), dict) and g["params"]:
                    params = g["params"]
                    break
            metadata = [(str(k), t) for k, v in params.items()
                        if (t := _text_value(v)) is not None]
    parent = ids[node.parent] if node.parent is not None else None
    return WeaveNode(ids[node.id], parent, [ids[c] for c in node.children], False, False,
                     content, _tokens(node, ext, content), metadata or [], model)


def _tokens(node: StrictNode, ext: dict[str, Any], content: bytes
            ) -> list[tuple[bytes, Pairs]] | None:
    kept = ext.get("tokens")
    if isinstance(kept, list) and all(
            isinstance(t, list) and len(t) == 2 and isinstance(t[0], int) and t[0] >= 0 and
            _str_pairs(t[1]) is not None for t in kept) and \
            sum(t[0] for t in kept) == len(content):
        out, at = [], 0
        for length, meta in kept:
            out.append((content[at:at + length], _str_pairs(meta) or []))
            at += length
        return out
    for g in _generations(node):
        entries = g.get("logprobs")
        if isinstance(entries, list) and entries:
            return _from_entries(entries, node.text)
    return None


def _probability(logprob: Any) -> str | None:
    if not isinstance(logprob, int | float) or isinstance(logprob, bool) or logprob > 0 or \
            not math.isfinite(logprob):
        return None
    p = round(math.exp(logprob) * 10000) / 10000
    return str(int(p)) if p in (0, 1) else repr(p)


def _from_entries(entries: list[Any], text: str) -> list[tuple[bytes, Pairs]] | None:
    out: list[tuple[bytes, Pairs]] = []
    pos = 0
    for entry in entries:
        token = entry.get("token") if isinstance(entry, dict) else None
        if not isinstance(token, str) or not text.startswith(token, pos):
            break
        if not token:
            continue
        data = token.encode("utf-8")
        meta: Pairs = []
        p = _probability(entry.get("logprob"))
        if p is not None:
            meta.append(("probability", p))
        meta.append(("original_length", str(len(data))))
        alts = []
        for alt in entry.get("top_logprobs") or ():
            if isinstance(alt, dict) and isinstance(alt.get("token"), str):
                ap = _probability(alt.get("logprob"))
                alts.append([base64.urlsafe_b64encode(alt["token"].encode()).decode()
                             .rstrip("="), {"probability": ap} if ap is not None else {}])
        if alts:
            meta.append(("counterfactual", json.dumps(alts, separators=(",", ":"))))
        out.append((data, meta))
        pos += len(token)
    if not out:
        return None
    if pos < len(text):
        out.append((text[pos:].encode("utf-8"), []))
    return out
