"""Open Loom 2.0: the one format for sharing trees between looms (SPEC-NOTES, Interchange).

A file is JSON::

    {"format": "open-loom", "version": "2.0",
     "trees": [{id, title, description, summary, summarySource, mode, systemContext, archived,
                created, updated, root,
                "nodes": {id: {content, author: {name, role}, created, summary, summarySource,
                               editedFrom, bookmarked, pruned, excluded, contentHash, kind,
                               generation, extensions: {"loom": {localId, label, …}}}},
                "edges": [{target, kind, sources: [{node, role}], extensions}],
                "links": [{id, source, target: {kind, node, tree, doc, section}, note, author,
                           created}],
                "extensions": {"loom": {annCounter, rawResponses}}}],
     "documents": [{id, name, content, summary, summarySource, created, updated}],
     "participants": [{name, kind, role, permissions, loomAware, profile}]}

Decisions:

- Times are ISO-8601 UTC with microseconds, so times survive a round trip exactly.
- ``edges`` is a hyperedge per non-root node, listed breadth-first from the root; for each
  node its children's edges appear in sibling order. The exact stored order travels as
  ``extensions.loom.siblingOrder``; without it the list order is used. A source's
  ``position`` is written only when it differs from its index: a buffer-mode version shares
  its original's position in the edges of the original's children.
- A node's ``parent`` (the source it was made from) is its edge's first source; sources at
  one position list the parent first. Only when that is not so does ``extensions.loom.parent``
  say it. Depth is derived; labels (``a7x2'``, ``ann-3``) travel with localIds.
- Generation provenance is ``generation``; raw provider responses, shared by the n
  completions of one request, are stored once per tree in ``extensions.loom.rawResponses``.
- Ids: original ULIDs are kept unless one of the tree's ids is already in the database (a
  re-import) or is not a ULID; then the whole tree gets fresh ULIDs in the same order.
  LocalIds are kept unless invalid or repeated. A title already taken gets ``(2)``.
- Documents are matched by id, then by name with equal content; a different document of
  the same name is imported as ``name (2)``.
- Participants are matched by name and never changed. New ones take kind, role and profile
  from the file but **no permissions** (nor loom-awareness) unless
  ``trust_permissions=True``: what a participant may do is a local decision a shared file
  must not make. API keys are never part of the format.
- Unknown fields and other namespaces' extensions of trees, nodes, edges, links and the file
  are kept in ``Node.extra["openloom"]`` (on the root for trees and the file, on the target
  for edges, on the source for links) and written back on export. Unknown fields inside
  authors, generations, sources, link targets, documents and participants are ignored.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import peewee as pw
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from loom.errors import LoomError
from loom.interchange.common import OPEN_LOOM, invalid, iso_time, unique_title
from loom.model.ids import local_id_candidates, new_ulid
from loom.store.schema import (
    Document,
    Edge,
    EdgeSource,
    Generation,
    Link,
    Node,
    Participant,
    RawResponse,
    Tree,
)
from loom.store.tokens import entries as token_entries
from loom.store.workspace import Workspace, content_hash

VERSION = "2.0"
NS = "loom"  # Loom's namespace in ``extensions``
KEEP = "openloom"  # the key of Node.extra holding what has no column
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_LOCAL_ID = re.compile(r"^[0-9a-hjkmnp-tv-z]{3,16}$")
_KIND_RANK = {"continuation": 0, "version": 1, "annotation": 2}
_CHUNK = 500


# ── the format ────────────────────────────────────────────────────────────────
class _Part(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel)

    def leftovers(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class AuthorData(_Part):
    name: str = Field(min_length=1)
    role: Literal["human", "model"]


class GenerationData(_Part):
    id: str | None = None
    provider: str = ""
    model: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_ms: float | None = None
    completion_index: int = 0
    logprobs: Any = None
    created: datetime | None = None
    raw_id: str | None = None


class LoomNodeExt(_Part):
    local_id: str | None = None
    label: str | None = None
    version_of: str | None = None
    version_number: int = Field(default=0, ge=0)
    ann_number: int | None = Field(default=None, ge=1)
    parent: str | None = None
    extra: dict[str, Any] | None = None
    more_generations: list[GenerationData] = Field(default_factory=list)


class NodeData(_Part):
    content: str
    author: AuthorData
    created: datetime | None = None
    summary: str | None = None
    summary_source: str | None = None
    edited_from: str | None = None
    bookmarked: bool = False
    pruned: bool = False
    excluded: bool = False
    content_hash: str | None = None
    kind: Literal["root", "continuation", "annotation"] | None = None
    generation: GenerationData | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)


class SourceData(_Part):
    node: str
    role: Literal["primary", "context", "instruction"] = "primary"
    position: int | None = Field(default=None, ge=0)


class EdgeData(_Part):
    target: str
    kind: Literal["continuation", "annotation", "version"] = "continuation"
    sources: list[SourceData] = Field(min_length=1)
    extensions: dict[str, Any] = Field(default_factory=dict)


class LinkTargetData(_Part):
    kind: Literal["node", "tree", "doc"]
    node: str | None = None
    tree: str | None = None
    doc: str | None = None
    section: str | None = None

    @model_validator(mode="after")
    def _has_target(self) -> LinkTargetData:
        if getattr(self, self.kind) is None:
            raise ValueError(f'a link to a {self.kind} needs "{self.kind}"')
        return self


class LinkData(_Part):
    id: str | None = None
    source: str
    target: LinkTargetData
    note: str | None = None
    author: str | None = None
    created: datetime | None = None


class TreeData(_Part):
    id: str | None = None
    title: str
    description: str = ""
    summary: str | None = None
    summary_source: str | None = None
    mode: Literal["buffer", "dialogue"] = "buffer"
    system_context: str = ""
    archived: bool = False
    created: datetime | None = None
    updated: datetime | None = None
    root: str | None = None
    nodes: dict[str, NodeData] = Field(min_length=1)
    edges: list[EdgeData] = Field(default_factory=list)
    links: list[LinkData] = Field(default_factory=list)
    extensions: dict[str, Any] = Field(default_factory=dict)


class DocumentData(_Part):
    model_config = ConfigDict(extra="ignore")
    id: str | None = None
    name: str = Field(min_length=1)
    content: str = ""
    summary: str | None = None
    summary_source: str | None = None
    created: datetime | None = None
    updated: datetime | None = None


class ParticipantData(_Part):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1)
    kind: Literal["human", "model"]
    role: str = ""
    permissions: list[str] = Field(default_factory=list)
    loom_aware: bool = False
    profile: str | None = None


class OpenLoomFile(_Part):
    format: Literal["open-loom"]
    version: str
    trees: list[TreeData] = Field(min_length=1)
    documents: list[DocumentData] = Field(default_factory=list)
    participants: list[ParticipantData] = Field(default_factory=list)
    extensions: dict[str, Any] = Field(default_factory=dict)


# ── export ────────────────────────────────────────────────────────────────────
def export_openloom(ws: Workspace, tree: Tree, *, include_raw: bool = True) -> dict[str, Any]:
    """The tree, the documents its links point at and its participants as Open Loom 2.0."""
    tree = Tree.get_by_id(tree.id)
    nodes = {n.id: n for n in Node.select().where(Node.tree == tree.id)}
    edges = {e.target: e for e in Edge.select().where(Edge.tree == tree.id)}
    sources: dict[str, list[EdgeSource]] = defaultdict(list)
    for s in (EdgeSource.select().join(Edge, on=(Edge.target == EdgeSource.target))
              .where(Edge.tree == tree.id)):
        sources[s.target].append(s)
    for target, srcs in sources.items():
        parent = nodes[target].parent if target in nodes else None
        srcs.sort(key=lambda s, p=parent: (s.position, s.node != p, s.node))
    gens: dict[str, list[Generation]] = defaultdict(list)
    for g in (Generation.select().join(Node, on=(Node.id == Generation.node))
              .where(Node.tree == tree.id).order_by(Generation.created, Generation.id)):
        if g.logprobs is None:  # kept compactly since schema v6: exported in the JSON shape
            g.logprobs = token_entries(ws, g.node)
        gens[g.node].append(g)
    links = list(Link.select().where(Link.tree == tree.id).order_by(Link.created, Link.id))
    people = {p.id: p for p in Participant.select()}
    order = _breadth_first(tree.root, nodes, edges, sources)
    root_keep = (nodes[tree.root].extra or {}).get(KEEP, {}) if tree.root in nodes else {}

    node_out = {nid: _node_out(nodes[nid], sources.get(nid), gens.get(nid, []), people)
                for nid in order}
    edge_out = [_edge_out(edges[nid], sources[nid], nodes[nid]) for nid in order
                if nid in edges]
    link_out = [_link_out(link, people, nodes) for link in links]
    loom_ext: dict[str, Any] = {**root_keep.get("tree", {}).get("loom", {}),
                                "annCounter": tree.ann_counter}
    raw_ids = sorted({g.raw for gl in gens.values() for g in gl if g.raw})
    if include_raw and raw_ids:
        loom_ext["rawResponses"] = {r.id: r.body for r in
                                    RawResponse.select().where(RawResponse.id.in_(raw_ids))
                                    .order_by(RawResponse.id)}
    tree_keep = root_keep.get("tree", {})
    tree_out = {
        **tree_keep.get("fields", {}),
        "id": tree.id, "title": tree.title, "description": tree.description,
        "summary": tree.summary, "summarySource": tree.summary_source, "mode": tree.mode,
        "systemContext": tree.system_context, "archived": tree.archived,
        "created": iso_time(tree.created), "updated": iso_time(tree.updated),
        "root": tree.root, "nodes": node_out, "edges": edge_out, "links": link_out,
        "extensions": {**tree_keep.get("extensions", {}), NS: loom_ext},
    }
    author_ids = {n.author_id for n in nodes.values()} | {link.author for link in links}
    doc_ids = {link.target_doc for link in links if link.target_doc}
    file_keep = root_keep.get("file", {})
    out: dict[str, Any] = {
        **file_keep.get("fields", {}),
        "format": OPEN_LOOM, "version": VERSION, "trees": [tree_out],
        "documents": [_document_out(d) for d in
                      Document.select().where(Document.id.in_(sorted(doc_ids)))
                      .order_by(Document.name)],
        "participants": [_participant_out(people[pid]) for pid in
                         sorted((p for p in author_ids if p in people),
                                key=lambda p: people[p].name)],
    }
    if file_keep.get("extensions"):
        out["extensions"] = dict(file_keep["extensions"])
    return out


def _breadth_first(root: str | None, nodes: dict[str, Node], edges: dict[str, Edge],
                   sources: dict[str, list[EdgeSource]]) -> list[str]:
    """Node ids from the root, each node's children in (kind, sibling order, id) order."""
    kids: dict[str, list[str]] = defaultdict(list)
    for target, srcs in sources.items():
        if target in nodes and target in edges:
            for s in srcs:
                kids[s.node].append(target)
    for lst in kids.values():
        lst.sort(key=lambda t: (_KIND_RANK.get(edges[t].kind, 9), edges[t].sibling_order, t))
    starts = ([root] if root in nodes else []) + sorted(
        (n for n in nodes if n not in edges and n != root),
        key=lambda n: (nodes[n].version_number, n))
    seen: set[str] = set()
    order: list[str] = []
    queue = deque(starts)
    while queue:
        nid = queue.popleft()
        if nid in seen:
            continue
        seen.add(nid)
        order.append(nid)
        queue.extend(k for k in kids.get(nid, ()) if k not in seen)
    order.extend(sorted(n for n in nodes if n not in seen))  # defensive: unreachable rows
    return order


