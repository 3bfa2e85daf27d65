"""A tree → a MiniLoom save (JD-P/miniloom), in the shape its loader reads (src/file-manager.js
``loadFileData`` and src/model.js ``LoomTree.loadFromData`` at b559337; see
docs/openloom.md):

``{"loomTree": {"nodeStore": {id: node}}, "focus": node}`` with each node ``{id, timestamp,
type, patch, summary, rating, read, parent, children, model, error, finishReason}``.
What the loader needs, and so what is written:

- The root is ``nodeStore["1"]`` (``this.root = this.nodeStore["1"]``) and is rendered as
  ``""`` whatever its patch; every other node's text is its patches applied from the root
  down (``applyPatches``), the root's included, each a diff-match-patch ``patch_make(parent
  text, node text)`` stored as its patch objects (``[{diffs: [[op, text]…], start1, start2,
  length1, length2}]``; the root's is ``""``). So a tree whose one root is empty keeps it as
  node "1"; otherwise an empty root "1" holds the tree's root(s) as its children (as
  MiniLoom's own loomsidian import does).
- Ids are "1".."N" (``createNode`` names a new node ``String(count + 1)``: gaps would
  collide), kept when a MiniLoom import's ids already are that, else numbered depth-first.
- Patches are computed as MiniLoom computes them: diff-match-patch over JavaScript strings,
  whose positions count UTF-16 code units, so a character beyond U+FFFF is two units (and a
  patch's context may hold half of one, written as a ``\\uXXXX`` escape as JSON.stringify
  does). Each patch is checked to rebuild its node's text from its parent's exactly; a
  MiniLoom import's kept patch is reused when it still does.
- ``focus`` is the current node's object (the loader reads ``focus.id``); ``type`` is
  ``gen`` for a model's node, ``user`` otherwise, ``root`` for node "1"; ``rating`` is
  true/false for a positive/negative rating; ``summary`` the node's note (else its Loom
  summary); ``timestamp`` milliseconds; ``model`` the node's model.
"""

from __future__ import annotations

import json
import re
from typing import Any

import diff_match_patch as dmp_module

from loom.interchange.strict_tree import (
    StrictNode,
    StrictTree,
    cannot_hold,
    inventory,
    strict_tree,
)
from loom.interchange.times import parse_iso
from loom.interchange.utf16 import escape_lone_halves, from_units, to_units
from loom.interchange.written import Written

NS = "miniloom"
LOOM = "MiniLoom"
ROOT = "1"
_SUB_MILLI = re.compile(r"\.\d{3}0*[1-9]")  # a time with digits beyond milliseconds
_NODE_OWN = ("id", "timestamp", "type", "patch", "summary", "rating", "read", "parent",
             "children", "model", "error", "finishReason")
_NOT_RESTORED = (*_NODE_OWN, "rewrite", "originalId")  # the importer's own notes
#: what MiniLoom has no place for (keys of strict_tree.CANNOT_HOLD)
_LACKS = ("mixed", "system", "agents", "bookmarks", "tags", "tree tags", "pruned", "excluded",
          "uneven ratings", "summaries", "generations", "logprobs", "edits", "media", "links",
          "annotations", "second parents", "extra sources", "description", "system context")


def _patch_json(patches: list[Any]) -> list[dict[str, Any]]:
    return [{"diffs": [[op, from_units(text)] for op, text in p.diffs], "start1": p.start1,
             "start2": p.start2, "length1": p.length1, "length2": p.length2}
            for p in patches]


def kept_patch(kept: dict[str, Any]) -> Any:
    """The patch a MiniLoom import kept: as the file had it, or (one holding half of a
    character, which the database cannot store) its JSON text, ``patchJson``."""
    if "patchJson" in kept and isinstance(kept["patchJson"], str):
        try:
            return json.loads(kept["patchJson"])
        except ValueError:
            return None
    return kept.get("patch")


def _patch_objects(kept: Any) -> list[Any] | None:
    """A kept patch (MiniLoom's JSON) as diff-match-patch objects in UTF-16 units; None when
    it is not one."""
    if not isinstance(kept, list):
        return None
    out = []
    try:
        for item in kept:
            p = dmp_module.patch_obj()
            p.diffs = [(int(d[0]), to_units(str(d[1]))) for d in item["diffs"]]
            p.start1, p.start2 = item["start1"], item["start2"]
            p.length1, p.length2 = int(item["length1"]), int(item["length2"])
            out.append(p)
    except (TypeError, KeyError, ValueError, IndexError):
        return None
    return out


def _applies(dmp: dmp_module.diff_match_patch, patches: list[Any], base: str, text: str
             ) -> bool:
    got, _results = dmp.patch_apply(patches, base)
    return bool(got == text)


def _ids(st: StrictTree, reuse_root: bool) -> dict[str | None, str]:
    """Loom id → MiniLoom id (``None`` is a made root)."""
    ordered: list[str | None] = ([] if reuse_root else [None]) + list(st.order)
    numbers = [str(i) for i in range(1, len(ordered) + 1)]
    if reuse_root and sorted(st.order) == sorted(numbers) and st.order[0] == ROOT:
        return {nid: nid for nid in st.order}  # a MiniLoom import's own ids
    return dict(zip(ordered, numbers, strict=True))


def _millis(value: Any) -> int | None:
    ts = parse_iso(value)
    return None if ts is None else round(ts * 1000)


