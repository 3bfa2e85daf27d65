"""One tree of an Open Loom 2.0 document read as the strict tree other looms hold: each node's
text, its one parent, its children in sibling order, and an inventory of what a strict
text tree has no place for. Shared by the writers of other looms' formats (loomsidian,
MiniLoom), which then map the fields their loom holds.

Reading follows the draft: sibling order is the order of ``continuation`` edges in
``edges``; a node's parent is its first continuation edge's primary source (a second
continuation edge to it, or a source beyond the first, is counted, not followed); the
targets of other edges are annotations, outside the text tree; the roots are the nodes no
continuation edge targets, in ``rootNodeIds`` order first. A node's text is Loom's
(``block_text``: media blocks become their placeholder).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loom.errors import LoomError
from loom.interchange.openloom.render import block_text


def invalid(message: str, hint: str | None = None) -> LoomError:
    return LoomError("INVALID_SYNTAX", message, hint)


@dataclass
class StrictNode:
    id: str
    raw: dict[str, Any]
    text: str
    parent: str | None = None
    children: list[str] = field(default_factory=list)

    @property
    def role(self) -> str:
        author = self.raw.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        return role if isinstance(role, str) else "human"

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.raw.get("meta")
        return meta if isinstance(meta, dict) else {}

    def ext(self, namespace: str) -> dict[str, Any]:
        """The node's fields kept under ``extensions.<namespace>`` (empty when none)."""
        exts = self.raw.get("extensions")
        got = exts.get(namespace) if isinstance(exts, dict) else None
        return got if isinstance(got, dict) else {}


@dataclass
class StrictTree:
    tree: dict[str, Any]
    agents: dict[str, Any]
    nodes: dict[str, StrictNode]
    roots: list[str]
    order: list[str]  # depth-first, parents before children, siblings in order
    current: str | None
    #: what the edges said that a strict tree cannot follow: counts by kind
    dropped: Counter[str] = field(default_factory=Counter)

    def ext(self, namespace: str) -> dict[str, Any]:
        exts = self.tree.get("extensions")
        got = exts.get(namespace) if isinstance(exts, dict) else None
        return got if isinstance(got, dict) else {}

    def model_of(self, node: StrictNode) -> str | None:
        """The model that wrote ``node``: its generation's model, else its agent's
        ``modelRef``, else (a model's node) the author's name; None when the document does
        not say."""
        gen = node.raw.get("generation")
        if isinstance(gen, dict) and isinstance(gen.get("model"), str) and gen["model"]:
            return str(gen["model"])
        author = node.raw.get("author")
        agent_id = author.get("agentId") if isinstance(author, dict) else None
        agent = self.agents.get(agent_id) if isinstance(agent_id, str) else None
        if isinstance(agent, dict) and agent.get("type") == "model":
            ref = agent.get("modelRef")
            if isinstance(ref, str) and ref:
                return ref.split(":", 1)[1] if ":" in ref else ref
        if node.role == "model":
            return self.agent_name(node)
        return None

    def agent_name(self, node: StrictNode) -> str | None:
        author = node.raw.get("author")
        if not isinstance(author, dict):
            return None
        agent = self.agents.get(author.get("agentId")) if isinstance(
            author.get("agentId"), str) else None
        name = agent.get("name") if isinstance(agent, dict) else author.get("name")
        return name if isinstance(name, str) and name else None