def _node_out(n: Node, srcs: list[EdgeSource] | None, gens: list[Generation],
              people: dict[str, Participant]) -> dict[str, Any]:
    extra = dict(n.extra or {})
    keep = extra.pop(KEEP, None) or {}
    loom: dict[str, Any] = {
        **keep.get("loom", {}),
        "localId": n.local_id, "label": n.label, "versionOf": n.version_of,
        "versionNumber": n.version_number, "annNumber": n.ann_number,
    }
    first = srcs[0].node if srcs else None
    if n.parent != first:
        loom["parent"] = n.parent
    if extra:
        loom["extra"] = extra
    if len(gens) > 1:
        loom["moreGenerations"] = [_generation_out(g) for g in gens[1:]]
    author = people.get(n.author_id)
    return {
        **keep.get("fields", {}),
        "content": n.content,
        "author": {"name": author.name if author else n.author_id, "role": n.author_type},
        "created": iso_time(n.created), "summary": n.summary,
        "summarySource": n.summary_source, "editedFrom": n.edited_from,
        "bookmarked": n.bookmarked, "pruned": n.pruned, "excluded": n.excluded,
        "contentHash": n.content_hash, "kind": n.kind,
        "generation": _generation_out(gens[0]) if gens else None,
        "extensions": {**keep.get("extensions", {}), NS: loom},
    }


