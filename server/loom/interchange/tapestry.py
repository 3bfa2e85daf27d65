"""Tapestry Loom's ``.tapestry`` weave → an Open Loom 2.0 document (``tapestry_weave`` reads
the bytes). One weave is one tree, titled after the file. Decisions:

- Buffer mode: a weave's document is its nodes' texts joined along the active thread.
  Node ids are Tapestry's u128 ULIDs written as ULID strings; a node's ``createdAt`` is its
  ULID's time (Tapestry records no other). Sibling order is each node's ``to`` order,
  root order the weave's ``roots``.
- Node text is Tapestry's bytes as UTF-8. Bytes that are not UTF-8 (a character split
  between two nodes) are read with U+FFFD and kept whole in ``extensions.tapestry.bytes``
  (base64) so that writing the weave back gives the same bytes.
- A node with a ``model`` is the model's (``author.name`` and ``generation.model`` are
  its label, the node's metadata its ``generation.parameters``), any other the human's.
- Token content → Loom's token data: ``extensions.loom.generations[0].logprobs`` entries
  ``{token, logprob = ln(probability), top_logprobs}`` (alternatives from Tapestry's
  ``counterfactual``); tokens whose bytes are not whole characters are joined with the
  next ones (their probabilities multiplied). The tokens' byte lengths and metadata stay
  in ``extensions.tapestry.tokens`` for an exact way back.
- ``bookmarked`` → ``meta.bookmarked`` (the weave's bookmark order in the tree's
  extension); the weave's ``active`` node → ``currentNodeId``; the weave's metadata
  (``created``, ``notes``…) → the tree's extension, ``notes`` also the description and
  ``created`` the tree's ``createdAt``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from pathlib import PurePath
from typing import Any

from loom.interchange.adapters import document, edge, text_node
from loom.interchange.tapestry_weave import Pairs, Weave, WeaveError, WeaveNode, decode
from loom.interchange.times import format_time, parse_iso
from loom.model.ids import new_ulid

NAME = "tapestry"
NS = "tapestry"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid_text(value: int) -> str:
    """A u128 as the 26 Crockford base32 characters of a ULID."""
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def ulid_value(text: str) -> int | None:
    """A ULID string's u128, or None when ``text`` is not a ULID."""
    if len(text) != 26:
        return None
    value = 0
    for ch in text.upper():
        digit = _CROCKFORD.find(ch)
        if digit < 0:
            return None
        value = value * 32 + digit
    return value if value < 1 << 128 else None


def read_tapestry(data: bytes, name: str) -> dict[str, Any]:
    """The weave in ``data`` as an Open Loom 2.0 document (one tree); a damaged weave
    raises ``WeaveError`` saying what is wrong."""
    return convert(decode(data), name)


def convert(weave: Weave, name: str) -> dict[str, Any]:
    if not weave.nodes:
        raise WeaveError("the weave has no nodes (a new, empty weave): there is nothing to "
                         "import")
    order = _preorder(weave)
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    for nid in order:
        wn = weave.nodes[nid]
        key = ulid_text(nid)
        nodes[key] = _node(key, wn)
        edges.extend(edge(key, ulid_text(c)) for c in wn.children)
    meta = dict(weave.metadata)
    tree: dict[str, Any] = {"id": new_ulid(),
                            "title": PurePath(name).stem or name, "mode": "buffer",
                            "rootNodeIds": [ulid_text(r) for r in weave.roots],
                            "nodes": nodes, "edges": edges}
    if weave.active is not None:
        tree["currentNodeId"] = ulid_text(weave.active)
    created = parse_iso(meta.get("created"))
    if created is not None:
        tree["createdAt"] = format_time(created)
    if meta.get("notes", "").strip():
        tree["description"] = meta["notes"]
    ext: dict[str, Any] = {"metadata": meta}
    marks = [ulid_text(b) for b in weave.bookmarked]
    if marks != [k for k in nodes if nodes[k].get("meta", {}).get("bookmarked")]:
        ext["bookmarks"] = marks
    tree["extensions"] = {NS: ext}
    return document([tree], generator={"name": "Tapestry Loom (read by Loom)"})