def _summary(node: StrictNode) -> str | None:
    note = node.meta.get("note")
    if isinstance(note, str) and note:
        return note
    summary = node.ext("loom").get("summary")
    return summary if isinstance(summary, str) and summary else None


def _rating(node: StrictNode) -> bool | None:
    rating = node.meta.get("rating")
    if isinstance(rating, bool) or not isinstance(rating, int | float) or rating == 0:
        return None
    return rating > 0


def _read(node: StrictNode) -> bool:
    read = node.ext(NS).get("read")
    if isinstance(read, bool):
        return read
    unread = node.ext("loomsidian").get("unread")
    return not unread if isinstance(unread, bool) else True


def write_miniloom(document: dict[str, Any], tree_index: int = 0) -> Written:
    """The tree at ``tree_index`` of an Open Loom document as a MiniLoom save (see the
    module's docstring)."""
    st = strict_tree(document, tree_index)
    reuse_root = len(st.roots) == 1 and st.nodes[st.roots[0]].text == ""
    mid = _ids(st, reuse_root)
    dmp = dmp_module.diff_match_patch()
    full: dict[str | None, str] = {None: ""}  # Loom id → its whole text, in UTF-16 units
    store: dict[str, dict[str, Any]] = {}
    failed = 0
    if not reuse_root:
        stamps = [t for t in (_millis(st.nodes[r].raw.get("createdAt")) for r in st.roots)
                  if t is not None]
        store[ROOT] = {"id": ROOT, "timestamp": min(stamps, default=None), "type": "root",
                       "patch": "", "summary": "Root Node", "rating": None, "read": True,
                       "parent": None, "children": [mid[r] for r in st.roots], "model": None,
                       "error": None, "finishReason": None}
    for nid in st.order:
        node = st.nodes[nid]
        kept = node.ext(NS)
        is_root = mid[nid] == ROOT
        base = full[node.parent]
        text = to_units(node.text)
        full[nid] = text if kept.get("rewrite") is True or is_root else base + text
        if is_root:
            patch: Any = ""
        else:
            original = kept_patch(kept)
            objects = _patch_objects(original)
            if objects is not None and _applies(dmp, objects, base, full[nid]):
                patch = original
            else:
                objects = dmp.patch_make(base, full[nid])
                failed += not _applies(dmp, objects, base, full[nid])
                patch = _patch_json(objects)
        parent = mid[node.parent] if node.parent is not None else (None if is_root else ROOT)
        entry: dict[str, Any] = {
            "id": mid[nid],
            "timestamp": _millis(node.raw.get("createdAt")),
            "type": "root" if is_root else "gen" if node.role == "model" else "user",
            "patch": patch,
            "summary": _summary(node),
            "rating": _rating(node),
            "read": _read(node),
            "parent": parent,
            "children": [mid[c] for c in node.children],
            "model": kept.get("model") or st.model_of(node),
            "error": kept.get("error"),
            "finishReason": kept.get("finishReason"),
        }
        entry.update({k: v for k, v in kept.items() if k not in _NOT_RESTORED})
        store[mid[nid]] = entry
    store = {k: store[k] for k in sorted(store, key=int)}  # as a JS object lists them
    focus = store[mid[st.current]] if st.current is not None else store[ROOT]
    extras = st.ext(NS)
    tree_extra = extras.get("loomTree") if isinstance(extras.get("loomTree"), dict) else {}
    data: dict[str, Any] = {"loomTree": {"nodeStore": store, **{
        k: v for k, v in tree_extra.items() if k != "nodeStore"}}, "focus": focus}
    data.update({k: v for k, v in extras.items() if k not in ("loomTree", "focus")})
    return Written(_json(data), "application/json", ".json", _cannot_hold(st, reuse_root,
                                                                          failed))


def _json(data: Any) -> str:
    """Compact JSON as MiniLoom's ``JSON.stringify`` writes it; a lone surrogate escaped."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return escape_lone_halves(text)


def _cannot_hold(st: StrictTree, reuse_root: bool, failed: int) -> list[str]:
    counts = inventory(st)
    # A node's note becomes its summary: only a Loom summary beside a note is lost.
    counts["summaries"] = sum(1 for n in st.nodes.values() if isinstance(
        n.meta.get("note"), str) and n.meta["note"] and isinstance(
            n.ext("loom").get("summary"), str))
    # A model's name is held (``model``); only a human author's name is lost.
    counts["agents"] = sum(1 for n in st.nodes.values()
                           if n.role != "model" and st.agent_name(n) is not None)
    out = cannot_hold(counts, _LACKS, LOOM)
    finer = sum(1 for n in st.nodes.values() if isinstance(n.raw.get("createdAt"), str)
                and _SUB_MILLI.search(n.raw["createdAt"]))
    if finer:
        out.append(f"the sub-millisecond part of {finer} creation time(s): MiniLoom keeps "
                   "milliseconds")
    if not reuse_root:
        what = f"the tree's {len(st.roots)} roots" if len(st.roots) > 1 else \
            "the tree's root text"
        out.append(f"{what}: MiniLoom's root shows no text, so an empty root node \"1\" "
                   "was added above (a re-import has one node more)")
    title = st.tree.get("title")
    if isinstance(title, str) and title and not any(n.ext(NS) for n in st.nodes.values()):
        out.append("the tree's title: a MiniLoom save has none (its file name is the title)")
    if failed:
        out.append(f"{failed} node(s) whose patch does not rebuild the text exactly: "
                   "diff-match-patch could not express the edit")
    return out