def _generation_out(g: Generation) -> dict[str, Any]:
    return {"id": g.id, "provider": g.provider, "model": g.model, "params": g.params or {},
            "usage": g.usage or {}, "latencyMs": g.latency_ms,
            "completionIndex": g.completion_index, "logprobs": g.logprobs,
            "created": iso_time(g.created), "rawId": g.raw}


def _edge_out(e: Edge, srcs: list[EdgeSource], target: Node) -> dict[str, Any]:
    keep = (target.extra or {}).get(KEEP, {}).get("edge", {})
    out_sources = []
    for i, s in enumerate(srcs):
        item: dict[str, Any] = {"node": s.node, "role": s.role}
        if s.position != i:
            item["position"] = s.position
        out_sources.append(item)
    return {**keep.get("fields", {}), "target": e.target, "kind": e.kind,
            "sources": out_sources,
            "extensions": {**keep.get("extensions", {}), NS: {"siblingOrder": e.sibling_order}}}


def _link_out(link: Link, people: dict[str, Participant],
              nodes: dict[str, Node]) -> dict[str, Any]:
    source = nodes.get(link.source)
    keep = ((source.extra or {}).get(KEEP, {}).get("links", {}).get(link.id, {})
            if source is not None else {})
    author = people.get(link.author)
    return {**keep, "id": link.id, "source": link.source,
            "target": {"kind": link.target_kind, "node": link.target_node,
                       "tree": link.target_tree, "doc": link.target_doc,
                       "section": link.target_section},
            "note": link.note, "author": author.name if author else link.author,
            "created": iso_time(link.created)}


def _document_out(d: Document) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "content": d.content, "summary": d.summary,
            "summarySource": d.summary_source, "created": iso_time(d.created),
            "updated": iso_time(d.updated)}


def _participant_out(p: Participant) -> dict[str, Any]:
    return {"name": p.name, "kind": p.kind, "role": p.role,
            "permissions": list(p.permissions or []), "loomAware": p.loom_aware,
            "profile": p.profile}


# ── import: validation ────────────────────────────────────────────────────────
def parse_openloom(data: Any) -> OpenLoomFile:
    """The validated file, or INVALID_SYNTAX naming the bad field's path."""
    if not isinstance(data, dict):
        raise invalid("an Open Loom file is a JSON object")
    if data.get("format") != OPEN_LOOM:
        raise invalid(f'format: expected "open-loom", found {data.get("format")!r}')
    version = data.get("version")
    if not isinstance(version, str) or version.split(".")[0] != "2":
        raise invalid(f"version: Open Loom {version!r} is not supported",
                      'this Loom reads Open Loom 2.x ("version": "2.0")')
    try:
        return OpenLoomFile.model_validate(data)
    except ValidationError as err:
        raise invalid(_describe(err), "fix the field, or export the tree again") from None


