"""One tree of an Open Loom 2.0 document → a socketteer/loom save file, as its ``model.py``
``TreeModel.load_tree_data`` reads one (read at commit
91ca920551120ad4508540e8da057c0b94067afc of github.com/socketteer/loom).

What that loader requires, and so what every file written here has: ``root`` (a node
object), every node an object with ``text`` (a string: ``TreeModel.text`` indexes it) and
``children`` (a list: ``_build_chapter_trees`` and the drawing index it), ids unique (the
node index is keyed by id), and a root with at least one child when it is ``mutable:
false`` (the loader reads ``root()['children'][0]['id']`` whatever the file selects). A
node tag is shown only when the file's ``tags`` defines it (with ``scope``, ``hide`` and
``show_only``); a ``generation`` needs its ``id``; a ``chapter_id`` must name a chapter.

Mapping (docs/openloom.md): text blocks → ``text``; continuation edges in order →
``children``; role → ``meta.source`` (``AI``/``prompt``/``mixed``); ``createdAt`` →
``meta.creation_timestamp`` (socketteer's local-time format, written in UTC);
``requestId``/``completionIndex`` → ``generation.id``/``index``; the model →
``generation.model`` (or ``meta.generation.model`` when the node has no request id), and,
with Loom's token data, ``model_responses[id]`` as socketteer's own generations record it
(``completions[index].tokens``: ``generatedToken``, ``position``, ``counterfactuals``);
bookmarked → tag ``bookmark``, pruned → tag ``archived``, ``meta.tags`` → tags;
``currentNodeId`` → ``selected_node_id``; the title → a chapter at the root.

A tree that came from socketteer/loom gets back what the import kept under
``extensions["socketteer-loom"]``: the file's settings, chapters, memories and responses,
each node's own fields (``open``, ``visited``, ``mutable``, ``text_attributes``…), its
original id, its creation timestamp, and its hoist or zip (``maskedBy``) rebuilt around
the chain it stands for. What socketteer/loom has no place for is listed in
``Written.cannot_hold``.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from loom.errors import LoomError
from loom.interchange.adapters import invalid
from loom.interchange.socketteer import NAME, NS
from loom.interchange.socketteer_tokens import to_socketteer
from loom.interchange.times import parse_iso
from loom.interchange.written import Written

LOOM = "loom"
MAX_DEPTH = 450  # socketteer's json.load and flatten_tree recurse: ~495 levels at most
MEDIA_TYPE = "application/json"
_TIME_FORMAT = "%Y-%m-%d-%H.%M.%S"  # socketteer's util.timestamp()
_SOURCE = {"model": "AI", "mixed": "mixed"}  # anything else a person wrote: "prompt"
# Markers the import adds to a node's extension, not fields of the file's node.
_MARKERS = ("originalId", "maskedBy", "modelGuessedFrom", "createdAtIsLocalTime", "generation",
            "meta", "creation_timestamp")
_OWN = ("text", "children", "id", "parent_id", "tags", "meta", "generation")
# socketteer's model.add_tag defaults, for a tag the file does not define yet.
_TAG = {"scope": "node", "hide": False, "show_only": False, "toggle_key": "None",
        "icon": "None"}


def write_socketteer(document: dict[str, Any], tree_index: int = 0) -> Written:
    """Tree ``tree_index`` of ``document`` as a socketteer/loom JSON save (ASCII, indented
    by 4 as socketteer's ``json_create`` writes); what it cannot hold is listed."""
    tree = _tree(document, tree_index)
    writer = _Writer(document, tree)
    data = writer.file()
    depth = _depth(data["root"])
    if depth > MAX_DEPTH:
        raise LoomError("LIMIT_EXCEEDED", f"the tree is {depth} nodes deep: {NAME} reads "
                        f"its files with Python's json module and recursive walks, which "
                        f"stop near 490 levels (this export writes at most {MAX_DEPTH})",
                        "export a shallower tree, or as Open Loom")
    text = json.dumps(data, indent=4)
    return Written(data=text, media_type=MEDIA_TYPE, extension=".json",
                   cannot_hold=writer.lost.lines())


def _depth(root: dict[str, Any]) -> int:
    """Levels of nested nodes, masks' heads included."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in node.get("children") or ())
        if isinstance(node.get("masked_head"), dict):
            stack.append((node["masked_head"], depth + 1))
    return deepest


def _tree(document: Any, index: int) -> dict[str, Any]:
    trees = document.get("trees") if isinstance(document, dict) else None
    if not isinstance(trees, list) or not trees:
        raise invalid("the document has no trees: there is nothing to write for "
                      f"{NAME}", "export a tree that has nodes")
    if not 0 <= index < len(trees):
        raise invalid(f"tree {index} is not in the document: it has {len(trees)} "
                      f"tree(s), numbered 0 to {len(trees) - 1}")
    tree = trees[index]
    if not isinstance(tree, dict) or not isinstance(tree.get("nodes"), dict) \
            or not tree["nodes"]:
        raise invalid(f"trees[{index}] has no nodes: {NAME} needs a root node")
    return tree


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(node: dict[str, Any]) -> str:
    return "".join(b["text"] for b in node.get("content") or ()
                   if isinstance(b, dict) and b.get("type") == "text"
                   and isinstance(b.get("text"), str))


def _uuid1_time(nid: Any) -> bool:
    """Whether socketteer's importer takes this id's time (a version-1 UUID)."""
    try:
        return uuid.UUID(str(nid)).version == 1
    except ValueError:
        return False


class _Lost:
    """What the file cannot hold, counted as the tree is written."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.said: list[str] = []

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def say(self, line: str) -> None:
        self.said.append(line)

    def lines(self) -> list[str]:
        out = [f"{n} {what}" for what, n in self.counts.items() if n]
        return out + self.said


class _Writer:
    def __init__(self, document: dict[str, Any], tree: dict[str, Any]) -> None:
        self.tree = tree
        self.nodes: dict[str, dict[str, Any]] = {
            k: v for k, v in tree["nodes"].items() if isinstance(v, dict)}
        self.kept = _dict(_dict(tree.get("extensions")).get(NS))
        self.agents = {**_dict(document.get("agents")), **_dict(tree.get("agents"))}
        self.lost = _Lost()
        self.responses: dict[str, Any] = dict(_dict(self.kept.get("model_responses")))
        self.written: dict[str, dict[str, Any]] = {}  # Open Loom id → socketteer node
        self.sids: set[str] = set()
        self.children: dict[str, list[str]] = {}
        self.roots: list[str] = []
        self.humans: set[str] = set()
        self.root_node: dict[str, Any] = {}
        self.inside: dict[str, str] = {}  # a node inside a rebuilt mask → the mask's id

    # ── structure ────────────────────────────────────────────────────────────
    def structure(self) -> None:
        """Children in edge order; a node's first continuation parent is its parent."""
        parent: dict[str, str] = {}
        annotated: set[str] = set()
        extra_sources = 0
        for e in self.tree.get("edges") or ():
            if not isinstance(e, dict):
                continue
            target = e.get("targetNodeId")
            sources = [s for s in e.get("sources") or () if isinstance(s, dict)
                       and s.get("nodeId") in self.nodes]
            if target not in self.nodes or not sources:
                continue
            if e.get("type") != "continuation":
                annotated.add(target)
                continue
            primary = next((s for s in sources if s.get("role", "primary") == "primary"),
                           sources[0])
            extra_sources += len(sources) - 1
            if target in parent or target == primary["nodeId"]:
                continue
            parent[target] = primary["nodeId"]
            self.children.setdefault(primary["nodeId"], []).append(target)
        if extra_sources:
            self.lost.add("extra parents (hyperedge sources, or a version sharing its "
                          "original's children: socketteer/loom gives a node one parent; "
                          "the first is kept)", extra_sources)
        declared = [r for r in self.tree.get("rootNodeIds") or () if r in self.nodes
                    and r not in parent]
        self.roots = list(dict.fromkeys(declared)) or [
            n for n in self.nodes if n not in parent and n not in annotated]
        reached = self._reach()
        annotations = sum(1 for n in annotated if n not in reached)
        if annotations:
            self.lost.add("annotations (socketteer/loom has no notes on nodes)", annotations)
        stray = len(self.nodes) - len(reached) - annotations
        if stray:
            self.lost.add("nodes reached from no root", stray)

    def _reach(self) -> set[str]:
        seen: set[str] = set()
        stack = list(reversed(self.roots))
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            stack.extend(reversed(self.children.get(nid, [])))
        return seen

    # ── the file ─────────────────────────────────────────────────────────────
    def file(self) -> dict[str, Any]:
        self.structure()
        order: list[str] = []
        stack = list(reversed(self.roots))
        seen: set[str] = set()
        while stack:  # iterative: trees can be deep
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            order.append(nid)
            self.written[nid] = self.node(nid)
            stack.extend(reversed(self.children.get(nid, [])))
        for nid in order:  # link children to parents once every node is written
            node = self.written[nid]
            for kid in self.children.get(nid, []):
                if kid in self.written and self.written[kid].get("parent_id") is None:
                    self.written[kid]["parent_id"] = node["id"]
                    node["children"].append(self.written[kid])
        root = self._root()
        self._masks(order)
        self._counts()
        out: dict[str, Any] = {"root": self.root_node}
        out.update({k: v for k, v in self.kept.items() if k not in ("root", "selected_node_id")})
        tags = self._tags(out.get("tags"))
        if tags is not None:
            out["tags"] = tags
        self._title(out, root)
        if self.responses:
            out["model_responses"] = self.responses
        selected = self._selected()
        if selected is not None:
            out["selected_node_id"] = selected
        return out

    def _root(self) -> dict[str, Any]:
        if len(self.roots) == 1:
            root = self.written[self.roots[0]]
            root.pop("parent_id", None)
            if not root["children"] and root.get("mutable") is False:
                # socketteer reads an immutable root's first child whatever is selected
                del root["mutable"]
            elif "mutable" not in root and root["children"] and not self.kept:
                root["mutable"] = False  # its own root: no wrapper is added on load
            self.root_node = root
            return root
        self.lost.say(f"{len(self.roots)} roots: written under one empty root "
                      "(socketteer/loom holds one root)")
        wrapper_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"loom:{self.tree.get('id')}:root"))
        kids = [self.written[r] for r in self.roots]
        for kid in kids:
            kid["parent_id"] = wrapper_id
        self.root_node = {"text": "", "children": kids, "id": wrapper_id, "mutable": False,
                          "visited": True}
        return self.root_node

    # ── a node ───────────────────────────────────────────────────────────────
    def node(self, nid: str) -> dict[str, Any]:
        n = self.nodes[nid]
        ext = _dict(_dict(n.get("extensions")).get(NS))
        loom = _dict(_dict(n.get("extensions")).get(LOOM))
        sid = self._sid(nid, ext)
        out: dict[str, Any] = {"text": _text(n), "children": [], "id": sid,
                               "parent_id": None}
        out.update({k: v for k, v in ext.items() if k not in _MARKERS and k not in _OWN})
        author = _dict(n.get("author"))
        role = author.get("role")
        meta: dict[str, Any] = {"source": _SOURCE.get(str(role), "prompt")}
        if role == "system":
            self.lost.add("system nodes (written as the person's: socketteer/loom knows "
                          "AI, prompt and mixed)")
        if role in ("human", "mixed", "system"):
            self.humans.add(str(author.get("agentId") or author.get("name") or ""))
        stamp = ext.get("creation_timestamp")
        if stamp is None and not _uuid1_time(sid):
            when = parse_iso(n.get("createdAt"))
            if when is not None:
                stamp = datetime.fromtimestamp(when, UTC).strftime(_TIME_FORMAT)
                if when != int(when):
                    self.lost.add("times below the second (socketteer/loom writes "
                                  "creation_timestamp to the second, without a zone)")
        if stamp is not None:
            meta["creation_timestamp"] = stamp
        meta.update({k: v for k, v in _dict(ext.get("meta")).items() if k not in meta})
        out["meta"] = meta
        tags = self._node_tags(n)
        if tags:
            out["tags"] = tags
        self._generation(nid, n, ext, loom, out, role)
        if isinstance(ext.get("maskedBy"), dict):
            out["_mask"] = ext["maskedBy"]  # rebuilt once the subtree is written
        return out

    def _sid(self, nid: str, ext: dict[str, Any]) -> str:
        original = ext.get("originalId")
        sid = original if isinstance(original, str | int) and not isinstance(original, bool) \
            and str(original) and str(original) not in self.sids else nid
        while str(sid) in self.sids:  # two trees' ids cannot meet here, but be sure
            sid = f"{sid}'"
        self.sids.add(str(sid))
        return sid  # type: ignore[return-value]

    def _node_tags(self, n: dict[str, Any]) -> list[str]:
        meta = _dict(n.get("meta"))
        tags = [str(t) for t in meta.get("tags") or () if isinstance(t, str | int)]
        for flag, tag in (("bookmarked", "bookmark"), ("pruned", "archived")):
            if meta.get(flag) is True and tag not in tags:
                tags.append(tag)
            elif meta.get(flag) is not True and tag in tags:
                tags = [t for t in tags if t != tag]
        for key, what in (("bookmarkLabel", "bookmark labels"), ("rating", "ratings"),
                          ("note", "node notes")):
            if meta.get(key) not in (None, ""):
                self.lost.add(f"{what} (socketteer/loom has none)")
        if meta.get("excluded") is True:
            self.lost.add("nodes excluded from model context (socketteer/loom has no such "
                          "flag)")
        return list(dict.fromkeys(tags))

    # ── generation, model and tokens ─────────────────────────────────────────
    def _model(self, n: dict[str, Any], role: Any) -> str | None:
        """The model a node records: its generation's, else (a model's node) its author's
        name. A person's edit of model text names none unless its generation does."""
        gen = _dict(n.get("generation"))
        if isinstance(gen.get("model"), str) and gen["model"]:
            return str(gen["model"])
        if role != "model":
            return None
        author = _dict(n.get("author"))
        agent = _dict(self.agents.get(str(author.get("agentId"))))
        for name in (agent.get("name"), author.get("name")):
            if isinstance(name, str) and name:
                return name
        return None

    def _generation(self, nid: str, n: dict[str, Any], ext: dict[str, Any],
                    loom: dict[str, Any], out: dict[str, Any], role: Any) -> None:
        gen = _dict(n.get("generation"))
        records = [g for g in loom.get("generations") or () if isinstance(g, dict)]
        record = records[0] if records else {}
        tokens = record.get("logprobs") if isinstance(record.get("logprobs"), list) else None
        model = self._model(n, role)
        guessed = "modelGuessedFrom" in ext
        rest = _dict(ext.get("generation"))
        request = gen.get("requestId") if isinstance(gen.get("requestId"), str) else None
        index = gen.get("completionIndex")
        index = index if isinstance(index, int) and not isinstance(index, bool) else 0
        if request is None and tokens:
            request = str(record.get("id") or f"loom-{nid}")
        meta_gen = _dict(_dict(ext.get("meta")).get("generation"))
        if request is not None:
            out["generation"] = {"id": request, "index": index, **rest}
            if tokens and request not in self.responses:
                self._response(request, index, out["text"], tokens, model, record, gen)
            if model and not guessed and model != self._recorded(out["generation"]) \
                    and model != meta_gen.get("model"):
                out["generation"]["model"] = model
        elif rest:
            out["generation"] = dict(rest)
        if request is None and model and not guessed and model != meta_gen.get("model"):
            if "generation" in out and "id" in out["generation"]:
                out["generation"]["model"] = model
            else:  # no request to name: socketteer's 2021 place for a node's model
                out["meta"]["generation"] = {**meta_gen, "model": model}
                if gen.get("completionIndex") is not None and "index" not in meta_gen:
                    out["meta"]["generation"]["index"] = index
        if any(k not in ("model", "requestId", "completionIndex") for k in gen):
            self.lost.add("generation records beyond the request id and model (provider, "
                          "parameters, usage, times, hashes, raw responses)")

    def _recorded(self, gen: dict[str, Any]) -> str | None:
        response = _dict(self.responses.get(str(gen.get("id"))))
        model = response.get("model") or _dict(response.get("response")).get("model")
        return str(model) if model else None

    def _response(self, request: str, index: int, text: str, entries: list[Any],
                  model: str | None, record: dict[str, Any], gen: dict[str, Any]) -> None:
        """socketteer's record of a request (gpt.py's response dictionary), holding this
        node's completion at its index: the node's text and its tokens."""
        written, unknown = to_socketteer(entries)
        if unknown:
            self.lost.add("tokens of unknown probability (left out of model_responses)",
                          unknown)
        response = self.responses.setdefault(request, {
            "completions": [], "prompt": {"text": "", "tokens": None}, "id": request,
            "model": model or "", "timestamp": self._stamp(gen, record)})
        completions = response["completions"]
        while len(completions) <= index:
            completions.append(None)
        completions[index] = {"text": text, "finishReason": None, "tokens": written}

    @staticmethod
    def _stamp(gen: dict[str, Any], record: dict[str, Any]) -> str:
        when = parse_iso(gen.get("receivedAt") or record.get("created"))
        return datetime.fromtimestamp(when, UTC).strftime(_TIME_FORMAT) if when else ""

    # ── masks, tags, title, selection, what is lost ──────────────────────────
    def _masks(self, order: list[str]) -> None:
        """A node the import unzipped (``maskedBy``) goes back inside its mask when its
        tail is still in its subtree: the mask in the head's place, the tail's children
        under the mask (socketteer's zip)."""
        for nid in reversed(order):
            head = self.written[nid]
            mask = head.pop("_mask", None)
            if mask is None:
                continue
            tail = self._find(head, mask.get("tail_id"))
            if tail is None:
                self.lost.add("hoists or zips whose chain changed (written unzipped)")
                continue
            parent_id = head.get("parent_id")
            built = {**{k: v for k, v in mask.items() if k not in ("masked_head", "children")},
                     "children": tail["children"], "masked_head": head}
            if parent_id is not None:
                built["parent_id"] = parent_id
            for kid in built["children"]:
                kid["parent_id"] = built.get("id")
            tail["children"] = []
            if head.get("parent_id") is not None:  # socketteer's sever_from_parent
                head["parent_id"] = None
            self._replace(head, built)
            for inner in self._subtree(head):
                self.inside[str(inner["id"])] = str(built.get("id"))

    @staticmethod
    def _find(head: dict[str, Any], tail_id: Any) -> dict[str, Any] | None:
        stack = [head]
        while stack:
            at = stack.pop()
            if str(at.get("id")) == str(tail_id):
                return at
            stack.extend(at.get("children") or ())
        return None

    @staticmethod
    def _subtree(head: dict[str, Any]) -> list[dict[str, Any]]:
        out, stack = [], [head]
        while stack:
            at = stack.pop()
            out.append(at)
            stack.extend(at.get("children") or ())
            if isinstance(at.get("masked_head"), dict):
                stack.append(at["masked_head"])
        return out

    def _replace(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old is self.root_node:
            self.root_node = new
            return
        parent = next((w for w in self.written.values()
                       if any(c is old for c in w["children"])), None)
        if parent is not None:
            parent["children"] = [new if c is old else c for c in parent["children"]]

    def _tags(self, kept: Any) -> dict[str, Any] | None:
        """The file's tag definitions: socketteer shows a node's tag only when the file
        (or its defaults) defines it. A socketteer file's own are kept as they were."""
        tags = dict(kept) if isinstance(kept, dict) else {}
        names = [str(t.get("name")) for t in self.tree.get("tags") or ()
                 if isinstance(t, dict) and t.get("name")]
        colored = sum(1 for t in self.tree.get("tags") or ()
                      if isinstance(t, dict) and t.get("color"))
        if colored:
            self.lost.add("tag colours (socketteer/loom tags have icons)", colored)
        for node in self.written.values():
            names.extend(node.get("tags") or ())
        added = False
        for name in dict.fromkeys(names):
            if name not in tags and name not in _DEFAULT_TAG_NAMES:
                tags[name] = {"name": name, **_TAG}
                added = True
        if self.kept and not added:
            return kept if isinstance(kept, dict) else None
        for name in ("bookmark", "archived"):  # socketteer's defaults, written out
            tags.setdefault(name, {"name": name, **_DEFAULT_TAGS[name]})
        return tags

    def _title(self, out: dict[str, Any], root: dict[str, Any]) -> None:
        title = self.tree.get("title")
        if not isinstance(title, str) or not title:
            return
        chapters = out.get("chapters")
        chapters = dict(chapters) if isinstance(chapters, dict) else {}
        for cid, chapter in chapters.items():
            if isinstance(chapter, dict) and chapter.get("root_id") == root["id"] \
                    and chapter.get("title"):
                if chapter["title"] != title:
                    chapters[cid] = {**chapter, "title": title}
                    out["chapters"] = chapters
                return
        if self.kept:
            return  # socketteer's own file without a root chapter: its file name names it
        cid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"loom:{self.tree.get('id')}:title"))
        chapters[cid] = {"id": cid, "root_id": root["id"], "title": title}
        root["chapter_id"] = cid
        out["chapters"] = chapters

    def _selected(self) -> Any:
        current = self.tree.get("currentNodeId")
        if current is None:
            return None
        node = self.written.get(str(current))
        if node is None:
            self.lost.say("the current node (it is not written: an annotation or "
                          "unreachable node)")
            return None
        return self.inside.get(str(node["id"]), node["id"])

    def _counts(self) -> None:
        tree, lost = self.tree, self.lost
        media = sum(1 for n in self.nodes.values() for b in n.get("content") or ()
                    if isinstance(b, dict) and b.get("type") != "text")
        if media:
            lost.add("image, audio or other non-text blocks (socketteer/loom nodes are "
                     "text)", media)
        edited = sum(1 for n in self.nodes.values() if n.get("editedFrom"))
        if edited:
            lost.add("edit lineages (editedFrom: socketteer/loom keeps no versions)", edited)
        loom = _dict(_dict(tree.get("extensions")).get(LOOM))
        links = loom.get("links")
        if isinstance(links, list) and links:
            lost.add("links (socketteer/loom has no links between nodes)", len(links))
        summaries = sum(1 for n in self.nodes.values()
                        if _dict(_dict(n.get("extensions")).get(LOOM)).get("summary"))
        if summaries:
            lost.add("node summaries (socketteer/loom summarises chapters)", summaries)
        if tree.get("mode") == "dialogue":
            lost.say("dialogue mode (socketteer/loom trees are one prose buffer)")
        for field, what in (("systemContext", "the system context"),
                            ("description", "the tree's description")):
            if tree.get(field):
                lost.say(f"{what} (socketteer/loom has no place for it)")
        if loom.get("summary"):
            lost.say("the tree's summary (socketteer/loom has no place for it)")
        humans = {h for h in self.humans if h}
        if len(humans) > 1:
            lost.say(f"which of {len(humans)} people wrote each human node (socketteer/loom "
                     "records only that a person did)")
        html = sum(1 for w in self.written.values()
                   if "<p>" in w["text"] or "</p" in w["text"])
        if html:
            lost.add('nodes whose text has "<p>" or "</p" (socketteer/loom reads such text '
                     "as HTML from Miro and rewrites it when it loads)", html)
        foreign = sum(1 for n in self.nodes.values()
                      if set(_dict(n.get("extensions"))) - {NS, LOOM})
        if foreign:
            lost.add("nodes with other programs' extensions", foreign)


_DEFAULT_TAG_NAMES = ("bookmark", "canonical", "archived", "note", "pinned")  # DEFAULT_TAGS
# socketteer's DEFAULT_TAGS entries for the two tags Loom's flags become (model.py).
_DEFAULT_TAGS: dict[str, dict[str, Any]] = {
    "bookmark": {"scope": "node", "hide": False, "show_only": False, "toggle_key": "b",
                 "icon": "bookmark-black"},
    "archived": {"scope": "node", "hide": True, "show_only": False, "toggle_key": "!",
                 "icon": "archive-yellow"},
}
