"""Reading an Open Loom 2.x document leniently, and repairing what its invariants forbid.

Nothing here touches the database. The reader accepts what it can interpret and notes
each repair in words (§ 4.1): roots and a current node that do not resolve, edges and
sources that point nowhere, a node with several continuation parents (the first in
array order is kept; the others are kept in the file but not in Loom's tree), cycles
(broken at the edge into the node listed first), ``editedFrom`` that does not resolve or
loops. A value of the wrong type is a repair too, never a crash; only what leaves no
tree at all (no trees, no nodes, another major version) is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from loom.errors import LoomError
from loom.interchange.jsontext import deepest, render_path
from loom.interchange.times import parse_iso

FORMAT = "open-loom"
NS = "loom"  # Loom's namespace in ``extensions``
MAJOR = 2
_VERSION = re.compile(r"^\s*(\d+)(?:\.(\d+))?")
_ROLES = ("primary", "context", "instruction")
MAX_DEPTH = 128  # levels of JSON in a document (a node's own fields start at level 5)


def invalid(message: str, hint: str | None = None) -> LoomError:
    return LoomError("INVALID_SYNTAX", message, hint)


@dataclass
class EdgeIn:
    index: int  # place in the file's edges list
    raw: dict[str, Any]
    kind: str  # Loom's edge kind: continuation | annotation | version
    sources: list[tuple[str, str]]  # (node key, role); the first is the parent
    positions: list[int] | None = None  # Loom's source positions, when the file gives them
    sibling_order: int | None = None


@dataclass
class NodeIn:
    key: str
    raw: dict[str, Any]
    blocks: list[dict[str, Any]]
    role: str  # as the file says (human, model, system, mixed, or unknown)
    agent_id: str | None
    name: str | None
    created: float | None
    edited_from: str | None
    bookmarked: bool
    pruned: bool
    excluded: bool
    generation: dict[str, Any] | None
    loom: dict[str, Any]  # extensions.loom, checked field by field


@dataclass
class TreeIn:
    index: int
    where: str
    raw: dict[str, Any]
    nodes: dict[str, NodeIn]
    edges: dict[str, EdgeIn] = field(default_factory=dict)  # kept edge per target
    demoted: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)  # roots that are not versions of a root
    current: str | None = None
    repairs: list[str] = field(default_factory=list)
    cut: set[str] = field(default_factory=set)  # made roots by breaking a cycle
    loom: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlainTreeIn:
    """A tree of plain nodes and edges (``read_plain``), read without per-node objects:
    columns by node, in the file's order."""

    index: int
    where: str
    raw: dict[str, Any]
    keys: list[str]  # the nodes' keys in file order
    raws: list[dict[str, Any]]  # each node as the file has it
    texts: list[str]
    models: list[bool]  # whether the author's role is model (else human)
    created: list[float | None]
    edges: dict[str, tuple[int, str, str]]  # target → (index in the file, parent, kind)
    root: str
    order: list[int]  # node positions, parents first (breadth-first in node order)
    current: str | None = None
    repairs: list[str] = field(default_factory=list)
    loom: dict[str, Any] = field(default_factory=dict)


@dataclass
class DocumentIn:
    raw: dict[str, Any]
    version: str
    trees: list[TreeIn | PlainTreeIn]
    agents: dict[str, dict[str, Any]]
    loom: dict[str, Any]
    repairs: list[str]


def version_of(data: dict[str, Any]) -> str:
    """The document's ``major.minor``; another major is refused with its number named."""
    raw = data.get("version")
    match = _VERSION.match(raw) if isinstance(raw, str) else None
    if match is None:
        raise invalid(f'version: {raw!r} is not an Open Loom version ("2.0")'
                      if "version" in data else "version: the document has no version",
                      'an Open Loom document says "version": "2.0"')
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    if major != MAJOR:
        raise invalid(f'version: this is Open Loom {raw}, a major version this Loom does not '
                      f"read (it reads Open Loom 2.x)",
                      "export the tree as Open Loom 2.x, or update Loom" if major > MAJOR
                      else "import it as it is: Loom detects earlier formats by their content")
    return f"{major}.{minor}"