def _describe(err: ValidationError, prefix: str = "") -> str:
    problems = err.errors(include_url=False)
    first = problems[0]
    text = f"{_path(first['loc'], prefix)}: {first['msg']}"
    found = first.get("input")
    if first["type"] != "missing" and isinstance(found, str | int | float | bool) and \
            len(repr(found)) <= 40:
        text += f" (found {found!r})"
    if len(problems) > 1:
        text += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return text


def _path(loc: Iterable[int | str], prefix: str = "") -> str:
    out, keyed = prefix, False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif keyed:
            out += f'["{part}"]'
        else:
            out += f".{part}" if out else str(part)
        keyed = part in ("nodes", "extensions", "rawResponses") and not keyed
    return out or "(file)"


# ── import: planning (reads the database, writes nothing) ─────────────────────
@dataclass
class _TreePlan:
    where: str
    data: TreeData
    tree_id: str
    title: str
    root: str
    ids: dict[str, str]  # file node id → stored node id
    nodes: list[dict[str, Any]] = field(default_factory=list)
    authors: list[tuple[str, str]] = field(default_factory=list)  # (name, role) per node row
    edges: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    generations: list[dict[str, Any]] = field(default_factory=list)
    raws: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    link_authors: list[str] = field(default_factory=list)
    link_ids: dict[str, str] = field(default_factory=dict)  # file link id → stored link id
    ann_counter: int = 0


def _ts(value: datetime | None, default: float) -> float:
    if value is None:
        return default
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _loom_ext(ext: dict[str, Any], where: str, model: type[_Part] = LoomNodeExt) -> Any:
    raw = ext.get(NS) or {}
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise invalid(_describe(err, f"{where}.extensions.{NS}")) from None


def _exists(model: type[pw.Model], column: pw.Field, ids: Iterable[str]) -> bool:
    wanted = [i for i in ids if i]
    for i in range(0, len(wanted), _CHUNK):
        if model.select(column).where(column.in_(wanted[i:i + _CHUNK])).exists():
            return True
    return False


def _topological(where: str, nodes: dict[str, NodeData],
                 deps: dict[str, list[str]]) -> list[str]:
    """File order, parents first; a cycle is an error naming its nodes."""
    waiting = {nid: len(set(deps.get(nid, ()))) for nid in nodes}
    after: dict[str, list[str]] = defaultdict(list)
    for nid, ds in deps.items():
        for d in set(ds):
            after[d].append(nid)
    ready = deque(nid for nid in nodes if waiting[nid] == 0)
    order: list[str] = []
    while ready:
        nid = ready.popleft()
        order.append(nid)
        for nxt in after.get(nid, ()):
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    if len(order) < len(nodes):
        stuck = [nid for nid in nodes if waiting[nid] > 0]
        names = ", ".join(f'"{n}"' for n in stuck[:5]) + (" …" if len(stuck) > 5 else "")
        raise invalid(f"{where}.edges: nodes {names} are on a cycle (an edge leads back to "
                      "a node it comes from)")
    return order


@dataclass
class _Shape:
    """What the checks learn about a tree: each node's edge, Loom extension, the root, and
    an order with every node after the nodes it depends on."""

    edge_of: dict[str, int]
    exts: dict[str, LoomNodeExt]
    root: str
    order: list[str]


def _check_tree(where: str, tree: TreeData, used: set[str]) -> _Shape:
    nodes = tree.nodes
    for nid in nodes:
        if nid in used:
            raise invalid(f'{where}.nodes["{nid}"]: the id is also used by another tree')
    edge_of: dict[str, int] = {}
    for i, e in enumerate(tree.edges):
        at = f"{where}.edges[{i}]"
        if e.target not in nodes:
            raise invalid(f'{at}.target: edge {i} points at node "{e.target}" which is not '
                          "in nodes")
        if e.target in edge_of:
            raise invalid(f'{at}.target: node "{e.target}" already has an incoming edge '
                          f"(edges[{edge_of[e.target]}]); a node has exactly one")
        seen: set[str] = set()
        for j, src in enumerate(e.sources):
            if src.node not in nodes:
                raise invalid(f'{at}.sources[{j}].node: edge {i} comes from node '
                              f'"{src.node}" which is not in nodes')
            if src.node == e.target or src.node in seen:
                what = "its own source" if src.node == e.target else "listed twice"
                raise invalid(f'{at}.sources[{j}].node: node "{src.node}" is {what}')
            seen.add(src.node)
        edge_of[e.target] = i
    exts = {nid: _loom_ext(n.extensions, f'{where}.nodes["{nid}"]') for nid, n in nodes.items()}
    for nid, n in nodes.items():
        for name, ref in (("editedFrom", n.edited_from),
                          ("extensions.loom.versionOf", exts[nid].version_of),
                          ("extensions.loom.parent", exts[nid].parent)):
            if ref is not None and ref not in nodes:
                raise invalid(f'{where}.nodes["{nid}"].{name}: node "{ref}" is not in nodes')
    root = _find_root(where, tree, edge_of)
    deps: dict[str, list[str]] = {}
    for nid in nodes:
        if nid in edge_of:
            deps[nid] = [src.node for src in tree.edges[edge_of[nid]].sources]
        elif nid != root:  # a version of the root
            deps[nid] = [nodes[nid].edited_from or root]
        if exts[nid].parent:
            deps.setdefault(nid, []).append(exts[nid].parent)
    return _Shape(edge_of, exts, root, _topological(where, nodes, deps))