def pick_tree(document: Any, tree_index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tree at ``tree_index`` and the agents it sees (the document's, overridden by the
    tree's own)."""
    if not isinstance(document, dict) or document.get("format") != "open-loom":
        raise invalid('not an Open Loom document (its top level says "format": "open-loom")')
    trees = document.get("trees")
    if not isinstance(trees, list) or not trees:
        raise invalid("trees: the document has no trees")
    if isinstance(tree_index, bool) or not isinstance(tree_index, int) or \
            not 0 <= tree_index < len(trees):
        raise invalid(f"tree {tree_index!r}: the document has trees 0 to {len(trees) - 1}")
    tree = trees[tree_index]
    if not isinstance(tree, dict):
        raise invalid(f"trees[{tree_index}]: a tree is a JSON object")
    agents: dict[str, Any] = {}
    for source in (document.get("agents"), tree.get("agents")):
        if isinstance(source, dict):
            agents.update(source)
    return tree, agents


def _primary(edge: dict[str, Any]) -> tuple[str | None, int]:
    """The parent an edge gives (its primary source, else its first) and how many sources
    it names beyond that one."""
    sources = [s for s in edge.get("sources") or [] if isinstance(s, dict)
               and isinstance(s.get("nodeId"), str)]
    if not sources:
        return None, 0
    primary = next((s for s in sources if s.get("role", "primary") == "primary"), sources[0])
    return primary["nodeId"], len(sources) - 1


def strict_tree(document: Any, tree_index: int = 0) -> StrictTree:
    """The tree at ``tree_index`` of an Open Loom document as a strict tree; a
    ``LoomError`` (INVALID_SYNTAX) names what makes it unreadable."""
    tree, agents = pick_tree(document, tree_index)
    where = f"trees[{tree_index}]"
    raw_nodes = tree.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise invalid(f"{where}.nodes: the tree has no nodes")
    nodes: dict[str, StrictNode] = {}
    for key, raw in raw_nodes.items():
        if not isinstance(raw, dict):
            raise invalid(f'{where}.nodes["{key}"]: a node is a JSON object')
        content = raw.get("content")
        if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
            raise invalid(f'{where}.nodes["{key}"].content: an array of content blocks')
        nodes[str(key)] = StrictNode(str(key), raw, block_text(content))
    edges = tree.get("edges")
    edges = [] if edges is None else edges
    if not isinstance(edges, list):
        raise invalid(f"{where}.edges: a list of edges")
    dropped: Counter[str] = Counter()
    annotated: set[str] = set()
    for i, e in enumerate(edges):
        if not isinstance(e, dict):
            raise invalid(f"{where}.edges[{i}]: an edge is a JSON object")
        target = e.get("targetNodeId")
        source, extra = _primary(e)
        if target not in nodes or source not in nodes:
            raise invalid(f"{where}.edges[{i}]: its source and target are nodes of the tree")
        assert isinstance(target, str) and source is not None
        if e.get("type", "continuation") != "continuation":
            annotated.add(target)
            continue
        if nodes[target].parent is not None or target == source:
            dropped["second parents"] += 1
            continue
        nodes[target].parent = source
        nodes[source].children.append(target)
        dropped["extra sources"] += extra
    # A node that is only an annotation's target stays out of the text tree (with its
    # own continuations).
    listed = [r for r in tree.get("rootNodeIds") or [] if isinstance(r, str)]
    roots = [r for r in dict.fromkeys(listed + list(nodes))
             if r in nodes and nodes[r].parent is None and r not in annotated]
    order: list[str] = []
    seen: set[str] = set()
    for root in roots:
        stack = [root]
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            order.append(nid)
            stack.extend(reversed(nodes[nid].children))
    outside = [n for n in nodes if n not in seen]
    cyclic = [n for n in outside if n not in annotated and not _under(nodes, n, annotated)]
    if cyclic:
        raise invalid(f'{where}: node "{cyclic[0]}" is in a cycle of continuation edges')
    dropped["annotations"] += len(outside)
    for nid in outside:  # an annotation's nodes are not children of anything written
        node = nodes.pop(nid)
        parent = nodes.get(node.parent or "")
        if parent is not None:
            parent.children.remove(nid)
    current = tree.get("currentNodeId")
    return StrictTree(tree, agents, nodes, roots, order,
                      current if isinstance(current, str) and current in nodes else None,
                      dropped)


def _under(nodes: dict[str, StrictNode], nid: str, annotated: set[str]) -> bool:
    """Whether ``nid`` hangs (by continuations) from an annotation."""
    seen: set[str] = set()
    while nid not in seen:
        seen.add(nid)
        if nid in annotated:
            return True
        parent = nodes[nid].parent
        if parent is None:
            return False
        nid = parent
    return False


def inventory(st: StrictTree) -> Counter[str]:
    """How many of each thing a plain text tree may have no place for: the writers pick the
    ones their format lacks (keys as in ``CANNOT_HOLD``)."""
    n: Counter[str] = Counter()
    for node in st.nodes.values():
        meta, raw = node.meta, node.raw
        n["human"] += node.role == "human"
        n["model"] += node.role == "model"
        n["mixed"] += node.role == "mixed"
        n["system"] += node.role == "system"
        n["named models"] += st.model_of(node) is not None
        n["agents"] += st.agent_name(node) is not None
        n["bookmarks"] += meta.get("bookmarked") is True
        n["tags"] += bool(meta.get("tags"))
        n["pruned"] += meta.get("pruned") is True
        n["excluded"] += meta.get("excluded") is True
        n["ratings"] += isinstance(meta.get("rating"), int | float) and \
            not isinstance(meta.get("rating"), bool)
        n["uneven ratings"] += isinstance(meta.get("rating"), int | float) and \
            meta.get("rating") not in (1, -1)
        n["notes"] += isinstance(meta.get("note"), str) and bool(meta["note"])
        n["times"] += isinstance(raw.get("createdAt"), str)
        gen = raw.get("generation")  # (its model alone is counted as a named model)
        n["generations"] += isinstance(gen, dict) and bool(set(gen) - {"model"})
        n["edits"] += isinstance(raw.get("editedFrom"), str)
        n["media"] += sum(1 for b in raw.get("content") or [] if b.get("type") != "text")
        loom = node.ext("loom")
        n["summaries"] += isinstance(loom.get("summary"), str)
        n["logprobs"] += any(isinstance(g, dict) and g.get("logprobs") is not None
                             for g in loom.get("generations") or [])
    loom_tree = st.ext("loom")
    n["links"] += len(loom_tree.get("links") or [])
    n["annotations"] += st.dropped["annotations"]
    n["second parents"] += st.dropped["second parents"]
    n["extra sources"] += st.dropped["extra sources"]
    n["description"] += bool(st.tree.get("description"))
    n["system context"] += bool(st.tree.get("systemContext"))
    n["tree tags"] += len(st.tree.get("tags") or [])
    return n


#: key → how to say it, ``{n}`` the count (nodes unless the phrase says otherwise)
CANNOT_HOLD: dict[str, str] = {
    "model": "authorship of {n} model-written node(s)",
    "mixed": "authorship of {n} human-edited model node(s) (role mixed)",
    "system": "authorship of {n} system node(s)",
    "named models": "the model of {n} node(s)",
    "agents": "the author names (agents) of {n} node(s)",
    "bookmarks": "{n} bookmark(s)",
    "tags": "the tags of {n} node(s)",
    "tree tags": "{n} tag definition(s) of the tree",
    "pruned": "{n} pruned mark(s) (the nodes are written as ordinary nodes)",
    "excluded": "{n} excluded-from-context mark(s)",
    "ratings": "the ratings of {n} node(s)",
    "uneven ratings": "the size of {n} rating(s) other than +1/-1 (only up or down is kept)",
    "notes": "the notes of {n} node(s)",
    "summaries": "the summaries of {n} node(s)",
    "times": "the creation times of {n} node(s)",
    "generations": "the generation records of {n} node(s) (provider, parameters, usage, "
                   "hashes, raw responses)",
    "logprobs": "the token logprobs of {n} node(s)",
    "edits": "the edit lineage (editedFrom) of {n} node(s)",
    "media": "{n} media block(s) (written as their placeholder text)",
    "links": "{n} link(s) between nodes",
    "annotations": "{n} annotation node(s) (outside the text tree; not written)",
    "second parents": "{n} second continuation edge(s) to a node (a node has one parent)",
    "extra sources": "{n} context/instruction source(s) of hyperedges",
    "description": "the tree's description",
    "system context": "the tree's system context",
}


def cannot_hold(counts: Counter[str], keys: tuple[str, ...], loom: str) -> list[str]:
    """The sentences for ``keys`` with a count, each saying which loom lacks it."""
    return [f"{CANNOT_HOLD[key].format(n=counts[key])}: {loom} has no place for it"
            for key in keys if counts[key]]