def read_document(data: Any, *, plain: bool = True) -> DocumentIn:
    """``plain=False`` reads every tree node by node (tests compare the two readings)."""
    if not isinstance(data, dict):
        raise invalid("an Open Loom document is a JSON object")
    generator = data.get("generator")
    trees_raw = data.get("trees")
    # A plain tree's nodes and edges nest a few levels deep by construction: the depth
    # check walks the rest of the document only.
    plains: dict[int, PlainTreeIn] = {}
    if plain and isinstance(trees_raw, list) and not (
            isinstance(generator, dict) and generator.get("name") == "Loom"):
        for i, raw in enumerate(trees_raw):
            found = read_plain(i, raw) if isinstance(raw, dict) else None
            if found is not None:
                plains[i] = found
    if plains:
        assert isinstance(trees_raw, list)
        _check_depth({**data, "trees": [
            {**raw, "nodes": {}, "edges": []} if i in plains else raw
            for i, raw in enumerate(trees_raw)]})
    else:
        _check_depth(data)
    if data.get("format") != FORMAT:
        raise invalid(f'format: expected "{FORMAT}", found {data.get("format")!r}')
    version = version_of(data)
    repairs: list[str] = []
    if not isinstance(trees_raw, list) or not trees_raw:
        raise invalid("trees: the document has no trees", "an Open Loom document lists "
                      "one or more trees")
    agents = _dict(data.get("agents"), "agents", repairs)
    agents = {k: v for k, v in agents.items() if isinstance(v, dict)}
    loom = _dict(_dict(data.get("extensions"), "extensions", repairs).get(NS), "extensions.loom",
                 repairs)
    trees: list[TreeIn | PlainTreeIn] = []
    for i, raw in enumerate(trees_raw):
        where = f"trees[{i}]"
        if not isinstance(raw, dict):
            repairs.append(f"{where} is not an object: left out")
            continue
        if i in plains:
            trees.append(plains[i])
            continue
        tree = read_tree(i, raw)
        if tree is None:
            repairs.append(f"{where} has no nodes: left out")
            continue
        trees.append(tree)
    if not trees:
        raise invalid("trees: no tree in the document has a node", "a tree needs nodes")
    return DocumentIn(data, version, trees, agents, loom, repairs)


def _check_depth(data: dict[str, Any]) -> None:
    """Trees nest by reference (a flat node map, an edge list), so only a value inside a
    node or an extension can nest deeply, and nothing a loom writes does. Beyond
    MAX_DEPTH it is refused: every walk over stored values (the JSON encoder, the Loom
    Protocol, redaction, the kept differences) may then recurse safely."""
    found = deepest(data, MAX_DEPTH)
    if found is not None:
        raise LoomError("LIMIT_EXCEEDED",
                        f"{render_path(found[1])} nests values more than {MAX_DEPTH} levels "
                        "deep (counted from the top of the document)",
                        "a loom file nests values a few levels deep: this one was damaged or "
                        "made to break readers; remove the deep value")