def _plan_tree(t: int, tree: TreeData, used: set[str], issued: set[str], titles: set[str],
               now: float) -> _TreePlan:
    where = f"trees[{t}]"
    shape = _check_tree(where, tree, used)
    nodes, exts, order, edge_of = tree.nodes, shape.exts, shape.order, shape.edge_of
    gens = {nid: ([nodes[nid].generation] if nodes[nid].generation else []) +
            exts[nid].more_generations for nid in order}
    tree_ext = _loom_ext(tree.extensions, where, _LoomTreeExt)
    link_ids = [link.id for link in tree.links if link.id]
    clash = bool(
        (tree.id and Tree.get_or_none(Tree.id == tree.id) is not None)
        or _exists(Node, Node.id, nodes) or _exists(Link, Link.id, link_ids)
        or _exists(Generation, Generation.id, [g.id for gl in gens.values() for g in gl])
        or _exists(RawResponse, RawResponse.id, tree_ext.raw_responses))

    def keep_or_new(old: str | None) -> str:
        new = old if old and not clash and _ULID.match(old) and old not in issued else \
            new_ulid()
        issued.add(new)
        return new

    ids = _node_ids(nodes, clash, now)
    raws = {rid: keep_or_new(rid) for rid in tree_ext.raw_responses}
    plan = _TreePlan(where, tree, keep_or_new(tree.id), unique_title(tree.title, titles),
                     ids[shape.root], ids)
    plan.link_ids = {link_id: keep_or_new(link_id) for link_id in dict.fromkeys(link_ids)}
    plan.raws = [dict(id=raws[rid], body=body) for rid, body in tree_ext.raw_responses.items()]
    local_ids, relabel = _local_ids(nodes, exts, ids, order)
    anns = _ann_numbers(nodes, exts, order, edge_of, tree.edges)
    families = _version_families(where, nodes, exts, order)
    plan.ann_counter = max([tree_ext.ann_counter or 0, *anns.values()])
    parents: dict[str, str | None] = {}
    depth: dict[str, int] = {}
    hashes: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for nid in order:
        n = nodes[nid]
        edge = tree.edges[edge_of[nid]] if nid in edge_of else None
        parent = exts[nid].parent or (edge.sources[0].node if edge else None)
        kinds[nid] = n.kind or _derive_kind(edge, n, kinds)
        parents[nid] = parent
        depth[nid] = 0 if parent is None else depth[parent] + (kinds[nid] != "annotation")
        hashes[nid] = n.content_hash or content_hash(hashes[parent] if parent else "",
                                                     n.content)
    counters: dict[tuple[str, str], int] = defaultdict(int)
    for edge in tree.edges:  # list order is sibling order
        plan.edges.append(_edge_row(plan, edge, counters))
    labels = _labels(order, kinds, anns, families, local_ids,
                     {nid: None if relabel else exts[nid].label for nid in order})
    for nid in order:
        n, (family, number) = nodes[nid], families[nid]
        created = _ts(n.created, now)
        plan.nodes.append(dict(
            id=ids[nid], tree=plan.tree_id, local_id=local_ids[nid], label=labels[nid],
            content=n.content, author=None, author_type=n.author.role, kind=kinds[nid],
            parent=ids[parents[nid]] if parents[nid] else None, depth=depth[nid],
            summary=n.summary, summary_source=n.summary_source, created=created,
            edited_from=ids[n.edited_from] if n.edited_from else None,
            version_of=ids[family] if number and family else None, version_number=number,
            ann_number=anns.get(nid), bookmarked=n.bookmarked, pruned=n.pruned,
            excluded=n.excluded, content_hash=hashes[nid],
            extra=_node_extra(n, exts[nid], tree.edges[edge_of[nid]] if nid in edge_of
                              else None),
        ))
        plan.authors.append((n.author.name, n.author.role))
        for g in gens[nid]:
            plan.generations.append(dict(
                id=keep_or_new(g.id), node=ids[nid], provider=g.provider, model=g.model,
                params=g.params, usage=g.usage, latency_ms=g.latency_ms,
                completion_index=g.completion_index, logprobs=g.logprobs,
                raw=raws.get(g.raw_id, g.raw_id) if g.raw_id else None,
                created=_ts(g.created, created)))
    tree_keep = {k: v for k, v in (("fields", tree.leftovers()),
                                   ("extensions", _foreign(tree.extensions)),
                                   ("loom", tree_ext.leftovers())) if v}
    if tree_keep:
        _keep(next(row for row in plan.nodes if row["id"] == plan.root), "tree", tree_keep)
    return plan


