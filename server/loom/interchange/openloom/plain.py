"""A plain tree's rows (``read.read_plain``), planned in one pass as the tuples written.

A plain tree is what the general plan (``planning.TreePlan``) would import with nothing to
decide per node: no Loom extensions, versions, generations, media, flags or several
sources; each node a text, an author's role and a time; each edge one parent. The rows are
the general plan's to the value (tests/unit/test_openloom_plain.py imports files both
ways and compares every row and the export): the same ids in the same order, localIds,
labels, annotation numbers, depths, content hashes, extractive summaries, and each node
kept verbatim with its edge (``verbatim``). What the general plan spends per node on
objects, row dictionaries and rendering the node as an export would is left out: a
100,000-node file is planned here in about a sixth of the time.
"""

from __future__ import annotations

from typing import Any

import loom.interchange.jsontext as jsontext
from loom.interchange.openloom.planning import Importer, TreeStart, _int, local_id_of, tree_row
from loom.interchange.openloom.read import PlainTreeIn
from loom.interchange.openloom.render import ExportOptions, Renderer
from loom.interchange.openloom.snapshot import IC, Shared, Snap
from loom.interchange.openloom.verbatim import summary_digest
from loom.render.text import extractive_summary
from loom.store.bulk import NODE_COLUMNS
from loom.store.workspace import Workspace, content_hash

_ROW_NAMES = ("id", "tree", *NODE_COLUMNS[2:5], "author", *NODE_COLUMNS[6:])


class PlainTreePlan(TreeStart):
    """One plain tree's rows: ``nodes``, ``edges`` and ``sources`` as tuples to insert."""

    def __init__(self, imp: Importer, tree: PlainTreeIn, used: set[str],
                 titles: set[str]) -> None:
        self.imp, self.tree = imp, tree
        self.unverified: list[str] = []
        self.media_count: dict[str, int] = {}
        self.agent_ids: dict[str, str] = {}
        now = imp.now
        super().__init__(imp, tree.raw, tree.keys, used,
                         lambda: [c or now for c in tree.created])
        self.current = self.ids[tree.current] if tree.current else None
        self.snap = Snap(tree=tree_row(imp, tree.raw, tree.loom, self.tree_id,
                                       self.ids[tree.root], titles, self.file_tree_id),
                         nodes={}, edges={}, sources={}, generations={}, raws={}, links=[],
                         position=None)
        self.count, self.bookmarks = len(tree.keys), 0
        self.authors: set[str] = set()
        self.nodes: list[tuple[Any, ...]] = []
        self.edges: list[tuple[str, str, str, int]] = []
        self.sources: list[tuple[str, str, str, int]] = []
        self._shown: dict[str, dict[str, Any]] = {}  # the root's and current node's rows
        self.anns = 0  # annotation numbers given: 1…anns
        self.plan_rows()

    def plan_rows(self) -> None:
        imp, tree = self.imp, self.tree
        keys, texts, models, created, raws = tree.keys, tree.texts, tree.models, \
            tree.created, tree.raws
        edges, edge_raws = tree.edges, tree.raw["edges"]
        tree_id, now = self.snap.tree["id"], imp.now
        nids = [self.ids[k] for k in keys]
        position = {k: i for i, k in enumerate(keys)}
        # Sibling order: each parent's edges of a kind counted in file order.
        counters: dict[tuple[str, str], int] = {}
        sibling: dict[str, int] = {}
        for target, (_, parent, kind) in edges.items():
            counted = counters.get((parent, kind), 0)
            counters[parent, kind] = counted + 1
            sibling[target] = counted
            nid = nids[position[target]]
            self.edges.append((nid, tree_id, kind, counted))
            self.sources.append((nid, nids[position[parent]], "primary", 0))
        order = tree.order
        taken: set[str] = set()
        ann = 0
        person = imp.person.id
        model = imp.model_author().id if any(models) else person
        self.authors = {person if not m else model for m in set(models)}
        depth = [0] * len(keys)
        hashes = [""] * len(keys)
        dumps, out, current = jsontext.dumps, self.nodes, tree.current
        for i in order:
            key, nid, text = keys[i], nids[i], texts[i]
            local = local_id_of(nid, taken)
            edge = edges.get(key)
            if edge is None:
                kind, parent, d, h = "root", None, 0, content_hash("", text)
                ann_number, label = None, local
            else:
                index, parent_key, kind = edge
                p = position[parent_key]
                parent = nids[p]
                if kind == "annotation":
                    ann += 1
                    ann_number, label, d = ann, f"ann-{ann}", depth[p]
                else:
                    ann_number, label, d = None, local, depth[p] + 1
                h = content_hash(hashes[p], text)
            depth[i], hashes[i] = d, h
            summary = extractive_summary(text) or None
            source = "extractive" if summary else None
            ic: dict[str, Any] = {"id": key} if nid != key else {}
            file = dict(raws[i])
            file["content"] = None
            ic["file"] = file
            ic["text"] = True
            ic["at"] = [0, None if summary is None else summary_digest(summary), source, label]
            if edge is not None:
                so = sibling[key]
                ic["edge"] = {"index": index, "file": edge_raws[index], "at": [so, so, 1]}
            when = created[i]
            row = (nid, tree_id, local, label, text, model if models[i] else person,
                   "model" if models[i] else "human", kind, parent, d, summary, source,
                   when if when is not None else now, None, None, 0, ann_number, False,
                   False, False, h, dumps({IC: ic}))
            out.append(row)
            if parent is None or key == current:
                shown = dict(zip(_ROW_NAMES, row, strict=True))
                shown["extra"] = {IC: ic}
                self._shown[nid] = shown
        self.anns = ann
        self.snap.tree["ann_counter"] = max(_int(tree.loom.get("annCounter")) or 0, ann)

    def renderer(self, shared: Shared) -> Renderer:
        """A renderer of the tree's own fields: it sees the root and the current node (all
        that those fields show of the nodes) and every node's id in the file."""
        snap = self.snap
        tree = dict(snap.tree)
        anns = [r["ann_number"] for r in self._shown.values() if r["ann_number"] is not None]
        if tree["ann_counter"] == self.anns:
            tree["ann_counter"] = max(anns, default=0)  # (rendered only when it differs)
        edges = {nid: {"kind": r["kind"], "sibling_order": 0}
                 for nid, r in self._shown.items() if r["parent"] is not None}
        sources = {nid: [{"node": self._shown[nid]["parent"], "role": "primary",
                          "position": 0}] for nid in edges}
        mini = Snap(tree, dict(self._shown), edges, sources, {}, {}, snap.links,
                    self.current)
        r = Renderer(mini, shared, ExportOptions(), {})
        r.ids = {nid: key for key, nid in self.ids.items()}
        return r

    def write(self, ws: Workspace) -> None:
        ws.bulk.node_tuples(self.nodes)
        ws.bulk.edge_tuples(self.edges)
        ws.bulk.source_tuples(self.sources)
