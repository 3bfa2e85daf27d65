"""A tree → loomsidian's ``data.json`` (the Obsidian plugin cosmicoptima/loom), holding one
note's state, in the shape its loader reads (main.ts at afbb351, see docs/openloom.md):

``{"state": {"<note path>": {"current", "hoisted", "searchTerm", "nodes", "generating"}}}``
with each node ``{"text", "parentId", "collapsed", "unread", "bookmarked",
"searchResultState", "lastVisited"?}``. The plugin checks nothing when it loads: it indexes
``state[path].nodes[current]`` and every ``parentId`` directly, treats ``parentId === null``
as a root, and reads ``hoisted`` as an array. So:

- ``current`` is always a node (the tree's current node, else its first root); every
  ``parentId`` names a written node or is null.
- Keys are never integer-like: a JS object lists such keys first, in numeric order, which
  would reorder siblings (children are ``Object.entries(nodes)`` filtered by parent). An id
  a loomsidian import kept is used as it was; other ids become a UUID (as the plugin's
  own) derived from the tree and node ids, so an export is reproducible.
- The note is filed under the path an imported note kept (``extensions.loomsidian.
  notePath``), else the tree's title made a file name, ``.md`` added.
- A node's text is Loom's (what it adds to its parent); the plugin's ``fullText`` joins
  them from the root, as Loom does.
- What a loomsidian import kept (``unread``, ``collapsed``, ``lastVisited``, colours…, the
  note's ``hoisted`` and ``searchTerm``) goes back; no ``settings`` are written (the plugin
  falls back to its defaults; merge the note into an existing data.json to keep yours).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from loom.interchange.strict_tree import StrictTree, cannot_hold, inventory, strict_tree
from loom.interchange.written import Written

NS = "loomsidian"
LOOM = "loomsidian"
#: a namespace for the UUIDs of nodes whose id cannot be a key (uuid5 of tree/node)
ID_SPACE = uuid.UUID("6f3c6a8e-2b6f-5d4a-9a57-0c1e4b7d9f21")
_INDEX_LIKE = re.compile(r"0|[1-9][0-9]{0,9}")  # what a JS object lists first, numerically
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')  # not in an Obsidian note's name
_NODE_OWN = ("text", "parentId", "collapsed", "unread", "bookmarked", "lastVisited",
             "searchResultState")
_STATE_OWN = ("current", "hoisted", "searchTerm", "nodes", "generating", "notePath")
#: what the plugin has no place for (keys of strict_tree.CANNOT_HOLD)
_LACKS = ("model", "mixed", "system", "named models", "agents", "tags", "tree tags", "pruned",
          "excluded", "ratings", "notes", "summaries", "times", "generations", "logprobs",
          "edits", "media", "links", "annotations", "second parents", "extra sources",
          "description", "system context")


def note_path(st: StrictTree) -> str:
    """Where the note's state is filed: the path a loomsidian import kept, else the title
    as a note's file name."""
    kept = st.ext(NS).get("notePath")
    if isinstance(kept, str) and kept:
        return kept
    title = st.tree.get("title")
    name = " ".join(_UNSAFE.sub(" ", title if isinstance(title, str) else "").split())
    name = name.strip(" .")
    return f"{name or 'Untitled'}.md"


def _keys(st: StrictTree) -> dict[str, str]:
    tree_id = str(st.tree.get("id") or "")
    out: dict[str, str] = {}
    used: set[str] = set()
    for nid in st.order:
        kept = st.nodes[nid].ext(NS).get("originalId")
        key = kept if isinstance(kept, str) and kept else nid
        if _INDEX_LIKE.fullmatch(key) or key in used:
            key = str(uuid.uuid5(ID_SPACE, f"{tree_id}/{nid}"))
        used.add(key)
        out[nid] = key
    return out


def _node(st: StrictTree, nid: str, key_of: dict[str, str]) -> dict[str, Any]:
    node = st.nodes[nid]
    kept = node.ext(NS)
    unread = kept.get("unread")
    if not isinstance(unread, bool):  # MiniLoom's ``read``, where a MiniLoom import kept it
        read = node.ext("miniloom").get("read")
        unread = read is False
    out: dict[str, Any] = {
        "text": node.text,
        "parentId": key_of[node.parent] if node.parent is not None else None,
        "collapsed": kept.get("collapsed") is True,
        "unread": unread,
        "bookmarked": node.meta.get("bookmarked") is True,
    }
    if isinstance(kept.get("lastVisited"), int | float):
        out["lastVisited"] = kept["lastVisited"]
    out["searchResultState"] = kept.get("searchResultState") \
        if kept.get("searchResultState") in ("result", "ancestor", "none") else None
    for k, v in kept.items():  # the rest of what the plugin's node had (colours…)
        if k not in _NODE_OWN and k not in ("originalId",):
            out[k] = v
    return out


def _map_order(st: StrictTree) -> list[str]:
    """The order of the ``nodes`` map: the document's (an imported note's own order comes
    back) where it lists every node's children, and the roots, in their order; else
    depth-first."""
    listed = [nid for nid in st.tree.get("nodes") or {} if nid in st.nodes]
    seen: dict[str | None, list[str]] = {}
    for nid in listed:
        seen.setdefault(st.nodes[nid].parent, []).append(nid)
    if seen.get(None, []) == st.roots and all(
            seen.get(nid, []) == node.children for nid, node in st.nodes.items()):
        return listed
    return st.order


def note_state(st: StrictTree) -> dict[str, Any]:
    """One note's state, as the plugin keeps it under ``state[path]``."""
    key_of = _keys(st)
    kept = st.ext(NS)
    hoisted = [key_of[h] for h in kept.get("hoisted") or []
               if isinstance(h, str) and h in key_of] if isinstance(
                   kept.get("hoisted"), list) else []
    current = st.current if st.current is not None else st.roots[0]
    state: dict[str, Any] = {
        "current": key_of[current],
        "hoisted": hoisted,
        "searchTerm": kept.get("searchTerm") if isinstance(kept.get("searchTerm"), str)
        else "",
        "nodes": {key_of[nid]: _node(st, nid, key_of) for nid in _map_order(st)},
        "generating": None,  # a generation in flight does not survive a file
    }
    for k, v in kept.items():
        if k not in _STATE_OWN:
            state[k] = v
    return state


def write_loomsidian(document: dict[str, Any], tree_index: int = 0) -> Written:
    """The tree at ``tree_index`` of an Open Loom document as a loomsidian ``data.json``
    holding that one note's state (see the module's docstring)."""
    st = strict_tree(document, tree_index)
    path = note_path(st)
    data = {"state": {path: note_state(st)}}
    counts = inventory(st)
    # A loomsidian import made its non-root nodes "mixed" for want of authorship: that is
    # the plugin's own silence coming back, not something lost.
    counts["mixed"] -= sum(1 for n in st.nodes.values() if n.role == "mixed" and n.ext(NS))
    return Written(json.dumps(data, ensure_ascii=False, indent=2) + "\n", "application/json",
                   ".json", cannot_hold(counts, _LACKS, LOOM))