class _LoomTreeExt(_Part):
    ann_counter: int | None = Field(default=None, ge=0)
    raw_responses: dict[str, str] = Field(default_factory=dict)


def _node_ids(nodes: dict[str, NodeData], clash: bool, now: float) -> dict[str, str]:
    """The stored ids: the file's ULIDs, or fresh ULIDs for the whole tree when any clashes
    or is not a ULID. Fresh ids keep the original order (ULID order, else creation order),
    because the store takes the greatest id among a node's versions as the newest."""
    if not clash and all(_ULID.match(nid) for nid in nodes):
        return {nid: nid for nid in nodes}
    if all(_ULID.match(nid) for nid in nodes):
        old = sorted(nodes)
    else:
        index = {nid: i for i, nid in enumerate(nodes)}
        old = sorted(nodes, key=lambda nid: (_ts(nodes[nid].created, now), index[nid]))
    return dict(zip(old, sorted(new_ulid() for _ in old), strict=True))


def _foreign(ext: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ext.items() if k != NS}


def _keep(row: dict[str, Any], key: str, value: Any) -> None:
    extra = dict(row["extra"] or {})
    keep = dict(extra.get(KEEP) or {})
    keep[key] = value
    extra[KEEP] = keep
    row["extra"] = extra


def _node_extra(n: NodeData, ext: LoomNodeExt, edge: EdgeData | None) -> dict[str, Any] | None:
    extra = dict(ext.extra or {})
    extra.pop(KEEP, None)
    keep: dict[str, Any] = {}
    if n.leftovers():
        keep["fields"] = n.leftovers()
    if _foreign(n.extensions):
        keep["extensions"] = _foreign(n.extensions)
    if ext.leftovers():
        keep["loom"] = ext.leftovers()
    if edge is not None:
        edge_keep = {k: v for k, v in (("fields", edge.leftovers()),
                                       ("extensions", _foreign(edge.extensions))) if v}
        if edge_keep:
            keep["edge"] = edge_keep
    if keep:
        extra[KEEP] = keep
    return extra or None


def _derive_kind(edge: EdgeData | None, n: NodeData, kinds: dict[str, str]) -> str:
    if edge is None:
        return "root"
    if edge.kind == "annotation":
        return "annotation"
    if edge.kind == "version" and n.edited_from in kinds:
        return kinds[n.edited_from]
    return "continuation"


def _find_root(where: str, tree: TreeData, edge_of: dict[str, int]) -> str:
    edgeless = [nid for nid in tree.nodes if nid not in edge_of]
    if tree.root is not None:
        if tree.root not in tree.nodes:
            raise invalid(f'{where}.root: the root "{tree.root}" is not in nodes')
        if tree.root in edge_of:
            raise invalid(f'{where}.root: the root "{tree.root}" has an incoming edge '
                          f"(edges[{edge_of[tree.root]}])")
        root = tree.root
    else:
        bases = [nid for nid in edgeless if tree.nodes[nid].edited_from is None]
        if len(bases) != 1:
            listed = ", ".join(f'"{b}"' for b in bases[:5])
            raise invalid(f"{where}: {'no node is' if not bases else 'several nodes are'} "
                          f"without an incoming edge{': ' + listed if bases else ''}",
                          "a tree has one root; give it as \"root\"")
        root = bases[0]
    for nid in edgeless:
        if nid != root and tree.nodes[nid].edited_from is None:
            raise invalid(f'{where}.nodes["{nid}"]: no edge leads to this node and it is not '
                          f'the root ("{root}")', "add an edge whose target is this node")
    return root


def _version_families(where: str, nodes: dict[str, NodeData], exts: dict[str, LoomNodeExt],
                      order: list[str]) -> dict[str, tuple[str | None, int]]:
    """(family, number) per node: the original versions descend from, and its primes."""
    out: dict[str, tuple[str | None, int]] = {}
    next_number: dict[str, int] = defaultdict(int)
    for nid in order:
        ext = exts[nid]
        if ext.version_of and ext.version_number:
            next_number[ext.version_of] = max(next_number[ext.version_of], ext.version_number)
    versions = [nid for nid in order if nodes[nid].edited_from or exts[nid].version_number]
    versions.sort(key=lambda v: (exts[v].version_number == 0, exts[v].version_number))
    for nid in order:
        out[nid] = (None, 0)
    for nid in versions:
        ext = exts[nid]
        family = ext.version_of
        if family is None:
            family, hops = nodes[nid].edited_from, 0
            while family is not None and nodes[family].edited_from is not None:
                family = exts[family].version_of or nodes[family].edited_from
                hops += 1
                if hops > len(nodes):
                    raise invalid(f'{where}.nodes["{nid}"].editedFrom: the editedFrom chain '
                                  "loops")
        if family is None:
            continue
        number = ext.version_number or next_number[family] + 1
        next_number[family] = max(next_number[family], number)
        out[nid] = (family, number)
    return out


