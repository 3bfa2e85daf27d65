"""Arrow-command completion: verbs after ``→``, then each verb's arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from loom.commands.catalogue import CATALOGUE
from loom.lsp.session import Documents, OpenDoc
from loom.memory import operational as mem
from loom.store.schema import Node, Tree

ARROW = re.compile(r"^([ \t]*)(→|->|=>)([ \t]*)(\S*)$")
COMMAND = re.compile(r"^[ \t]*(?:→|->|=>)[ \t]*([A-Za-z-]+)[ \t]+(.*)$")
MAX_ITEMS = 50

# The flags each verb takes, with what they mean (shown as detail).
FLAGS: dict[str, list[tuple[str, str]]] = {
    "view": [("full", "complete content"), ("with-annotations", "include annotations"),
             ("with-links", "include links"), ("summary", "summary only (default)"),
             ("branch:", "the path through a node"), ("as:prose", "stitched prose"),
             ("as:nodes", "separated, with metadata")],
    "list": [("continuations", "children"), ("annotations", "notes on the node"),
             ("links", "links to nodes, trees and documents")],
    "tree": [("from:", "start at a node"), ("depth:", "levels to show (default 5)"),
             ("summary", "condensed overview")],
    "switch": [("to", ""), ("in tree:", "another tree (cross-tree)")],
    "continue": [("from", "node to continue from"), ("n:", "how many (1-10)"),
                 ("tokens:", "max tokens each"), ("temperature:", "0-2")],
    "respond": [("as:continuation", ""), ("as:context", ""), ("as:instruction", "")],
    "link": [("to", ""), ("doc:", "a document"), ("tree:", "another tree"),
             ("note:", "what the link means")],
    "read": [("doc:", "a document"), ("summary", ""), ("lines:", "a line range"),
             ("section:", "a section")],
    "write": [("doc:", "a document"), ("append", ""), ("at:", "start, end, line or section"),
              ("replace:", "a section")],
    "pin": [("doc:", "a document"), ("section:", "")],
    "stash": [("content-of:", "a node's content"), ("summary-of:", "a path range A-B")],
    "drop": [("pin:", "a pinned node or document"), ("stash:", "a stash label")],
    "memory": [("trace", "recent actions"), ("stashed", "stashed items"),
               ("errors", "recent errors")],
    "help": [(name, CATALOGUE[name].description) for name in CATALOGUE],
}
NODE_VERBS = {"view", "list", "switch", "continue", "respond", "annotate", "link", "edit",
              "pin", "tree", "stash"}
VALUES = {"n": ["1", "2", "3", "5", "10"], "tokens": ["20", "50", "100", "200"],
          "depth": ["1", "3", "5", "10"], "as": ["prose", "nodes", "continuation", "context",
                                                "instruction"],
          "at": ["start", "end"]}


@dataclass
class Item:
    label: str
    kind: str  # keyword | reference | value | file | text | module
    detail: str = ""
    insert: str | None = None
    replace_start: int = 0  # offsets within the line the item replaces
    replace_end: int = 0
    sort: str = ""
    documentation: str = ""


def complete(docs: Documents, doc: OpenDoc | None, tree: Tree | None, line: str,
             col: int) -> list[Item]:
    before = line[:col]
    m = ARROW.match(before)
    if m:
        return _verbs(m, col)
    m = COMMAND.match(before)
    if not m:
        return []
    verb = _canonical_verb(m.group(1))
    if verb is None:
        return []
    args = m.group(2)
    token_start = col - len(re.split(r"[ \t]", args)[-1])
    partial = before[token_start:]
    return _arguments(docs, tree, verb, partial, token_start, col)


def _verbs(m: re.Match[str], col: int) -> list[Item]:
    typed = m.group(4).lower()
    start = m.start(2)  # replace the arrow too, so `->` becomes `→`
    items = []
    for name, tool in CATALOGUE.items():
        if typed and not name.startswith(typed) and fuzz.partial_ratio(typed, name) < 80:
            continue
        items.append(Item(label=name, kind="keyword", detail=tool.description,
                          insert=f"→ {name} ", replace_start=start, replace_end=col,
                          sort=("0" if name.startswith(typed) else "1") + name,
                          documentation="\n".join(tool.syntax)))
    return items


def _canonical_verb(word: str) -> str | None:
    w = word.lower()
    if w in CATALOGUE:
        return w
    for name, tool in CATALOGUE.items():
        if w in tool.synonyms:
            return name
    return None


def _arguments(docs: Documents, tree: Tree | None, verb: str, partial: str, start: int,
               col: int) -> list[Item]:
    items: list[Item] = []
    quoted = re.match(r'^(doc|tree|stash):["“]?(.*)$', partial)
    if quoted:
        kind, typed = quoted.group(1), quoted.group(2)
        names = _names(docs, kind)
        for name in _fuzzy(typed, names):
            items.append(Item(label=f'{kind}:"{name}"', kind="file" if kind == "doc" else
                              "module", insert=f'{kind}:"{name}"', replace_start=start,
                              replace_end=col))
        return items
    if verb in ("recall",) or (verb == "drop" and partial.startswith("stash")):
        for name in _fuzzy(partial.strip('"“'), _names(docs, "stash")):
            items.append(Item(label=f'"{name}"', kind="text", insert=f'"{name}"',
                              replace_start=start, replace_end=col))
        if verb == "recall":
            return items
    flag = re.match(r"^([a-z-]+):(\S*)$", partial)
    if flag and flag.group(1) in VALUES:
        name = flag.group(1)
        return [Item(label=f"{name}:{v}", kind="value", insert=f"{name}:{v}",
                     replace_start=start, replace_end=col)
                for v in VALUES[name] if v.startswith(flag.group(2))]
    if flag and flag.group(1) in ("from", "branch", "content-of", "pin", "summary-of"):
        for it in _nodes(docs, tree, flag.group(2)):
            it.insert = f"{flag.group(1)}:{it.insert}"
            it.label = f"{flag.group(1)}:{it.label}"
            it.replace_start, it.replace_end = start, col
            items.append(it)
        return items
    for name, detail in FLAGS.get(verb, []):
        if name.startswith(partial.lower()):
            items.append(Item(label=name, kind="keyword", detail=detail, insert=name,
                              replace_start=start, replace_end=col, sort="1" + name))
    if verb in NODE_VERBS and tree is not None:
        for it in _nodes(docs, tree, partial.strip("[]")):
            it.replace_start, it.replace_end = start, col
            items.append(it)
    return items[:MAX_ITEMS]


def _names(docs: Documents, kind: str) -> list[str]:
    if kind == "doc":
        return [d.name for d in docs.ws.documents()]
    if kind == "tree":
        return [t.title for t, _ in docs.ws.trees()]
    return [s.label for s in mem.stashes(docs.ws, docs.participant)]


def _fuzzy(typed: str, names: list[str]) -> list[str]:
    if not typed:
        return names[:MAX_ITEMS]
    scored = process.extract(typed, names, scorer=fuzz.WRatio, limit=MAX_ITEMS,
                              score_cutoff=50)
    return [name for name, _score, _ in scored]


def _nodes(docs: Documents, tree: Tree | None, typed: str) -> list[Item]:
    """localIds: a prefix match through the index, else the nodes near the position,
    matched fuzzily on id, author and summary."""
    if tree is None:
        return []
    typed = typed.lower()
    rows: list[Node] = []
    if typed:
        rows = docs.ws.nodes_by_prefix(tree, typed, MAX_ITEMS)
    if len(rows) < 10:
        node, tip = docs.ws.position(docs.participant, tree)
        near = docs.ws.path(tip, prefer=(node.id,))[-40:]
        near += docs.ws.children(node)[:20]
        seen = {n.id for n in rows}
        pool = [n for n in near if n.id not in seen]
        if typed:
            keys = [f"{n.local_id} {n.summary or ''}" for n in pool]
            hits = process.extract(typed, keys, scorer=fuzz.partial_ratio, limit=20,
                                   score_cutoff=70)
            rows += [pool[i] for _, _, i in hits]
        else:
            rows += list(reversed(pool))
    names: dict[str, str] = {}
    items = []
    for i, n in enumerate(rows[:MAX_ITEMS]):
        if n.author_id not in names:
            names[n.author_id] = docs.ws.participant_name(n.author_id)
        summary = (n.summary or n.content or "").strip().replace("\n", " ")[:80]
        items.append(Item(label=n.local_id, kind="reference",
                          detail=f"{names[n.author_id]} · {summary}", insert=n.local_id,
                          sort=f"2{i:03d}", documentation=n.content[:500]))
    return items