def _preorder(weave: Weave) -> list[int]:
    out: list[int] = []
    stack = list(reversed(weave.roots))
    while stack:
        nid = stack.pop()
        out.append(nid)
        stack.extend(reversed(weave.nodes[nid].children))
    if len(out) != len(weave.nodes):
        raise WeaveError(f"{len(weave.nodes) - len(out)} node(s) of the weave are not "
                         "reachable from its roots (their parents form a cycle)")
    return out


def _text(raw: bytes, ext: dict[str, Any]) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        ext["bytes"] = base64.b64encode(raw).decode("ascii")
        return raw.decode("utf-8", "replace")


def _node(key: str, wn: WeaveNode) -> dict[str, Any]:
    ext: dict[str, Any] = {}
    text = _text(wn.content, ext)
    if wn.metadata:
        ext["metadata"] = dict(wn.metadata)
    loom: dict[str, Any] = {}
    generation = None
    created = format_time((wn.id >> 80) / 1000)
    if wn.model is not None:
        ext["model"] = {"label": wn.model.label, "metadata": dict(wn.model.metadata)}
        params = {k: _scalar(v) for k, v in wn.metadata}
        generation = {"model": wn.model.label, **({"parameters": params} if params else {})}
    if wn.tokens is not None:
        ext["tokens"] = [[len(t), dict(m)] for t, m in wn.tokens]
        if "bytes" not in ext:
            entries = _entries(wn.tokens)
            if entries:
                loom["generations"] = [{
                    "provider": "", "model": wn.model.label if wn.model else "",
                    "params": {k: _scalar(v) for k, v in wn.metadata}, "usage": {},
                    "completionIndex": 0, "created": created, "logprobs": entries}]
                loom["summary"] = _summary(text)
                loom["summarySource"] = "extractive"
    node = text_node(key, text, "model" if wn.model is not None else "human",
                     name=wn.model.label if wn.model is not None else None, created=created,
                     meta={"bookmarked": wn.bookmarked}, generation=generation)
    extensions = {k: v for k, v in ((NS, ext), ("loom", loom)) if v}
    if extensions:
        node["extensions"] = extensions
    return node


def _summary(text: str) -> str | None:
    from loom.render.text import extractive_summary

    return extractive_summary(text) or None


def _scalar(value: str) -> Any:
    """A metadata value as the number it spells exactly ("20" → 20), else the string."""
    for kind in (int, float):
        try:
            number = kind(value)
        except ValueError:
            continue
        if str(number) == value and (kind is int or math.isfinite(number)):
            return number
    return value


def _logprob(meta: dict[str, str] | Pairs) -> float | None:
    prob = dict(meta).get("probability")
    try:
        p = float(prob) if prob is not None else math.nan
    except ValueError:
        return None
    return math.log(p) if 0 < p <= 1 else None


def _alternatives(meta: dict[str, str]) -> list[dict[str, Any]]:
    raw = meta.get("counterfactual")
    if not raw:
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    out = []
    for item in items if isinstance(items, list) else ():
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], dict)):
            continue
        try:
            token = base64.urlsafe_b64decode(item[0] + "=" * (-len(item[0]) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        out.append({"token": token, "logprob": _logprob(item[1])})
    return out


def _entries(tokens: list[tuple[bytes, Pairs]]) -> list[dict[str, Any]]:
    """Loom's per-token entries; bytes of a character split over tokens are joined."""
    out: list[dict[str, Any]] = []
    pending, lp_sum, alts = b"", 0.0, None
    known = True
    for raw, pairs in tokens:
        meta = dict(pairs)
        lp = _logprob(meta)
        if not pending:
            alts = _alternatives(meta)
        pending += raw
        known = known and lp is not None
        lp_sum += lp or 0.0
        try:
            text = pending.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text:
            out.append({"token": text, "logprob": lp_sum if known else None,
                        "top_logprobs": alts or []})
        pending, lp_sum, known = b"", 0.0, True
    return out


def read_weave(data: bytes, name: str) -> dict[str, Any]:
    """``read_tapestry`` for the importer: a weave it cannot read is a ``LoomError``
    (INVALID_SYNTAX) naming the file and what is wrong with it."""
    from loom.errors import LoomError

    try:
        return read_tapestry(data, name)
    except WeaveError as err:
        raise LoomError("INVALID_SYNTAX", f"{name} is a Tapestry Loom weave that Loom cannot read: "
                        f"{err}", "open it in Tapestry Loom and save it again; nothing was "
                        "imported") from None
