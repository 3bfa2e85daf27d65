"""A tree as plain rows: what the renderer reads, whether from the database (export) or
from the rows an import is about to write (so that the import can keep what differs)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from loom.store.node_tokens import entries as token_entries
from loom.store.schema import Document, Media, Participant, Position, RawResponse, Tree
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


def _rows(ws: Workspace, sql: str, params: tuple[Any, ...],
          json_columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    cursor = ws.sql(sql, params)
    names = [c[0] for c in cursor.description]
    out = []
    for row in cursor.fetchall():
        item = dict(zip(names, row, strict=True))
        for col in json_columns:
            if item.get(col) is not None:
                item[col] = json.loads(item[col])
        out.append(item)
    return out


def load(ws: Workspace, tree: Tree, participant: str | None) -> Snap:
    """The tree's rows, read in a few queries (a 100,000-node tree is a few seconds)."""
    tid = tree.id
    tree_row = _rows(ws, 'SELECT * FROM "tree" WHERE id = ?', (tid,), ("themes", "extra"))[0]
    tree_row["archived"] = bool(tree_row["archived"])
    nodes = {}
    for row in _rows(ws, "SELECT * FROM node WHERE tree_id = ? ORDER BY id", (tid,),
                     ("extra",)):
        row["author"] = row.pop("author_id")
        row["tree"] = row.pop("tree_id")
        for flag in ("bookmarked", "pruned", "excluded"):
            row[flag] = bool(row[flag])
        nodes[row["id"]] = row
    edges = {row["target"]: row for row in _rows(
        ws, "SELECT target, kind, sibling_order FROM edge WHERE tree_id = ?", (tid,))}
    sources: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(ws, "SELECT s.target, s.node, s.role, s.position FROM edge_source s "
                     "JOIN edge e ON e.target = s.target WHERE e.tree_id = ?", (tid,)):
        sources[row["target"]].append(row)
    generations: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(ws, "SELECT g.* FROM generation g JOIN node n ON n.id = g.node "
                     "WHERE n.tree_id = ? ORDER BY g.created, g.id", (tid,),
                     ("params", "usage", "logprobs")):
        if row["logprobs"] is None:  # kept compactly since token data has its own table
            row["logprobs"] = token_entries(ws, row["node"])
        generations[row["node"]].append(row)
    raw_ids = sorted({g["raw"] for gl in generations.values() for g in gl if g["raw"]})
    raws: dict[str, str] = {}
    for i in range(0, len(raw_ids), 500):
        chunk = raw_ids[i:i + 500]
        raws.update((r.id, r.body) for r in RawResponse.select().where(
            RawResponse.id.in_(chunk)))
    links = _rows(ws, "SELECT * FROM link WHERE tree_id = ? ORDER BY created, id", (tid,))
    for link in links:
        link["tree"] = link.pop("tree_id")
    position = None
    if participant is not None:
        row = Position.get_or_none((Position.participant == participant) &
                                   (Position.tree == tid))
        if row is not None and row.node in nodes:
            position = row.node
    snap = Snap(tree_row, nodes, edges, dict(sources), dict(generations), raws, links,
                position)
    sort_sources(snap)
    shas = {m["sha"] for nid in nodes for m in (snap.ic(nid).get("media") or {}).values()}
    for sha in sorted(shas):
        row = Media.get_or_none(Media.sha256 == sha)
        if row is not None:
            snap.media[sha] = (row.mime, bytes(row.data))
    return snap


def load_shared(ws: Workspace, snaps: list[Snap]) -> Shared:
    people = {p.id: {"id": p.id, "name": p.name, "kind": p.kind, "role": p.role,
                     "permissions": list(p.permissions or []), "loom_aware": p.loom_aware,
                     "profile": p.profile} for p in Participant.select()}
    doc_ids = sorted({link["target_doc"] for s in snaps for link in s.links
                      if link["target_doc"]})
    docs = {d.id: {"id": d.id, "name": d.name, "content": d.content, "summary": d.summary,
                   "summary_source": d.summary_source, "created": d.created,
                   "updated": d.updated}
            for d in Document.select().where(Document.id.in_(doc_ids))}
    return Shared(people, docs)