def _labels(order: list[str], kinds: dict[str, str], anns: dict[str, int],
            families: dict[str, tuple[str | None, int]], local_ids: dict[str, str],
            given: dict[str, str | None]) -> dict[str, str]:
    """As the store labels nodes: ``ann-N``, the original's label with a prime per version
    number, else the localId; a label the file gives wins unless localIds were reallocated."""
    out: dict[str, str] = {}
    for nid in sorted(order, key=lambda x: families[x][1]):  # originals before versions
        family, number = families[nid]
        if kinds[nid] == "annotation":
            out[nid] = f"ann-{anns[nid]}"
        elif given[nid]:
            out[nid] = given[nid]  # type: ignore[assignment]
        elif number and family is not None:
            out[nid] = out.get(family, local_ids[family]) + "'" * number
        else:
            out[nid] = local_ids[nid]
    return out


def _local_ids(nodes: dict[str, NodeData], exts: dict[str, LoomNodeExt], ids: dict[str, str],
               order: list[str]) -> tuple[dict[str, str], bool]:
    """LocalIds kept where valid and unique in the tree, else allocated from the node's ULID.
    The flag says whether any was reallocated (labels are then rebuilt)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for nid in order:
        want = exts[nid].local_id
        if want and _LOCAL_ID.match(want) and want not in taken:
            out[nid] = want
            taken.add(want)
    relabel = False
    for nid in order:
        if nid in out:
            continue
        relabel = relabel or exts[nid].local_id is not None
        seed = ids[nid]
        while nid not in out:
            for candidate in local_id_candidates(seed):
                if candidate not in taken:
                    out[nid] = candidate
                    taken.add(candidate)
                    break
            seed = new_ulid()
    return out, relabel


def _ann_numbers(nodes: dict[str, NodeData], exts: dict[str, LoomNodeExt], order: list[str],
                 edge_of: dict[str, int], edges: list[EdgeData]) -> dict[str, int]:
    def is_annotation(nid: str) -> bool:
        if nodes[nid].kind is not None:
            return nodes[nid].kind == "annotation"
        return nid in edge_of and edges[edge_of[nid]].kind == "annotation"

    out: dict[str, int] = {}
    used: set[int] = set()
    todo = [nid for nid in order if is_annotation(nid)]
    for nid in todo:
        number = exts[nid].ann_number
        if number is not None and number not in used:
            out[nid] = number
            used.add(number)
    nxt = max(used, default=0)
    for nid in todo:
        if nid not in out:
            nxt += 1
            out[nid] = nxt
    return out


def _edge_row(plan: _TreePlan, edge: EdgeData,
              counters: dict[tuple[str, str], int]) -> dict[str, Any]:
    """The edge's row and its source rows; the sibling order is the stored one when the file
    carries it, else counted as the store counts it (earlier edges from the first source)."""
    ext = edge.extensions.get(NS) or {}
    given = ext.get("siblingOrder") if isinstance(ext, dict) else None
    first = edge.sources[0].node
    order = given if isinstance(given, int) and given >= 0 else counters[(first, edge.kind)]
    for s in edge.sources:
        counters[(s.node, edge.kind)] += 1
    for i, s in enumerate(edge.sources):
        plan.sources.append(dict(target=plan.ids[edge.target], node=plan.ids[s.node],
                                 role=s.role, position=i if s.position is None else s.position))
    return dict(target=plan.ids[edge.target], tree=plan.tree_id, kind=edge.kind,
                sibling_order=order)


def _plan_links(plans: list[_TreePlan], tree_ids: dict[str, str],
                doc_ids: dict[str, str], now: float) -> None:
    node_ids = {old: new for p in plans for old, new in p.ids.items()}
    tree_of = {new: p.tree_id for p in plans for new in p.ids.values()}
    given: set[str] = set()
    for p in plans:
        rows = {row["id"]: row for row in p.nodes}
        for i, link in enumerate(p.data.links):
            at = f"{p.where}.links[{i}]"
            if link.source not in p.ids:
                raise invalid(f'{at}.source: link {i} comes from node "{link.source}" which is '
                              "not in this tree's nodes")
            target = link.target
            node = node_ids.get(target.node, target.node) if target.node else None
            tree = (tree_ids.get(target.tree, target.tree) if target.tree else
                    tree_of.get(node) if node else None)
            link_id = p.link_ids[link.id] if link.id else new_ulid()
            if link_id in given:  # an id listed twice
                link_id = new_ulid()
            given.add(link_id)
            p.links.append(dict(
                id=link_id, tree=p.tree_id, source=p.ids[link.source],
                target_kind=target.kind, target_node=node, target_tree=tree,
                target_doc=doc_ids.get(target.doc, target.doc) if target.doc else None,
                target_section=target.section, note=link.note, author=None,
                created=_ts(link.created, now)))
            p.link_authors.append(link.author or "human")
            if link.leftovers():
                row = rows[p.ids[link.source]]
                links_keep = dict((row["extra"] or {}).get(KEEP, {}).get("links", {}))
                links_keep[link_id] = link.leftovers()
                _keep(row, "links", links_keep)


def _plan_documents(docs: list[DocumentData],
                    now: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Rows to create and the map file doc id → stored doc id."""
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    names = {d.name: d for d in Document.select()}
    for d in docs:
        if d.id and d.id in ids:
            continue  # listed twice
        existing = Document.get_or_none(Document.id == d.id) if d.id else None
        same = names.get(d.name)
        if existing is None and same is not None and same.content == d.content:
            existing = same
        if existing is not None:
            if d.id:
                ids[d.id] = existing.id
            continue
        name, n = d.name, 2
        while name in names:
            name, n = f"{d.name} ({n})", n + 1
        new_id = d.id if d.id and _ULID.match(d.id) else new_ulid()
        created = _ts(d.created, now)
        row = dict(id=new_id, name=name, content=d.content, summary=d.summary,
                   summary_source=d.summary_source, created=created,
                   updated=_ts(d.updated, created))
        rows.append(row)
        names[name] = Document(**row)
        if d.id:
            ids[d.id] = new_id
    return rows, ids