def _dict(value: Any, where: str, repairs: list[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        repairs.append(f"{where} is not an object: ignored")
        return {}
    return value


def _tree_loom(raw: dict[str, Any], where: str, repairs: list[str]) -> dict[str, Any]:
    """A tree's ``extensions.loom`` (empty, with a repair, when it is not an object)."""
    return _dict(_dict(raw.get("extensions"), f"{where}.extensions", repairs).get(NS),
                 f"{where}.extensions.loom", repairs)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value != "" else None


# ── nodes ─────────────────────────────────────────────────────────────────────
def read_tree(index: int, raw: dict[str, Any]) -> TreeIn | None:
    where = f"trees[{index}]"
    repairs: list[str] = []
    nodes_raw = raw.get("nodes")
    if isinstance(nodes_raw, list):  # a list of nodes with ids: read as the map it means
        repairs.append(f"{where}.nodes is a list, not a map: read by each node's id")
        nodes_raw = {str(n.get("id")): n for n in nodes_raw if isinstance(n, dict)
                     and n.get("id") is not None}
    if not isinstance(nodes_raw, dict) or not nodes_raw:
        return None
    nodes: dict[str, NodeIn] = {}
    for key, node in nodes_raw.items():
        at = f'{where}.nodes["{key}"]'
        if not isinstance(node, dict):
            repairs.append(f"{at} is not an object: left out")
            continue
        if "id" in node and node["id"] != key:
            repairs.append(f'{at}.id is "{node["id"]}", not its key: the key is used')
        nodes[str(key)] = _read_node(str(key), node, at, repairs)
    if not nodes:
        return None
    tree = TreeIn(index, where, raw, nodes, repairs=repairs)
    tree.loom = _tree_loom(raw, where, repairs)
    _read_edges(tree)
    _check_edited_from(tree)
    _break_cycles(tree)
    _find_roots(tree)
    current = raw.get("currentNodeId")
    if current is not None:
        if isinstance(current, str) and current in nodes:
            tree.current = current
        else:
            repairs.append(f'{where}.currentNodeId "{current}" is not a node: left out')
    return tree


def _read_node(key: str, raw: dict[str, Any], at: str, repairs: list[str]) -> NodeIn:
    content = raw.get("content")
    blocks: list[dict[str, Any]] = []
    if isinstance(content, str):
        repairs.append(f"{at}.content is text, not blocks: read as one text block")
        blocks = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        for j, block in enumerate(content):
            if isinstance(block, dict) and isinstance(block.get("type"), str):
                if block["type"] == "text" and not isinstance(block.get("text"), str):
                    repairs.append(f"{at}.content[{j}] is a text block without text: left out")
                    continue
                blocks.append(block)
            else:
                repairs.append(f"{at}.content[{j}] is not a content block: left out")
    else:
        repairs.append(f"{at}.content is missing: the node is empty")
    author = raw.get("author")
    if not isinstance(author, dict):
        repairs.append(f"{at}.author is {'not an object' if 'author' in raw else 'missing'}"
                       ": read as a human's")
        author = {}
    role = author.get("role")
    if not isinstance(role, str) or not role:
        if author:
            repairs.append(f"{at}.author.role is missing: read as human")
        role = "human"
    created = parse_iso(raw.get("createdAt"))
    if raw.get("createdAt") is not None and created is None:
        repairs.append(f"{at}.createdAt {raw['createdAt']!r} is not a time: left out")
    meta = raw.get("meta") if isinstance(raw.get("meta"), dict) else {}
    extensions = raw.get("extensions") if isinstance(raw.get("extensions"), dict) else {}
    loom = extensions.get(NS) if isinstance(extensions.get(NS), dict) else {}
    generation = raw.get("generation")
    return NodeIn(
        key=key, raw=raw, blocks=blocks, role=role, agent_id=_text(author.get("agentId")),
        name=_text(author.get("name")), created=created,
        edited_from=raw["editedFrom"] if isinstance(raw.get("editedFrom"), str) else None,
        bookmarked=meta.get("bookmarked") is True, pruned=meta.get("pruned") is True,
        excluded=meta.get("excluded") is True,
        generation=generation if isinstance(generation, dict) else None, loom=loom)


# ── plain trees ───────────────────────────────────────────────────────────────
_PLAIN_NODE = frozenset({"id", "content", "author", "createdAt"})
_PLAIN_EDGE = frozenset({"id", "type", "sources", "targetNodeId"})
_PLAIN_SOURCE = ({"nodeId"}, {"nodeId", "role"})
_ROLE_MODEL = {"human": False, "model": True}
_EDGE_KIND = {"continuation": "continuation", "annotation": "annotation"}


def read_plain(index: int, raw: dict[str, Any]) -> PlainTreeIn | None:
    """The tree when everything in its nodes and edges is plain, else None (read it node by
    node). Plain is what most looms write and what the general reading would take with no
    repair and nothing left over: each node ``{id?, content: [one text block], author:
    {role: human|model}, createdAt?}`` (``id`` its key, ``createdAt`` a time); each edge
    ``{id?, type: continuation|annotation, sources: [{nodeId, role?: primary}],
    targetNodeId}``, one per target; one root, listed in ``rootNodeIds``, from which every
    node descends; ``currentNodeId`` a node when given. A 100,000-node tree is read here
    in a fraction of the general reading's time: no object per node or edge, no repair to
    look for, no cycle to break."""
    nodes, edges_raw, listed = raw.get("nodes"), raw.get("edges"), raw.get("rootNodeIds")
    if type(nodes) is not dict or not nodes or type(edges_raw) is not list or \
            type(listed) is not list or len(listed) != 1:
        return None
    keys: list[str] = []
    raws: list[dict[str, Any]] = []
    texts: list[str] = []
    models: list[bool] = []
    created: list[float | None] = []
    plain_node, role_model = _PLAIN_NODE, _ROLE_MODEL
    for key, node in nodes.items():
        if type(node) is not dict or not node.keys() <= plain_node:
            return None
        content, author = node.get("content"), node.get("author")
        if type(content) is not list or len(content) != 1 or type(author) is not dict or \
                len(author) != 1 or node.get("id", key) != key:
            return None
        block = content[0]
        if type(block) is not dict or len(block) != 2 or block.get("type") != "text":
            return None
        text = block.get("text")
        model = role_model.get(author.get("role"))  # type: ignore[arg-type]
        if type(text) is not str or model is None:
            return None
        when = node.get("createdAt")
        if when is not None:
            when = parse_iso(when)
            if when is None:
                return None
        keys.append(key)
        raws.append(node)
        texts.append(text)
        models.append(model)
        created.append(when)
    edges: dict[str, tuple[int, str, str]] = {}
    plain_edge, kinds = _PLAIN_EDGE, _EDGE_KIND
    for i, edge in enumerate(edges_raw):
        if type(edge) is not dict or not edge.keys() <= plain_edge:
            return None
        target, sources = edge.get("targetNodeId"), edge.get("sources")
        kind = kinds.get(edge.get("type"))  # type: ignore[arg-type]
        if kind is None or type(target) is not str or target not in nodes or \
                target in edges or type(sources) is not list or len(sources) != 1 or \
                type(edge.get("id", "")) is not str:
            return None
        source = sources[0]
        if type(source) is not dict or source.keys() not in _PLAIN_SOURCE or \
                source.get("role", "primary") != "primary":
            return None
        parent = source["nodeId"]
        if type(parent) is not str or parent not in nodes or parent == target:
            return None
        edges[target] = (i, parent, kind)
    root = listed[0]
    if type(root) is not str or root not in nodes or root in edges or \
            len(edges) != len(nodes) - 1:
        return None
    current = raw.get("currentNodeId")
    if current is not None and (type(current) is not str or current not in nodes):
        return None
    # Parents first, each parent's children in node order; a node not reached lies on a
    # cycle (the general reading breaks it).
    position = {key: i for i, key in enumerate(keys)}
    kids: dict[str, list[int]] = {}
    for key in keys:
        edge = edges.get(key)
        if edge is not None:
            kids.setdefault(edge[1], []).append(position[key])
    order = [position[root]]
    extend, get = order.extend, kids.get
    for at in order:  # (grows as it goes)
        extend(get(keys[at], ()))
    if len(order) != len(keys):
        return None
    where = f"trees[{index}]"
    repairs: list[str] = []
    loom = _tree_loom(raw, where, repairs)
    return PlainTreeIn(index, where, raw, keys, raws, texts, models, created, edges, root,
                       order, current, repairs, loom)


# ── edges ─────────────────────────────────────────────────────────────────────
def _read_edges(tree: TreeIn) -> None:
    edges = tree.raw.get("edges")
    where, nodes, repairs = tree.where, tree.nodes, tree.repairs
    if edges is None:
        edges = []
    if not isinstance(edges, list):
        repairs.append(f"{where}.edges is not a list: ignored")
        edges = []
    annotations: dict[str, EdgeIn] = {}
    for i, raw in enumerate(edges):
        at = f"{where}.edges[{i}]"
        if not isinstance(raw, dict):
            repairs.append(f"{at} is not an object: left out")
            continue
        target = raw.get("targetNodeId")
        if not isinstance(target, str) or target not in nodes:
            repairs.append(f'{at} points at "{target}", which is not a node: left out')
            continue
        sources: list[tuple[str, str]] = []
        raw_sources = raw.get("sources") if isinstance(raw.get("sources"), list) else []
        for j, src in enumerate(raw_sources):
            node = src.get("nodeId") if isinstance(src, dict) else None
            if not isinstance(node, str) or node not in nodes:
                repairs.append(f'{at}.sources[{j}] "{node}" is not a node: left out')
                continue
            if node == target or any(node == s for s, _ in sources):
                repairs.append(f'{at}.sources[{j}] "{node}" repeats a node of the edge: '
                               "left out")
                continue
            role = src.get("role", "primary")
            sources.append((node, role if role in _ROLES else "primary"))
        if not sources:
            repairs.append(f"{at} has no source that is a node: left out")
            continue
        ext = raw.get("extensions") if isinstance(raw.get("extensions"), dict) else {}
        loom = ext.get(NS) if isinstance(ext.get(NS), dict) else {}
        kind = {"continuation": "continuation", "annotation": "annotation"}.get(
            raw.get("type"), "annotation")  # unknown types travel as annotations (§ 4.4)
        if kind == "continuation" and loom.get("kind") == "version" \
                and nodes[target].edited_from in nodes:
            kind = "version"
        positions = loom.get("positions")
        if not (isinstance(positions, list) and len(positions) == len(sources)
                and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0
                        for p in positions)) or len(sources) != len(raw_sources):
            positions = None
        order = loom.get("siblingOrder")
        edge = EdgeIn(i, raw, kind, sources, positions,
                      order if isinstance(order, int) and not isinstance(order, bool)
                      and order >= 0 else None)
        if kind == "annotation":
            if target in tree.edges or target in annotations:
                tree.demoted.setdefault(target, []).append((i, raw))
            else:
                annotations[target] = edge
            continue
        if target in tree.edges:
            first = tree.edges[target].index
            repairs.append(f'{at}: node "{target}" already has a continuation parent '
                           f"(edges[{first}]): the first is kept, this one is kept in the file "
                           "only")
            tree.demoted.setdefault(target, []).append((i, raw))
            continue
        if target in annotations:  # a continuation wins over an annotation of the node
            old = annotations.pop(target)
            tree.demoted.setdefault(target, []).append((old.index, old.raw))
        tree.edges[target] = edge
    for target, edge in annotations.items():
        tree.edges[target] = edge


def _check_edited_from(tree: TreeIn) -> None:
    for key, node in tree.nodes.items():
        if node.edited_from is not None and node.edited_from not in tree.nodes:
            tree.repairs.append(f'{tree.where}.nodes["{key}"].editedFrom "{node.edited_from}" '
                                "is not a node: left out")
            node.edited_from = None
    # An editedFrom chain that loops is cut where it closes. Each node is walked once:
    # a walk stops at a node an earlier walk finished (linear, however long the lineage).
    state: dict[str, int] = {}  # 1: on the current walk, 2: finished
    for key in tree.nodes:
        walk: list[str] = []
        at: str | None = key
        while at is not None and at not in state:
            state[at] = 1
            walk.append(at)
            at = tree.nodes[at].edited_from
        if at is not None and state[at] == 1:
            last = walk[-1]
            tree.repairs.append(f'{tree.where}.nodes["{last}"].editedFrom "{at}" makes '
                                "the edit lineage loop: left out")
            tree.nodes[last].edited_from = None
        for done in walk:
            state[done] = 2


def _parent(tree: TreeIn, key: str) -> str | None:
    edge = tree.edges.get(key)
    return edge.sources[0][0] if edge else None


def _break_cycles(tree: TreeIn) -> None:
    """Every node's parent chain must end at a root. The parent graph gives each node one
    parent, so what never reaches a root lies on (or under) a cycle; each cycle is broken
    at the edge into its node that comes first in ``rootNodeIds`` or in the file."""
    listed = tree.raw.get("rootNodeIds") if isinstance(tree.raw.get("rootNodeIds"), list) else []
    rank = {key: i for i, key in enumerate(tree.nodes)}
    for i, key in enumerate(listed):
        if isinstance(key, str) and key in rank:
            rank[key] = -len(listed) + i
    state: dict[str, int] = {}  # 1: on the current walk, 2: reaches a root
    for start in tree.nodes:
        walk: list[str] = []
        at: str | None = start
        while at is not None and state.get(at) is None:
            state[at] = 1
            walk.append(at)
            at = _parent(tree, at)
        if at is not None and state.get(at) == 1:  # the walk closed a cycle at ``at``
            cycle = walk[walk.index(at):]
            cut = min(cycle, key=lambda k: rank[k])
            edge = tree.edges.pop(cut)
            names = _cycle_names([*reversed(cycle), cycle[-1]])
            tree.repairs.append(f"{tree.where}.edges[{edge.index}] closes a cycle ({names}): "
                                f'kept in the file only; "{cut}" became a root')
            tree.demoted.setdefault(cut, []).append((edge.index, edge.raw))
            tree.cut.add(cut)
        for key in walk:
            state[key] = 2
    # Other sources may not be descendants of the edge's target either.
    for target, edge in tree.edges.items():
        if len(edge.sources) == 1:
            continue
        kept = [edge.sources[0]]
        positions = [edge.positions[0]] if edge.positions else None
        for j, (src, role) in enumerate(edge.sources[1:], start=1):
            if _descends(tree, src, target):
                tree.repairs.append(f'{tree.where}.edges[{edge.index}].sources[{j}] "{src}" '
                                    "descends from the edge's own target: left out")
                continue
            kept.append((src, role))
            if positions is not None and edge.positions:
                positions.append(edge.positions[j])
        edge.sources = kept
        edge.positions = positions


def _cycle_names(keys: list[str], shown: int = 3) -> str:
    """``"a" → "b" → "a"``; a long cycle shows its first and last few nodes and a count
    (a cycle through 40,000 nodes is one line of a report, not 500 KB)."""
    if len(keys) > 2 * shown + 1:
        hidden = len(keys) - 2 * shown
        keys = [*keys[:shown], f"… {hidden:,} more nodes …", *keys[-shown:]]
        return " → ".join(k if k.startswith("… ") else f'"{k}"' for k in keys)
    return " → ".join(f'"{k}"' for k in keys)


def _descends(tree: TreeIn, node: str, ancestor: str) -> bool:
    at: str | None = node
    while at is not None:
        if at == ancestor:
            return True
        at = _parent(tree, at)
    return False


def _find_roots(tree: TreeIn) -> None:
    """Roots are the nodes without a parent edge (§ 4.1); ``rootNodeIds`` gives their order.
    A root that is an edit of another root is a version of it, not a tree of its own."""
    where, nodes = tree.where, tree.nodes
    listed = tree.raw.get("rootNodeIds")
    if not isinstance(listed, list):
        if listed is not None or "rootNodeIds" not in tree.raw:
            tree.repairs.append(f"{where}.rootNodeIds is missing: the roots are the nodes "
                                "without a parent")
        listed = []
    edgeless = [k for k in nodes if k not in tree.edges]
    roots: list[str] = []
    root_set: set[str] = set()
    for key in listed:
        if not isinstance(key, str) or key not in nodes:
            tree.repairs.append(f'{where}.rootNodeIds lists "{key}", which is not a node: '
                                "left out")
        elif key in tree.edges:
            tree.repairs.append(f'{where}.rootNodeIds lists "{key}", which has a parent: '
                                "not a root")
        elif key not in root_set:
            roots.append(key)
            root_set.add(key)
    for key in edgeless:
        if key not in root_set:
            if listed and key not in tree.cut:
                tree.repairs.append(f'{where}.nodes["{key}"] has no parent and is not in '
                                    "rootNodeIds: made a root")
            roots.append(key)
            root_set.add(key)
    tree.roots = roots
    # A base is a root that is not an edit of another root (lineages do not loop by now).
    tree.bases = [k for k in roots if nodes[k].edited_from not in root_set]

