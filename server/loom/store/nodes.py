"""Nodes as the store keeps them: writing one (a continuation, an annotation, a version,
the halves of a split, many at once for an importer), finding one from what a person typed
(:meth:`Nodes.resolve`), and a node's flags and summary. Nodes are immutable but for the
halves of a split nobody has built on (:meth:`Nodes.move_split`). How nodes connect — their
children, paths and walks — is :mod:`loom.store.paths`'s."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loom.errors import CrossTree, LoomError, not_found
from loom.model import permissions as perms
from loom.model.ids import MIN_PREFIX, local_id_candidates, new_ulid, normalise_local_id
from loom.render.text import extractive_summary
from loom.store.backend import executemany, insert_rows
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository, chunks
from loom.store.schema import BufferState, Edge, EdgeSource, Node, Participant, Position, Tree
from loom.store.summary_queue import TREE_SUMMARY_EVERY

_VERSION_REF = re.compile(r"^\[?([0-9a-zA-Z]+)(\'+)\]?$")
_NODE_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}", re.IGNORECASE)  # a ULID
_ANN_REF = re.compile(r"^\[?ann-(\d+)\]?$", re.IGNORECASE)

_NODE_FIELDS = tuple(Node._meta.sorted_fields)
_NODE_INSERT = (f"INSERT INTO node ({', '.join(f.column_name for f in _NODE_FIELDS)}) "
                f"VALUES ({', '.join('?' for _ in _NODE_FIELDS)})")

# A buffer-mode version (SQL over ``node n LEFT JOIN edge e ON e.target = n.id``) takes its
# original's place on a path: it is on a version edge, or, a version of the root, has no
# edge and is in a buffer tree. A dialogue tree's edited root is no version but another
# opening (SPEC-NOTES 5: a dialogue edit makes a branch).
BUFFER_VERSION = ("(n.version_of IS NOT NULL AND (e.kind = 'version' OR (e.kind IS NULL "
                  "AND EXISTS (SELECT 1 FROM tree bt WHERE bt.id = n.tree_id "
                  "AND bt.mode = 'buffer'))))")


def content_hash(parent_hash: str, content: str) -> str:
    return hashlib.sha256(f"{parent_hash}\n{content}".encode()).hexdigest()


@dataclass(frozen=True)
class NewNode:
    """A node to add in bulk (importers, benchmarks)."""

    key: str  # caller's id, used by later specs' ``parent``
    parent: str | None
    content: str
    author: str  # participant name
    author_type: str = "human"
    kind: str = "continuation"
    created: float | None = None
    summary: str | None = None
    summary_source: str | None = None
    bookmarked: bool = False
    excluded: bool = False
    extra: dict[str, Any] | None = None


def _insert_rows(db: pw.Database, model: type[pw.Model],
                 rows: list[dict[str, Any]]) -> None:
    """Multi-row inserts: peewee's insert_many spends most of a bulk import building SQL
    text in Python."""
    if not rows:
        return
    fields = [model._meta.fields[name] for name in rows[0]]
    insert_rows(db, model._meta.table_name, [f.column_name for f in fields],
                [tuple(f.db_value(r[f.name]) for f in fields) for r in rows])


EnsureParticipant = Callable[..., Participant]


class Nodes(Repository):
    """Reads and writes of ``node`` with its edge and sources (``Workspace``'s node
    methods).

    ``lock_tree`` holds a tree's other writers off until the transaction commits,
    ``enqueue_summary`` queues a new node's summary (``SummaryQueue``), ``touch`` dates a
    tree's last change (``Trees``), ``forget_family`` shows a participant their new
    version on their paths (``Positions``) and ``ensure_participant`` makes the authors a
    bulk insert names (``Participants``)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange,
                 lock_tree: Callable[[str], None],
                 enqueue_summary: Callable[..., bool], touch: Callable[[Tree], None],
                 forget_family: Callable[[Participant, Tree, str], None],
                 ensure_participant: EnsureParticipant) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.lock_tree = lock_tree
        self.enqueue_summary = enqueue_summary
        self.touch = touch
        self.forget_family = forget_family
        self.ensure_participant = ensure_participant

    def _pick_local_id(self, tree_id: str, ulid: str, taken: set[str] | None = None) -> str:
        for candidate in local_id_candidates(ulid):
            if taken is not None:
                if candidate not in taken:
                    return candidate
                continue
            clash = self.sql(
                "SELECT 1 FROM node WHERE tree_id = ? AND local_id = ?", (tree_id, candidate)
            ).fetchone()
            if clash is None:
                return candidate
        raise LoomError("CONFLICT", "could not allocate a localId", "retry")

    def insert_root(self, tree: Tree, content: str, author: Participant,
                    created: float) -> Node:
        """A new tree's root node, in the caller's transaction (``Trees.create_tree``)."""
        return self._insert_node(tree, None, content, author, "root", created)

    def _insert_node(self, tree: Tree, sources: Sequence[tuple[Node, str]] | None,
                     content: str, author: Participant, kind: str, created: float, *,
                     edge_kind: str | None = None, summary: str | None = None,
                     summary_source: str | None = None, edited_from: Node | None = None,
                     version_of: str | None = None, version_number: int = 0,
                     label: str | None = None, extra: dict[str, Any] | None = None) -> Node:
        # Prepared statements, not peewee's query builder: building SQL text cost ~0.8 ms
        # of the ~1 ms a node took (bench/bench_core.py prints the figure).
        self.lock_tree(tree.id)
        parent = sources[0][0] if sources else None
        if parent is not None and self.db.execute_sql(
                "SELECT 1 FROM node WHERE id = ?", (parent.id,)).fetchone() is None:
            # read under the tree's lock: a purge that committed first took it away
            raise not_found(f"[{parent.label}] does not exist any more: it was deleted and "
                            "purged", "nothing was written")
        node_id = new_ulid()
        local_id = self._pick_local_id(tree.id, node_id)
        ann_number = None
        if kind == "annotation":
            ann_number = self.db.execute_sql(
                "UPDATE tree SET ann_counter = ann_counter + 1 WHERE id = ? "
                "RETURNING ann_counter", (tree.id,)).fetchone()[0]
            label = f"ann-{ann_number}"
        if summary is None and content.strip():
            summary, summary_source = extractive_summary(content), "extractive"
        fields = dict(
            id=node_id, tree=tree.id, local_id=local_id, label=label or local_id,
            content=content, author=author.id, author_type=author.kind, kind=kind,
            parent=parent.id if parent else None,
            depth=(parent.depth + 1) if parent and kind != "annotation" else
            (parent.depth if parent else 0),
            summary=summary, summary_source=summary_source, created=created,
            edited_from=edited_from.id if edited_from else None, version_of=version_of,
            version_number=version_number, ann_number=ann_number, bookmarked=False,
            pruned=False, excluded=False,
            content_hash=content_hash(parent.content_hash if parent else "", content),
            extra=extra,
        )
        self.db.execute_sql(_NODE_INSERT, tuple(f.db_value(fields[f.name])
                                                for f in _NODE_FIELDS))
        if sources:
            edge = edge_kind or kind
            order = self._child_count_any(parent.id, edge)  # type: ignore[union-attr]
            self.db.execute_sql("INSERT INTO edge (target, tree_id, kind, sibling_order) "
                                "VALUES (?, ?, ?, ?)", (node_id, tree.id, edge, order))
            executemany(
                self.db,
                "INSERT INTO edge_source (target, node, role, position) VALUES (?, ?, ?, ?)",
                [(node_id, src.id, role, i) for i, (src, role) in enumerate(sources)])
        return Node(**fields)

    def add_node(self, tree: Tree, parent: Node, content: str, author: Participant, *,
                 kind: str = "continuation", role: str = "primary",
                 extra_sources: Sequence[tuple[Node, str]] = (),
                 summary: str | None = None, summary_source: str | None = None) -> Node:
        """Add a continuation (or annotation) of ``parent`` authored by ``author``."""
        if kind == "annotation":
            role = "primary"
        with self.db.atomic():
            now = self.clock()
            node = self._insert_node(tree, [(parent, role), *extra_sources], content, author,
                                     kind, now, summary=summary,
                                     summary_source=summary_source)
            if kind == "annotation":
                self.db.execute_sql("UPDATE tree SET updated = ? WHERE id = ?", (now, tree.id))
            else:
                count = self.db.execute_sql(
                    "UPDATE tree SET updated = ?, summary_counter = summary_counter + 1 "
                    "WHERE id = ? RETURNING summary_counter", (now, tree.id)).fetchone()[0]
                self.enqueue_summary("node", node.id, tree.id)
                if count >= TREE_SUMMARY_EVERY:
                    self.enqueue_summary("tree", tree.id, tree.id, priority=6)
            self.log_change(tree.id, f"node.{kind}", node.id, author.id,
                            {"parent": parent.id, "local_id": node.local_id})
        return node

    def add_version(self, tree: Tree, original: Node, content: str,
                    author: Participant) -> Node:
        """``edit``: buffer mode makes a version sharing the original's descendants; dialogue
        mode makes a sibling branch the conversation continues from (SPEC-NOTES decision 5)."""
        family = original.version_of or original.id
        with self.db.atomic():
            self.lock_tree(tree.id)  # the version number below is the tree's to give
            root_label = Node.get_by_id(family).label
            number = (Node.select(pw.fn.MAX(Node.version_number))
                      .where(Node.version_of == family).scalar() or 0) + 1
            sources = [(Node.get_by_id(s.node), s.role) for s in
                       EdgeSource.select().where(EdgeSource.target == original.id)
                       .order_by(EdgeSource.position)]
            buffer = tree.mode == "buffer"
            node = self._insert_node(
                tree, sources or None, content, author, original.kind, self.clock(),
                edge_kind="version" if buffer and sources else None, edited_from=original,
                version_of=family, version_number=number, label=root_label + "'" * number,
            )
            if not sources:  # a version of the root
                Node.update(depth=0).where(Node.id == node.id).execute()
            if buffer:
                self.sql(
                    "INSERT INTO edge_source (target, node, role, position) "
                    "SELECT target, ?, role, position FROM edge_source WHERE node = ? "
                    "ON CONFLICT DO NOTHING",
                    (node.id, original.id),
                )
            self.enqueue_summary("node", node.id, tree.id)
            self.touch(tree)
            self.log_change(tree.id, "node.version", node.id, author.id,
                            {"edited_from": original.id, "mode": tree.mode})
            if buffer:
                self.forget_family(author, tree, family)
                self._version_takes_place(tree, original, node)
        return Node.get_by_id(node.id)

    def _version_takes_place(self, tree: Tree, original: Node, version: Node) -> None:
        """A buffer-mode version takes its original's place on every path that ended on
        it or stood on it, so that every view of the path (``loom tree``, the Markdown
        export, ``view branch:… as:prose``) shows the fix. Paths through it already show
        the newest version; one that names the original itself,
        as its position or its end, is moved to the version. A saved buffer that still
        holds an unsaved edit of the original keeps it (its own save makes a version)."""
        for participant, node, tip in self.sql(
                "SELECT participant, node, tip FROM position WHERE tree = ? "
                "AND (node = ? OR tip = ?)", (tree.id, original.id, original.id)).fetchall():
            node = version.id if node == original.id else node
            tip = version.id if tip == original.id else tip
            moved = self.sql("UPDATE position SET node = ?, tip = ? WHERE participant = ? "
                             "AND tree = ?", (node, tip, participant, tree.id)).rowcount
            if moved:  # (a team's roles leave others' positions to them: docs/team.md)
                self.log_change(tree.id, "position", node, participant,
                                {"tip": tip, "version_of": original.id})
        for state in BufferState.select().where((BufferState.tree == tree.id) &
                                                (BufferState.tip == original.id)):
            if any(p.get("node") == original.id for p in state.pending or ()):
                continue
            BufferState.update(tip=version.id).where(
                (BufferState.uri == state.uri) & (BufferState.participant == state.participant)
                & (BufferState.session == state.session)).execute()

    def split_node(self, tree: Tree, node: Node, at: int,
                   actor: Participant) -> tuple[Node, Node]:
        """Cut ``node`` at character ``at`` into a head and a tail.

        Nodes are immutable, so both halves are new nodes with the original's author,
        kind and creation time, and their own content hashes (the head chains from the
        original's parent, the tail from the head). The head takes the original's place
        (its sources and sibling order; a version stays a version of its family), the tail
        continues it and becomes a source of the original's continuations (the hyperedge,
        as for versions, so the downstream is shared, not copied). The head carries the
        annotations. The original is kept but pruned, and every position on it moves to
        the tail. Descendants sit one level deeper."""
        original = Node.get_by_id(node.id)
        with self.db.atomic():
            sources = [(Node.get_by_id(s.node), s.role) for s in
                       EdgeSource.select().where(EdgeSource.target == original.id)
                       .order_by(EdgeSource.position)]
            edge = Edge.get_or_none(Edge.target == original.id)
            if not sources or edge is None:
                raise LoomError("INVALID_SYNTAX", f"[{original.label}] has no parent to "
                                "split under", "split a node below the root")
            author = Participant.get_by_id(original.author_id)
            version = original.version_of is not None and edge.kind == "version"
            label, number = None, 0
            if version:
                family = original.version_of
                number = (Node.select(pw.fn.MAX(Node.version_number))
                          .where(Node.version_of == family).scalar() or 0) + 1
                label = Node.get_by_id(family).label + "'" * number
            head = self._insert_node(
                tree, sources, original.content[:at], author, original.kind, original.created,
                edge_kind=edge.kind, version_of=original.version_of if version else None,
                version_number=number, label=label,
                edited_from=Node.get_by_id(original.edited_from) if version else None,
                extra={"split_from": original.id, "part": "head", "at": at})
            Edge.update(sibling_order=edge.sibling_order).where(Edge.target == head.id).execute()
            tail = self._insert_node(
                tree, [(head, "primary")], original.content[at:], author, original.kind,
                original.created, extra={"split_from": original.id, "part": "tail", "at": at})
            self.sql(  # the tail carries the continuations, the head the notes
                "INSERT INTO edge_source (target, node, role, position) "
                "SELECT s.target, CASE e.kind WHEN 'annotation' THEN ? ELSE ? END, s.role, "
                "s.position FROM edge_source s JOIN edge e ON e.target = s.target "
                "WHERE s.node = ? ON CONFLICT DO NOTHING", (head.id, tail.id, original.id))
            self.sql(
                """
                WITH RECURSIVE down(id) AS (
                  SELECT target FROM edge_source WHERE node = ?
                  UNION SELECT s.target FROM edge_source s JOIN down ON s.node = down.id
                )
                UPDATE node SET depth = depth + 1
                WHERE id IN (SELECT id FROM down) AND id NOT IN (?, ?)""",
                (tail.id, head.id, tail.id))
            Node.update(pruned=True).where(Node.id == original.id).execute()
            Position.update(node=tail.id).where(Position.node == original.id).execute()
            Position.update(tip=tail.id).where(Position.tip == original.id).execute()
            for half in (head, tail):
                self.enqueue_summary("node", half.id, tree.id)
            Tree.update(updated=self.clock()).where(Tree.id == tree.id).execute()
            self.log_change(tree.id, "node.split", original.id, actor.id,
                            {"head": head.id, "tail": tail.id, "at": at})
        return Node.get_by_id(head.id), Node.get_by_id(tail.id)

    def split_unbuilt(self, head: Node, tail: Node, actor: Participant) -> str | None:
        """Why the split that made ``head`` and ``tail`` can no longer move (None: it can):
        nothing may rest on the halves but the original's own continuations, and nobody
        but ``actor`` may stand on the head."""
        h, t = head.extra or {}, tail.extra or {}
        origin = h.get("split_from")
        if (origin is None or t.get("split_from") != origin or h.get("part") != "head"
                or t.get("part") != "tail" or tail.parent != head.id):
            return f"[{tail.label}] is not the rest of a split at [{head.label}]"
        if set(h) | set(t) > {"split_from", "part", "at"} or any(
                n.bookmarked or n.pruned or n.excluded for n in (head, tail)):
            return "the halves were marked since (bookmark, tag, rating or prune)"
        ids = (head.id, tail.id)
        built = self.sql(
            "SELECT (SELECT COUNT(*) FROM edge_source s WHERE s.node IN (?, ?) "
            " AND s.target <> ? AND NOT EXISTS (SELECT 1 FROM edge_source o "
            " WHERE o.node = ? AND o.target = s.target)) + "
            "(SELECT COUNT(*) FROM node WHERE version_of IN (?, ?) OR edited_from IN (?, ?)) + "
            "(SELECT COUNT(*) FROM link WHERE source IN (?, ?) OR target_node IN (?, ?)) + "
            "(SELECT COUNT(*) FROM position WHERE participant <> ? AND (node = ? OR tip = ?))",
            (*ids, tail.id, origin, *ids, *ids, *ids, *ids, actor.id, head.id, head.id),
        ).fetchone()[0]
        return "the halves have been built on since" if built else None

    def move_split(self, tree: Tree, head: Node, tail: Node, at: int,
                   actor: Participant) -> tuple[Node, Node]:
        """Move the cut between ``head`` and ``tail`` to character ``at`` of the original
        they were split from (so that a suggestion taken a word at a time grows one node
        instead of leaving a node per word). The one place a node's text changes: only for
        halves nobody has built on (``split_unbuilt``), which keep their ids and labels; the
        change log says so, and per-process caches of a node's text key on its length."""
        original = self.node((head.extra or {})["split_from"])
        if not 0 < at < len(original.content):
            raise LoomError("LIMIT_EXCEEDED", f"at:{at} is outside [{original.label}]",
                            "give an offset inside the original's text")
        parent_hash = self.sql("SELECT content_hash FROM node WHERE id = ?",
                               (head.parent,)).fetchone()
        with self.db.atomic():
            self.lock_tree(tree.id)
            texts = (original.content[:at], original.content[at:])
            hashes = (content_hash(parent_hash[0] if parent_hash else "", texts[0]),)
            hashes += (content_hash(hashes[0], texts[1]),)
            for node, text, digest in zip((head, tail), texts, hashes, strict=True):
                fields: dict[str, Any] = {"content": text, "content_hash": digest,
                                          "extra": {**(node.extra or {}), "at": at}}
                if node.summary_source in (None, "extractive"):
                    fields.update(summary=extractive_summary(text) if text.strip() else None,
                                  summary_source="extractive" if text.strip() else None)
                Node.update(**fields).where(Node.id == node.id).execute()
                self.enqueue_summary("node", node.id, tree.id)
            Tree.update(updated=self.clock()).where(Tree.id == tree.id).execute()
            self.log_change(tree.id, "node.split", original.id, actor.id,
                            {"head": head.id, "tail": tail.id, "at": at, "moved": True})
        return Node.get_by_id(head.id), Node.get_by_id(tail.id)

    def bulk_add(self, tree: Tree, root: Node, specs: Sequence[NewNode],
                 chunk: int = 2000) -> dict[str, Node]:
        """Insert many nodes fast: one transaction, batched inserts, one change-log row."""
        participants = {p.name: p for p in Participant.select()}
        taken = {r[0] for r in self.sql(
            "SELECT local_id FROM node WHERE tree_id = ?", (tree.id,))}
        by_key: dict[str, Node] = {}
        by_key_ids: set[str] = set()
        known: dict[str, tuple[str, int, str]] = {root.id: (root.id, root.depth,
                                                            root.content_hash)}
        order_count: dict[tuple[str, str], int] = {}
        ann = Tree.get_by_id(tree.id).ann_counter
        node_rows, edge_rows, src_rows = [], [], []
        now = self.clock()
        for spec in specs:
            author = participants.get(spec.author)
            if author is None:
                kind = "model" if spec.author_type == "model" else "human"
                author = self.ensure_participant(spec.author, kind,
                                                 "subject" if kind == "model" else "human",
                                                 () if kind == "model" else perms.ORDER)
                participants[spec.author] = author
            parent_key = spec.parent or root.id
            if parent_key in by_key:
                pid, pdepth, phash = by_key[parent_key].id, by_key[parent_key].depth, \
                    by_key[parent_key].content_hash
            else:
                pid, pdepth, phash = known[parent_key]
            nid = new_ulid()
            lid = self._pick_local_id(tree.id, nid, taken)
            taken.add(lid)
            label, ann_no = lid, None
            if spec.kind == "annotation":
                ann += 1
                ann_no, label = ann, f"ann-{ann}"
            summary, source = spec.summary, spec.summary_source
            if summary is None and spec.content.strip():
                summary, source = extractive_summary(spec.content), "extractive"
            row = dict(id=nid, tree=tree.id, local_id=lid, label=label, content=spec.content,
                       author=author.id, author_type=author.kind, kind=spec.kind, parent=pid,
                       depth=pdepth + (0 if spec.kind == "annotation" else 1), summary=summary,
                       summary_source=source, ann_number=ann_no,
                       created=now if spec.created is None else spec.created,
                       bookmarked=spec.bookmarked, excluded=spec.excluded,
                       content_hash=content_hash(phash, spec.content), extra=spec.extra,
                       edited_from=None, version_of=None, version_number=0, pruned=False)
            node_rows.append(row)
            key = (pid, spec.kind)
            if key not in order_count:  # a node that existed before: count what it has
                order_count[key] = 0 if pid in by_key_ids else self._child_count_any(pid,
                                                                                    spec.kind)
            order = order_count[key]
            order_count[key] = order + 1
            edge_rows.append(dict(target=nid, tree=tree.id, kind=spec.kind, sibling_order=order))
            src_rows.append(dict(target=nid, node=pid, role="primary", position=0))
            by_key[spec.key] = Node(**row)
            by_key_ids.add(nid)
        with self.db.atomic():
            for i in range(0, len(node_rows), chunk):
                for model, rows in ((Node, node_rows), (Edge, edge_rows),
                                    (EdgeSource, src_rows)):
                    _insert_rows(self.db, model, rows[i:i + chunk])
            Tree.update(ann_counter=ann, updated=self.clock()).where(
                Tree.id == tree.id).execute()
            self.log_change(tree.id, "node.bulk", tree.id, None, {"count": len(node_rows)})
        return by_key

    def _child_count_any(self, node_id: str, kind: str) -> int:
        return self.sql(
            "SELECT count(*) FROM edge_source s JOIN edge e ON e.target = s.target "
            "WHERE s.node = ? AND e.kind = ?", (node_id, kind)).fetchone()[0]

    def node(self, node_id: str) -> Node:
        n = Node.get_or_none(Node.id == node_id)
        if n is None:
            raise not_found(f"node {node_id} does not exist")
        return n

    def find_node(self, node_id: str) -> Node | None:
        """The node with this id, or None (a change log may name a node since deleted)."""
        return Node.get_or_none(Node.id == node_id)

    def nodes_by_id(self, ids: Sequence[str]) -> list[Node]:
        """The nodes with these ids, in this order (those that exist): one query."""
        if not ids:
            return []
        found = {n.id: n for n in Node.select().where(Node.id.in_(list(ids)))}
        return [found[i] for i in ids if i in found]

    def nodes_by_prefix(self, tree: Tree, prefix: str, limit: int) -> list[Node]:
        """Nodes of a tree whose localId starts with ``prefix``, in localId order."""
        return list(Node.select().where((Node.tree == tree.id) & (Node.local_id >= prefix) &
                                        (Node.local_id < prefix + "~"))
                    .order_by(Node.local_id).limit(limit))

    def resolve(self, tree: Tree, ref: str) -> Node:
        """A node from what a person or model typed: a localId prefix (≥3), ``[a7x2]``,
        a version ``a7x2'``, or ``ann-3``. Ambiguity is an error listing the candidates."""
        raw = ref.strip()
        if raw.strip("[]").lower() == "root":
            return self.node(tree.root)
        if _NODE_ID.fullmatch(raw):  # a full node id, as editors send them
            n = Node.get_or_none(Node.id == raw.upper())
            if n is not None and n.tree_id == tree.id:
                return n
            if n is not None:
                raise CrossTree(n.local_id, Tree.get_by_id(n.tree_id).title, n.label)
        m = _ANN_REF.match(raw)
        if m:
            n = Node.get_or_none((Node.tree == tree.id) & (Node.ann_number == int(m.group(1))))
            if n is None:
                raise not_found(f"annotation [{raw.strip('[]')}] does not exist in this tree")
            return n
        m = _VERSION_REF.match(raw)
        if m:
            base = self.resolve(tree, m.group(1))
            family = base.version_of or base.id
            n = Node.get_or_none((Node.version_of == family) &
                                 (Node.version_number == len(m.group(2))))
            if n is None:
                raise not_found(f"version [{raw.strip('[]')}] does not exist in this tree")
            return n
        text = normalise_local_id(raw.strip("[]"))
        if len(text) < MIN_PREFIX:
            raise not_found(f"node [{raw}] does not exist in this tree",
                            f"use at least {MIN_PREFIX} characters of a localId")
        rows = list(Node.raw(
            "SELECT * FROM node WHERE tree_id = ? AND local_id >= ? AND local_id < ? "
            "ORDER BY local_id LIMIT 8", tree.id, text, text + "~"))
        if not rows:
            other = Node.get_or_none(Node.local_id == text)
            if other is not None:
                raise CrossTree(text, Tree.get_by_id(other.tree_id).title)
            raise not_found(f"node [{raw.strip('[]')}] does not exist in this tree",
                            self._near_ids(tree, text))
        for r in rows:
            if r.local_id == text:
                return r
        if len(rows) == 1:
            return rows[0]
        listed = ", ".join(f"[{r.local_id}]" for r in rows[:6])
        raise not_found(f"[{text}] is ambiguous: {listed}",
                        "use more characters of the localId")

    def _near_ids(self, tree: Tree, text: str) -> str | None:
        """``did you mean [a7x2q9]?`` for a localId (or the start of one) typed one
        character off (a wrong, missing, extra or swapped character), if any."""
        if len(text) < 4:
            return None
        from rapidfuzz import process  # (only on an unknown id: not on every start)
        from rapidfuzz.distance import OSA

        ids = [r[0] for r in self.sql("SELECT local_id FROM node WHERE tree_id = ? AND "
                                      "kind <> 'annotation'", (tree.id,))]
        starts = [lid[:len(text)] for lid in ids]
        found = {i for candidates in (ids, starts) for _s, _d, i in
                 process.extract(text, candidates, scorer=OSA.distance, score_cutoff=1,
                                 limit=4)}
        near = [ids[i] for i in found]
        if not near:
            return None
        shown = [f"[{x}]" for x in sorted(near)[:3]]
        return "did you mean " + (shown[0] if len(shown) == 1 else
                                  ", ".join(shown[:-1]) + f" or {shown[-1]}") + "?"

    def node_family_rows(self, node_ids: list[str]
                         ) -> dict[str, tuple[str | None, str | None, str]]:
        """``id → (parent, version_of, kind)`` for many nodes, in chunked queries."""
        out: dict[str, tuple[str | None, str | None, str]] = {}
        for chunk in chunks(node_ids):
            marks = ",".join("?" * len(chunk))
            for nid, parent, version_of, kind in self.sql(
                    f"SELECT id, parent, version_of, kind FROM node WHERE id IN ({marks})",
                    chunk):
                out[nid] = (parent, version_of, kind)
        return out

    def model_originals(self, ids: list[str]) -> dict[str, str]:
        """For versions among ``ids`` whose original a model wrote: id → the original."""
        out: dict[str, str] = {}
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for nid, content in self.sql(
                    "SELECT v.id, o.content FROM node v JOIN node o ON o.id = v.version_of "
                    f"WHERE v.id IN ({marks}) AND o.author_type = 'model'", chunk):
                out[nid] = content
        return out

    def filled_spans(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        """For ``→ fill``'s versions among ``ids`` whose original a model did not write:
        id → where the model's text is in the version (start, end); the rest is the
        original's."""
        out: dict[str, tuple[int, int]] = {}
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for nid, params in self.sql(
                    "SELECT v.id, g.params FROM node v JOIN node o ON o.id = v.version_of "
                    f"JOIN generation g ON g.node = v.id WHERE v.id IN ({marks}) AND "
                    "v.author_type = 'model' AND o.author_type <> 'model'", chunk):
                data = json.loads(params) if isinstance(params, str) else params
                fill = data.get("fill") if isinstance(data, dict) else None
                if isinstance(fill, dict) and isinstance(fill.get("start"), int) \
                        and isinstance(fill.get("length"), int):
                    out[nid] = (fill["start"], fill["start"] + fill["length"])
        return out

    def version_members(self, ids: Sequence[str]) -> dict[str, list[Node]]:
        """For those of ``ids`` that have buffer-mode versions still shown (not pruned):
        the versions, oldest first (what a sibling picker lists beside the original)."""
        out: dict[str, list[Node]] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for node in Node.raw(
                    f"SELECT n.* FROM node n LEFT JOIN edge e ON e.target = n.id WHERE "
                    f"n.version_of IN ({marks}) AND {BUFFER_VERSION} AND NOT n.pruned "
                    "ORDER BY n.version_number", *chunk):
                out.setdefault(node.version_of, []).append(node)
        return out

    def has_versions(self, node_id: str) -> bool:
        """Whether ``node_id`` has versions (``edit``'s, or a buffer's commits)."""
        return self.sql("SELECT 1 FROM node WHERE version_of = ? LIMIT 1",
                        (node_id,)).fetchone() is not None

    def set_flags(self, node: Node, actor: Participant | None = None, **flags: bool) -> None:
        with self.db.atomic():
            Node.update(**flags).where(Node.id == node.id).execute()
            self.log_change(node.tree_id, "node.flags", node.id, actor.id if actor else None, flags)
        for k, v in flags.items():
            setattr(node, k, v)

    def set_summary(self, node: Node, summary: str, source: str) -> None:
        with self.db.atomic():
            Node.update(summary=summary, summary_source=source).where(
                Node.id == node.id).execute()
            self.log_change(node.tree_id, "node.summary", node.id, None, {"source": source})
        node.summary, node.summary_source = summary, source