# ── import: writing ───────────────────────────────────────────────────────────
def import_openloom(ws: Workspace, data: Any, *, trust_permissions: bool = False) -> list[Tree]:
    """Validate the whole file, then write every tree in one transaction."""
    parsed = parse_openloom(data)
    now = ws.clock()
    used: set[str] = set()  # node ids of earlier trees
    issued: set[str] = set()  # tree, link, generation and raw response ids given out
    plans: list[_TreePlan] = []
    tree_ids: dict[str, str] = {}
    titles: set[str] = set()
    for t, tree in enumerate(parsed.trees):
        if tree.id and tree.id in tree_ids:
            raise invalid(f'trees[{t}].id: tree "{tree.id}" appears twice in the file')
        plan = _plan_tree(t, tree, used, issued, titles, now)
        titles.add(plan.title)
        used.update(tree.nodes)
        plans.append(plan)
        if tree.id:
            tree_ids[tree.id] = plan.tree_id
    doc_rows, doc_ids = _plan_documents(parsed.documents, now)
    _plan_links(plans, tree_ids, doc_ids, now)
    file_keep = {k: v for k, v in (("fields", parsed.leftovers()),
                                   ("extensions", _foreign(parsed.extensions))) if v}
    for plan in plans:
        if file_keep:
            _keep(next(r for r in plan.nodes if r["id"] == plan.root), "file", file_keep)
    try:
        with ws.db.atomic():
            people = _ensure_participants(ws, parsed, plans, trust_permissions)
            for row in doc_rows:
                Document.insert(**row).execute()
            for plan in plans:
                _write_tree(ws, plan, people, now)
    except (pw.IntegrityError, sqlite3.IntegrityError) as err:
        raise LoomError("CONFLICT", f"the file clashes with what is stored: {err}",
                        "nothing was imported; retry") from None
    return [Tree.get_by_id(p.tree_id) for p in plans]


def _ensure_participants(ws: Workspace, parsed: OpenLoomFile, plans: list[_TreePlan],
                         trust: bool) -> dict[str, Participant]:
    wanted: dict[str, ParticipantData] = {p.name: p for p in parsed.participants}
    for plan in plans:
        for name, role in plan.authors:
            if name not in wanted:
                wanted[name] = ParticipantData(
                    name=name, kind=role, role="human" if role == "human" else "subject")
        for name in plan.link_authors:
            if name not in wanted:
                wanted[name] = ParticipantData(name=name, kind="human", role="human")
    people: dict[str, Participant] = {}
    for name, p in wanted.items():
        people[name] = ws.ensure_participant(  # an existing participant is left as it is
            name, p.kind, p.role, p.permissions if trust else (),
            loom_aware=p.loom_aware and trust, profile=p.profile)
    return people


def _write_tree(ws: Workspace, plan: _TreePlan, people: dict[str, Participant],
                now: float) -> None:
    d = plan.data
    created = _ts(d.created, now)
    Tree.insert(id=plan.tree_id, title=plan.title, description=d.description,
                summary=d.summary, summary_source=d.summary_source, mode=d.mode,
                system_context=d.system_context, archived=d.archived, root=plan.root,
                ann_counter=plan.ann_counter, created=created,
                updated=_ts(d.updated, created)).execute()
    for row, (name, _) in zip(plan.nodes, plan.authors, strict=True):
        row["author"] = people[name].id
    for row, name in zip(plan.links, plan.link_authors, strict=True):
        row["author"] = people[name].id
    for model, rows in ((Node, plan.nodes), (Edge, plan.edges), (EdgeSource, plan.sources),
                        (Link, plan.links), (RawResponse, plan.raws),
                        (Generation, plan.generations)):
        _insert_rows(ws, model, rows)
    ws.log_change(plan.tree_id, "tree.create", plan.tree_id, None,
            {"title": plan.title, "mode": d.mode, "import": OPEN_LOOM})
    ws.log_change(plan.tree_id, "node.bulk", plan.tree_id, None, {"count": len(plan.nodes)})


def _insert_rows(ws: Workspace, model: type[pw.Model], rows: list[dict[str, Any]]) -> None:
    """One prepared INSERT run for every row (peewee's insert_many spends most of an
    import building SQL text); values go through the fields' own conversions."""
    if not rows:
        return
    fields = [model._meta.fields[name] for name in rows[0]]
    columns = ", ".join(f'"{f.column_name}"' for f in fields)
    marks = ", ".join("?" for _ in fields)
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES ({marks})'
    ws.db.cursor().executemany(sql, [tuple(f.db_value(row[f.name]) for f in fields)
                                     for row in rows])
