"""How the nodes of a tree connect, as the store reads it: a node's children and their
counts, the path from the root to a tip (:class:`NodeRow`s, cheap to make by the
thousand), one step of a path, the continuations a drawing of the tree shows, and the walk
down first continuations to a leaf."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Sequence
from typing import Any

from loom.store.nodes import BUFFER_VERSION
from loom.store.repository import Repository, chunks
from loom.store.schema import Edge, Node

_NODE_COLUMNS = tuple(f.column_name for f in Node._meta.sorted_fields)
_NodeTuple = collections.namedtuple("_NodeTuple", _NODE_COLUMNS)  # type: ignore[misc]


class NodeRow(_NodeTuple):
    """A node read for display (paths can be thousands long): ``Node``'s columns as a
    named tuple — a fraction of a peewee model's construction cost. Booleans come as 0/1
    and ``extra`` as its JSON text."""

    __slots__ = ()
    # Node's columns, in order, for type checkers (the tuple's fields are made at runtime
    # from the schema; tests/unit/test_store_facade.py checks the two agree).
    id: str
    tree_id: str
    local_id: str
    label: str
    content: str
    author_id: str
    author_type: str
    kind: str
    parent: str | None
    depth: int
    summary: str | None
    summary_source: str | None
    created: float
    edited_from: str | None
    version_of: str | None
    version_number: int
    ann_number: int | None
    bookmarked: int
    pruned: int
    excluded: int
    content_hash: str
    extra: str | None

    @classmethod
    def all(cls, cursor: Any) -> list[NodeRow]:
        names = tuple(c[0] for c in cursor.description)
        if names == _NODE_COLUMNS:
            make = cls._make
            return [make(row) for row in cursor.fetchall()]
        return [cls(**dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


class Paths(Repository):
    """Reads of ``edge`` and ``edge_source`` with the nodes they join (``Workspace``'s
    children, path and walk methods)."""

    def children(self, node: Node | NodeRow, kind: str = "continuation",
                 include_pruned: bool = False) -> list[Node]:
        pruned = "" if include_pruned else " AND NOT n.pruned"
        return list(Node.raw(
            "SELECT n.* FROM edge_source s JOIN edge e ON e.target = s.target "
            "JOIN node n ON n.id = s.target WHERE s.node = ? AND e.kind = ?" + pruned +
            " ORDER BY e.sibling_order, n.id", node.id, kind))

    def count_children(self, node_id: str, kind: str = "continuation") -> int:
        return self.sql(
            "SELECT count(*) FROM edge_source s JOIN edge e ON e.target = s.target "
            "JOIN node n ON n.id = s.target "
            "WHERE s.node = ? AND e.kind = ? AND NOT n.pruned", (node_id, kind),
        ).fetchone()[0]

    def continuation_ids(self, parents: list[str]) -> dict[str, list[str]]:
        """``parent → [child ids]``: the unpruned continuations of many nodes, in sibling
        order."""
        kids: dict[str, list[str]] = {}
        for chunk in chunks(parents):
            marks = ",".join("?" * len(chunk))
            for parent, child in self.sql(
                    "SELECT s.node, s.target FROM edge_source s JOIN edge e ON "
                    "e.target = s.target JOIN node n ON n.id = s.target WHERE s.node IN ("
                    + marks + ") AND e.kind = 'continuation' AND NOT n.pruned "
                    "ORDER BY s.node, e.sibling_order, s.target", chunk):
                kids.setdefault(parent, []).append(child)
        return kids

    def count_links(self, node_id: str) -> int:
        return self.sql(
            "SELECT count(*) FROM link WHERE source = ? OR target_node = ?", (node_id, node_id)
        ).fetchone()[0]

    def connection_counts(self, ids: Sequence[str]
                          ) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """For many nodes at once (a whole path), in two queries: ``{(id, edge kind):
        unpruned children}`` and ``{id: links}``; zero counts are left out."""
        if not ids:
            return {}, {}
        payload = json.dumps(list(ids))
        values = self.dialect.json_values()
        kids: dict[tuple[str, str], int] = {}
        for node_id, kind, n in self.sql(
            "SELECT s.node, e.kind, count(*) FROM edge_source s "
            f"JOIN edge e ON e.target = s.target JOIN node n ON n.id = s.target "
            f"WHERE s.node IN ({values}) AND NOT n.pruned "
            "GROUP BY s.node, e.kind", (payload,)).fetchall():
            kids[(node_id, kind)] = n
        links: dict[str, int] = {}
        for node_id, n in self.sql(
            f"SELECT x, count(*) FROM (SELECT source AS x FROM link WHERE source IN "
            f"({values}) UNION ALL SELECT target_node AS x FROM link "
            f"WHERE target_node IN ({values})) AS l GROUP BY x",
                (payload, payload)).fetchall():
            links[node_id] = n
        return kids, links

    def sibling_count(self, node: Node) -> int:
        """How many other children the node's parent has (SPEC-NOTES decision 4)."""
        if node.parent is None:
            return 0
        kind = "annotation" if node.kind == "annotation" else "continuation"
        return max(0, self.count_children(node.parent, kind) - (0 if node.version_number and
                   node.edited_from and self._is_buffer_version(node) else 1))

    def _is_buffer_version(self, node: Node) -> bool:
        edge = Edge.get_or_none(Edge.target == node.id)
        return edge is not None and edge.kind == "version"

    def path(self, tip: Node | NodeRow, prefer: Iterable[str] = (),
             limit: int = 100_000) -> list[NodeRow]:
        """Root → tip in one recursive query (only its last ``limit`` nodes when given), in
        :class:`NodeRow` form: a path can be thousands of nodes long, and a row costs a
        fraction of a ``Node`` (booleans come as 0/1, ``extra`` as its JSON text, which
        ``loom.model.marks`` reads either way). Where a node has several sources (an
        original and its versions, a split node and its tail), the walk takes a preferred
        one, else one still shown (not pruned), else the newest version."""
        cursor = self.sql(
            f"""
            WITH RECURSIVE up(id, d) AS (
              SELECT id, 0 FROM node WHERE id = ?
              UNION ALL
              SELECT (SELECT s.node FROM edge_source s WHERE s.target = up.id
                      ORDER BY (s.node IN ({self.dialect.json_values()})) DESC,
                               (SELECT pruned FROM node WHERE id = s.node) ASC,
                               (s.role = 'primary') DESC,
                               (SELECT version_number FROM node WHERE id = s.node) DESC,
                               s.node DESC LIMIT 1), d + 1
              FROM up WHERE up.id IS NOT NULL AND d < ?
            )
            SELECT n.* FROM up JOIN node n ON n.id = up.id ORDER BY up.d DESC
            """, (tip.id, json.dumps(list(prefer)), max(0, limit - 1)))
        return NodeRow.all(cursor)

    def single_source_path(self, tip: Node | NodeRow) -> list[NodeRow] | None:
        """Root → tip by the nodes' ``parent`` column (primary-key reads, no choice made at
        any step), when every node on the way has exactly one source and it is that
        parent: then there is nothing for :meth:`path`'s preferences to choose, and this
        is its answer for any ``prefer``. None when a node on the way has several sources
        (versions, splits), for :meth:`path` to walk."""
        rows = NodeRow.all(self.sql(
            """
            WITH RECURSIVE up(id, d) AS (
              SELECT id, 0 FROM node WHERE id = ?
              UNION ALL
              SELECT n.parent, up.d + 1 FROM up JOIN node n ON n.id = up.id
              WHERE n.parent IS NOT NULL AND up.d < 100000
            )
            SELECT n.* FROM up JOIN node n ON n.id = up.id ORDER BY up.d DESC
            """, (tip.id,)))
        if not rows or rows[0].parent is not None:
            return None
        ids = [r.id for r in rows]
        parent_of = {r.id: r.parent for r in rows}
        seen = 0
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for target, source in self.sql(
                    f"SELECT target, node FROM edge_source WHERE target IN ({marks})", chunk):
                if parent_of.get(target) != source:
                    return None
                seen += 1
        return rows if seen == len(ids) - 1 else None

    def path_step(self, node_id: str) -> tuple[NodeRow | None, list[str]]:
        """One step of a path, for callers that extend a path they know: the node's row
        and the ids of its sources (two indexed reads; no walk)."""
        rows = NodeRow.all(self.sql("SELECT * FROM node WHERE id = ?", (node_id,)))
        sources = [r[0] for r in self.sql(
            "SELECT node FROM edge_source WHERE target = ? ORDER BY position", (node_id,))]
        return (rows[0] if rows else None), sources

    def continuation_map(self, node_id: str, depth: int, per_node: int | None = None,
                         prefer: Iterable[str] = ()) -> dict[str, list[tuple[str, str]]]:
        """``(id, label)`` of the unpruned continuations, in sibling order, of ``node_id`` and
        of every node down to ``depth`` levels below it (what a ``tree`` drawing of that
        depth shows), one query per level. With ``per_node`` only the first ``per_node``
        children of a node are followed further down, and those in ``prefer``. Nodes
        without any are left out.

        A continuation that has buffer-mode versions is shown as the member of its family
        that is in ``prefer`` (the viewer's path), else as its newest version: a version
        takes its original's place, it is not another branch."""
        preferred = set(prefer)
        found: dict[str, list[tuple[str, str]]] = {}
        frontier = [node_id]
        for _level in range(depth + 1):
            if not frontier:
                break
            rows = self.sql(
                "SELECT s.node, n.id, n.label FROM edge_source s JOIN edge e ON e.target = "
                f"s.target JOIN node n ON n.id = s.target WHERE s.node IN ("
                f"{self.dialect.json_values()}) AND e.kind = 'continuation' AND NOT n.pruned "
                "ORDER BY s.node, e.sibling_order, n.id", (json.dumps(frontier),)).fetchall()
            shown = self.shown_members([r[1] for r in rows], preferred)
            below: dict[str, None] = {}
            for parent, child, label in rows:
                kids = found.setdefault(parent, [])
                child, label = shown.get(child, (child, label))
                kids.append((child, label))
                if per_node is None or len(kids) <= per_node or child in preferred:
                    below[child] = None
            frontier = list(below)
        return found

    def shown_members(self, ids: Sequence[str], prefer: set[str] | frozenset[str] = frozenset()
                      ) -> dict[str, tuple[str, str]]:
        """For those of ``ids`` that have buffer-mode versions: ``id → (id, label)`` of the
        family member a drawing shows in its place (the one in ``prefer``, else the newest
        version, else the node itself)."""
        out: dict[str, tuple[str, str]] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            members: dict[str, list[tuple[int, str, str]]] = {}
            for fam, vid, label, number in self.db.execute_sql(
                    "SELECT n.version_of, n.id, n.label, n.version_number FROM node n "
                    f"LEFT JOIN edge e ON e.target = n.id WHERE n.version_of IN ({marks}) "
                    f"AND {BUFFER_VERSION} AND NOT n.pruned", chunk):
                members.setdefault(fam, []).append((number, vid, label))
            for fam, versions in members.items():
                if fam in prefer:
                    continue
                on_path = [v for v in versions if v[1] in prefer]
                _, vid, label = on_path[0] if on_path else max(versions)
                out[fam] = (vid, label)
        return out

    def descend(self, node: Node, limit: int = 100_000) -> Node:
        """Follow first continuations (sibling order) down to a leaf, in one query."""
        row = self.sql(
            """
            WITH RECURSIVE down(id, d) AS (
              SELECT id, 0 FROM node WHERE id = ?
              UNION ALL
              SELECT (SELECT s.target FROM edge_source s JOIN edge e ON e.target = s.target
                      JOIN node n ON n.id = s.target
                      WHERE s.node = down.id AND e.kind = 'continuation' AND NOT n.pruned
                      ORDER BY e.sibling_order, s.target LIMIT 1), d + 1
              FROM down WHERE down.id IS NOT NULL AND d < ?
            )
            SELECT id FROM down WHERE id IS NOT NULL ORDER BY d DESC LIMIT 1
            """, (node.id, limit)).fetchone()
        return node if row is None or row[0] == node.id else Node.get_by_id(row[0])
