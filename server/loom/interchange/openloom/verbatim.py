"""A foreign file's node kept as the file wrote it, with the state Loom imported it in.

Rendering every node as an export would and diffing it against the file (``keep.diff``)
was a third of a 100,000-node import, and the kept differences repeated what Loom
renders (a node's summary, its localId) in every row. A node of a file Loom did not
write is kept whole instead (``file``, its single text block left out when it is the
node's text) beside a small fingerprint of the fields Loom may change after an import
(``at``: bookmark, prune and exclude flags, the summary's digest and source, the
label; the rest of a node is immutable). An export gives the file's node back as it
was while the fingerprint holds, and otherwise does what the eager design did at import
time, only for that node: renders the node as it was imported, diffs the file against
it and applies the difference to today's rendering, so that what was changed in Loom
wins and everything else comes back as the file had it.

Edges are kept the same way (``edge_state``): the file's edge while its sibling order,
its place among its siblings and its sources are as imported.

A summary changed since the import is known by its digest only: the rendering "as
imported" holds a stand-in that differs from today's summary, which sends every kept
entry that involves the summary to Loom's side, as the real old summary would have.
"""

from __future__ import annotations

import hashlib
from typing import Any

_FLAGS = (("bookmarked", 1), ("pruned", 2), ("excluded", 4))
_STAND_IN = "\x00(the summary the node had when it was imported)"


def summary_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=9).hexdigest()


def state(row: dict[str, Any]) -> list[Any]:
    """The fingerprint of a node row's changeable fields (a JSON list)."""
    # (_FLAGS spelled out: an import fingerprints every node)
    flags = (1 if row["bookmarked"] else 0) | (2 if row["pruned"] else 0) | \
        (4 if row["excluded"] else 0)
    summary = row["summary"]
    return [flags, None if summary is None else summary_digest(summary), row["summary_source"],
            row["label"]]


def _one_text_block(content: Any, text: str) -> bool:
    if not (isinstance(content, list) and len(content) == 1):
        return False
    block = content[0]
    return type(block) is dict and len(block) == 2 and block.get("type") == "text" and \
        type(block.get("text")) is str and block["text"] == text


def keep_node(raw: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """What a row's interchange record keeps of the file's node ``raw`` (not copied: the
    caller stores it as it is)."""
    if "content" in raw and _one_text_block(raw["content"], row["content"]):
        # The one text block is the node's own text: not stored twice.
        file = dict(raw)  # (a copy: the caller's document is left as it is)
        file["content"] = None
        return {"file": file, "text": True, "at": state(row)}
    return {"file": raw, "at": state(row)}


def kept(ic: dict[str, Any]) -> bool:
    """Whether the interchange record holds a verbatim node."""
    return "file" in ic


def unchanged(row: dict[str, Any], ic: dict[str, Any]) -> bool:
    """Whether nothing Loom may change about the node changed since the import."""
    return bool(state(row) == ic["at"])


def original(row: dict[str, Any], ic: dict[str, Any]) -> dict[str, Any]:
    """The file's node as it was (a fresh copy: the caller may change it)."""
    out = copy_json(ic["file"])
    if ic.get("text"):
        out["content"] = [{"type": "text", "text": row["content"]}]
    return out  # type: ignore[no-any-return]


def as_imported(row: dict[str, Any], ic: dict[str, Any]) -> dict[str, Any]:
    """The row as it was when the file was imported (the summary maybe a stand-in)."""
    flags, digest, source, label = ic["at"]
    old = dict(row)
    for name, bit in _FLAGS:
        old[name] = bool(flags & bit)
    old["summary_source"], old["label"] = source, label
    if digest is None:
        old["summary"] = None
    elif row["summary"] is None or summary_digest(row["summary"]) != digest:
        old["summary"] = _STAND_IN
    return old


def edge_state(edge: dict[str, Any], counted: int, sources: list[Any]) -> list[int]:
    """The fingerprint of an edge: its sibling order, its place among its parent's edges
    of its kind (where an export counts it), how many sources it has (a split adds one)."""
    return [edge["sibling_order"], counted, len(sources)]


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
