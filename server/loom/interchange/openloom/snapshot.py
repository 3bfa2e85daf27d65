"""A tree as plain rows: what the renderer reads, whether from the database (export) or
from the rows an import is about to write (so that the import can keep what differs)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from loom.store.node_tokens import entries as token_entries
from loom.store.schema import Tree
from loom.store.workspace import Workspace

IC = "interchange"  # the key of Node.extra / Tree.extra holding what a file said


@dataclass
class Snap:
    """One tree's rows, each a dict of column name → value (JSON columns parsed)."""

    tree: dict[str, Any]
    nodes: dict[str, dict[str, Any]]  # id → node row, in insertion order
    edges: dict[str, dict[str, Any]]  # target → edge row
    sources: dict[str, list[dict[str, Any]]]  # target → source rows, parent first
    generations: dict[str, list[dict[str, Any]]]  # node → generation rows, oldest first
    raws: dict[str, str]  # raw response id → body
    links: list[dict[str, Any]]
    position: str | None  # the node the exporting participant is at
    media: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # sha → (mime, data)

    def ic(self, node_id: str) -> dict[str, Any]:
        return ((self.nodes[node_id].get("extra") or {}).get(IC)) or {}

    @property
    def tree_ic(self) -> dict[str, Any]:
        return (self.tree.get("extra") or {}).get(IC) or {}


@dataclass
class Shared:
    """What several trees' renderings share: participants and documents by id."""

    participants: dict[str, dict[str, Any]]
    documents: dict[str, dict[str, Any]]


def sort_sources(snap: Snap) -> None:
    """Each edge's sources in position order, the node's parent first at its position."""
    for target, srcs in snap.sources.items():
        if len(srcs) < 2:  # nearly every edge: nothing to sort
            continue
        parent = snap.nodes[target]["parent"] if target in snap.nodes else None
        srcs.sort(key=lambda s, p=parent: (s["position"], s["node"] != p, s["node"]))


def load(ws: Workspace, tree: Tree, participant: str | None) -> Snap:
    """The tree's rows, read in a few queries (a 100,000-node tree is a few seconds)."""
    tid = tree.id
    bulk = ws.bulk
    tree_row = bulk.tree_row(tid)
    tree_row["archived"] = bool(tree_row["archived"])
    nodes = {}
    for row in bulk.node_rows(tid):
        row["author"] = row.pop("author_id")
        row["tree"] = row.pop("tree_id")
        for flag in ("bookmarked", "pruned", "excluded"):
            row[flag] = bool(row[flag])
        nodes[row["id"]] = row
    edges = {row["target"]: row for row in bulk.edge_rows(tid)}
    sources: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in bulk.source_rows(tid):
        sources[row["target"]].append(row)
    generations: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in bulk.generation_rows(tid):
        if row["logprobs"] is None:  # kept compactly since token data has its own table
            row["logprobs"] = token_entries(ws, row["node"])
        generations[row["node"]].append(row)
    raws = bulk.raw_responses(g["raw"] for gl in generations.values() for g in gl if g["raw"])
    links = bulk.link_rows(tid)
    for link in links:
        link["tree"] = link.pop("tree_id")
    position = None
    if participant is not None:
        node = bulk.position_node(participant, tid)
        if node is not None and node in nodes:
            position = node
    snap = Snap(tree_row, nodes, edges, dict(sources), dict(generations), raws, links,
                position)
    sort_sources(snap)
    shas = {m["sha"] for nid in nodes for m in (snap.ic(nid).get("media") or {}).values()}
    for sha in sorted(shas):
        stored = bulk.media(sha)
        if stored is not None:
            snap.media[sha] = stored
    return snap


def load_shared(ws: Workspace, snaps: list[Snap]) -> Shared:
    people = {p.id: {"id": p.id, "name": p.name, "kind": p.kind, "role": p.role,
                     "permissions": list(p.permissions or []), "loom_aware": p.loom_aware,
                     "profile": p.profile} for p in ws.participants()}
    doc_ids = {link["target_doc"] for s in snaps for link in s.links if link["target_doc"]}
    docs = {d.id: {"id": d.id, "name": d.name, "content": d.content, "summary": d.summary,
                   "summary_source": d.summary_source, "created": d.created,
                   "updated": d.updated}
            for d in ws.documents() if d.id in doc_ids}
    return Shared(people, docs)

