"""The loom workspace over the store: trees, nodes and hyperedges, and the façade every
caller uses for the rest, whose sections are repositories of their own — participants
(:mod:`loom.store.participants`), editor sessions and buffer states
(:mod:`loom.store.sessions`), positions and branch locks (:mod:`loom.store.positions`), the
summary queue (:mod:`loom.store.summary_queue`), documents and links
(:mod:`loom.store.documents`), the preference log (:mod:`loom.store.preferences`),
provenance (:mod:`loom.store.provenance`) and the purge of deleted content
(:mod:`loom.store.purge`). Workspace builds them over its database, hands each the clock
and the change log, and delegates to them under the names callers have always used; whole
trees' rows, for the importers and exporters, are :attr:`Workspace.bulk`
(:mod:`loom.store.bulk`). Nothing outside ``store/`` queries the database itself
(``tests/unit/test_architecture.py``).

Every mutation happens in one transaction together with its change-log row, so a process
killed mid-write leaves either all of it or none of it, and other processes can catch up by
reading the log. The same code runs on SQLite and PostgreSQL: SQL here uses ``?``
placeholders and :mod:`loom.store.dialect` for what differs; raw SQL goes through
:meth:`Workspace.sql`.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loom.errors import CrossTree, LoomError, not_found
from loom.model import permissions as perms
from loom.model.ids import MIN_PREFIX, local_id_candidates, new_ulid, normalise_local_id
from loom.model.marks import UNDO_WINDOW_S
from loom.render.text import extractive_summary, plural
from loom.store import fulltext, roles
from loom.store.backend import executemany, insert_rows
from loom.store.bulk import Bulk
from loom.store.db import checkpoint_later
from loom.store.dialect import dialect_of
from loom.store.documents import Documents
from loom.store.feed import ChangeCursor, ChangeListener, listen
from loom.store.orm import pw
from loom.store.participants import HUMAN, SUBJECT, Participants
from loom.store.positions import Positions
from loom.store.preferences import Event as PreferenceEvent
from loom.store.preferences import Preferences
from loom.store.provenance import Provenance
from loom.store.purge import Purge, Purged
from loom.store.repository import Clock, Repository
from loom.store.schema import (
    BufferState,
    Change,
    Document,
    Edge,
    EdgeSource,
    Generation,
    Link,
    Node,
    Participant,
    Position,
    SummaryJob,
    Tree,
)
from loom.store.sessions import Sessions
from loom.store.summary_queue import TREE_SUMMARY_EVERY, SummaryQueue

_VERSION_REF = re.compile(r"^\[?([0-9a-zA-Z]+)(\'+)\]?$")
_NODE_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}", re.IGNORECASE)  # a ULID
_ANN_REF = re.compile(r"^\[?ann-(\d+)\]?$", re.IGNORECASE)


def content_hash(parent_hash: str, content: str) -> str:
    return hashlib.sha256(f"{parent_hash}\n{content}".encode()).hexdigest()


_NODE_COLUMNS = tuple(f.column_name for f in Node._meta.sorted_fields)
_NodeTuple = collections.namedtuple("_NodeTuple", _NODE_COLUMNS)  # type: ignore[misc]
_NODE_FIELDS = tuple(Node._meta.sorted_fields)
_NODE_INSERT = (f"INSERT INTO node ({', '.join(_NODE_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in _NODE_COLUMNS)})")
_PAYLOAD = Change._meta.fields["payload"]


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


# A buffer-mode version (SQL over ``node n LEFT JOIN edge e ON e.target = n.id``): it takes
# its original's place on a path (edge kind ``version``; a version of the root has no edge).
# A buffer-mode version: on a version edge, or (a version of the root: no edge at all) in a
# buffer tree. A dialogue tree's edited root is no version but another opening (SPEC-NOTES
# 5: a dialogue edit makes a branch; before: it was drawn, counted and marked as one).
_BUFFER_VERSION = ("(n.version_of IS NOT NULL AND (e.kind = 'version' OR (e.kind IS NULL "
                   "AND EXISTS (SELECT 1 FROM tree bt WHERE bt.id = n.tree_id "
                   "AND bt.mode = 'buffer'))))")
BUFFER_VERSION = _BUFFER_VERSION  # (for the reader's queries: n the node, e its edge)
# What ``→ tree`` counts as a node: not an annotation, not a buffer version, not archived.
_COUNTED = f"n.kind != 'annotation' AND NOT {_BUFFER_VERSION} AND NOT n.pruned"


@dataclass(frozen=True)
class TreeCounts:
    """A tree's counts as every output shows them (:meth:`Workspace.tree_counts`)."""

    nodes: int
    branches: int
    leaves: int
    annotations: int = 0
    versions: int = 0
    archived: int = 0

    def apart(self) -> str:
        """What the tree holds besides its nodes: ``3 annotations, 1 version``, or ""."""
        return ", ".join(plural(n, one, many) for n, one, many in (
            (self.annotations, "annotation", "annotations"),
            (self.versions, "version", "versions"), (self.archived, "archived", "archived"))
            if n)


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


def _chunks(items: list[str], size: int = 900) -> list[list[str]]:
    """SQLite takes at most 999 parameters a statement."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class Workspace:
    """All reads and writes of the loom workspace (trees and nodes itself, the rest through
    its repositories). One per process per database."""

    def __init__(self, db: pw.Database, clock: Any = time.time) -> None:
        self.db = db
        self.dialect = dialect_of(db)
        self._participants = Participants(db, clock, self.log_change)
        self._sessions = Sessions(db, clock)
        self._positions = Positions(db, clock, self.log_change, self.lock_tree, self.node,
                                    self.descend)
        self._summary_queue = SummaryQueue(db, clock, self.log_change)
        self._documents = Documents(db, clock, self.log_change,
                                    self._summary_queue.enqueue_summary)
        self._preferences = Preferences(db, clock)
        self._purge = Purge(db, clock, self.log_change, self.lock_tree)
        self._provenance = Provenance(db, clock)
        #: whole trees' rows, read and written at once (the importers' and exporters' door)
        self.bulk = Bulk(db, clock)
        self._repositories: tuple[Repository, ...] = (
            self._participants, self._sessions, self._positions, self._summary_queue,
            self._documents, self._preferences, self._purge, self._provenance, self.bulk)
        self.clock = clock

    @property
    def location(self) -> str:
        """Where the database is: an SQLite file's path or a PostgreSQL URL (what another
        process opens it by)."""
        return str(self.db.database)

    @property
    def clock(self) -> Clock:
        """The time every write records (tests and benches replace it)."""
        return self._clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self._clock = clock
        for repository in self._repositories:
            repository.clock = clock

    # ── raw SQL, on either backend ────────────────────────────────────────────
    def sql(self, query: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement written with ``?`` placeholders (and
        :mod:`loom.store.dialect` fragments); returns the cursor."""
        return self.db.execute_sql(query, tuple(params))

    def sql_many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """One ``?``-placeholder statement run for every row (bulk inserts)."""
        executemany(self.db, query, rows)

    def insert_rows(self, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Bulk inserts of values the columns take as they are (imports)."""
        insert_rows(self.db, table, columns, rows)

    def checkpoint_later(self) -> contextlib.AbstractContextManager[None]:
        """Around a bulk write's transaction: its commit returns without copying the log
        into the database file; a thread does that afterwards (SQLite)."""
        return checkpoint_later(self.db)

    def nodes_indexed_after(self, trees: Sequence[str]) -> contextlib.AbstractContextManager[None]:
        """Inside a write transaction: the nodes the block inserts into ``trees`` (new
        trees) are queued for the full-text index at its end, in one statement, and the
        next search indexes them (bulk imports)."""
        return fulltext.deferred(self.db, trees)

    def lock_tree(self, tree_id: str) -> None:
        """Inside a write transaction: writers of this tree go one at a time until it
        commits, across processes and machines (localIds, sibling order, annotation and
        version numbers, branch locks). SQLite's write transaction already excludes every
        other writer; PostgreSQL locks the tree's row."""
        if self.dialect.postgres:
            self.sql("SELECT 1 FROM tree WHERE id = ? FOR UPDATE", (tree_id,))

    # ── change log ────────────────────────────────────────────────────────────
    def log_change(self, tree: str | None, kind: str, entity: str, actor: str | None,
             payload: dict[str, Any] | None = None) -> None:
        self.db.execute_sql(
            "INSERT INTO change (tree, kind, entity, actor, payload, created) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (tree, kind, entity, actor, _PAYLOAD.db_value(payload), self.clock()))

    def last_change(self) -> int:
        row = self.sql("SELECT max(seq) FROM change").fetchone()
        return int(row[0] or 0)

    def follow(self, start: int | None = None, tree: str | None = None) -> ChangeCursor:
        """A cursor over the change log from ``start`` (default: now) that misses nothing
        committed out of order by parallel writers (PostgreSQL)."""
        return ChangeCursor(self, start, tree)

    def answers(self) -> bool:
        """Whether the database answers a statement now (on this thread's connection)."""
        try:
            self.db.execute_sql("SELECT 1")
            return True
        except Exception:
            return False

    def listen(self, wake: Callable[[], None],
               lost: Callable[[], None] | None = None) -> ChangeListener | None:
        """On PostgreSQL, call ``wake`` (from another thread) whenever any process commits
        a change, and ``lost`` when the listening connection is lost (``wake`` follows
        its return); None on SQLite, whose readers poll :meth:`last_change`."""
        return listen(self.db, wake, lost)

    def changes_since(self, seq: int, tree: str | None = None) -> list[Change]:
        q = Change.select().where(Change.seq > seq)
        if tree is not None:
            q = q.where(Change.tree == tree)
        return list(q.order_by(Change.seq))

    # ── participants (store/participants.py) ──────────────────────────────────
    def participant(self, name: str) -> Participant:
        return self._participants.participant(name)

    def ensure_participant(self, name: str, kind: str, role: str,
                           permissions: Iterable[str], loom_aware: bool = False,
                           profile: str | None = None) -> Participant:
        return self._participants.ensure_participant(name, kind, role, permissions,
                                                     loom_aware, profile)

    def find_participant(self, name: str) -> Participant | None:
        """The participant called ``name``, or None."""
        return self._participants.find_participant(name)

    def participant_by_id(self, participant_id: str) -> Participant | None:
        return self._participants.participant_by_id(participant_id)

    def may_write_as(self, participant: Participant) -> bool:
        """Whether this connection may write rows in ``participant``'s name: on a team's
        database with roles, its own participant's or a model's without a login role of
        its own (``roles.may_write_as``); elsewhere anyone's."""
        return roles.may_write_as(self.db, participant.id)

    def participants(self, kind: str | None = None, role: str | None = None
                     ) -> list[Participant]:
        """Every participant (of a ``kind``, in a ``role``), in order of arrival."""
        return self._participants.participants(kind, role)

    def participant_names(self) -> dict[str, str]:
        """Participant id → name, for many metadata lines at once."""
        return self._participants.participant_names()

    def participant_name(self, participant_id: str) -> str:
        return self._participants.participant_name(participant_id)

    def update_participant(self, participant: Participant, **fields: Any) -> None:
        """Change a participant's profile, role or loom-awareness (permissions:
        :meth:`set_permissions`)."""
        self._participants.update_participant(participant, **fields)

    def owner(self) -> str | None:
        """On PostgreSQL, the database's owner role; None on SQLite."""
        return self._participants.owner()

    def human(self, name: str = HUMAN) -> Participant:
        """A human participant (only ``HUMAN`` and the database's owner are born with
        every permission)."""
        return self._participants.human(name)

    def subject(self, name: str = SUBJECT) -> Participant:
        return self._participants.subject(name)

    def set_permissions(self, participant: Participant, permissions: Iterable[str]) -> None:
        self._participants.set_permissions(participant, permissions)

    # ── trees ─────────────────────────────────────────────────────────────────
    def create_tree(self, title: str, mode: str = "buffer", *, description: str = "",
                    system_context: str = "", root_content: str = "",
                    author: Participant | None = None) -> Tree:
        if mode not in ("buffer", "dialogue"):
            raise LoomError("INVALID_SYNTAX", f'mode must be buffer or dialogue, not "{mode}"')
        author = author or self.human()
        now = self.clock()
        with self.db.atomic():
            tree = Tree.create(id=new_ulid(), title=title, description=description, mode=mode,
                               system_context=system_context, created=now, updated=now)
            root = self._insert_node(tree, None, root_content, author, "root", now)
            Tree.update(root=root.id).where(Tree.id == tree.id).execute()
            tree.root = root.id
            self.log_change(tree.id, "tree.create", tree.id, author.id,
                            {"title": title, "mode": mode})
        return tree

    def tree(self, tree_id: str) -> Tree:
        t = Tree.get_or_none(Tree.id == tree_id)
        if t is None:
            raise not_found(f"tree {tree_id} does not exist")
        return t

    def find_tree(self, ref: str) -> Tree:
        """A tree by id, exact title, case-insensitive title, or unique id prefix."""
        ref = ref.strip().strip('"“”')
        t = Tree.get_or_none(Tree.id == ref.upper())
        if t is not None:
            return t
        by_title = list(Tree.select().where(Tree.title == ref))
        if len(by_title) == 1:
            return by_title[0]
        if not by_title:
            by_title = list(Tree.select().where(pw.fn.lower(Tree.title) == ref.lower()))
            if len(by_title) == 1:
                return by_title[0]
        candidates = by_title
        if not candidates and ref:
            # a unique start of a title ("the house" for "The House at the End of the Lane")
            # (in Python: a LIKE with its own placeholder broke on PostgreSQL, and a
            # workspace's titles are few)
            start = ref.lower()
            by_prefix = [t for t in Tree.select().where(Tree.archived == False)  # noqa: E712
                         .order_by(Tree.created) if t.title.lower().startswith(start)][:10]
            if len(by_prefix) == 1:
                return by_prefix[0]
            candidates = by_prefix
        if not candidates and len(ref) >= 4:
            up = ref.upper()
            candidates = list(Tree.select().where((Tree.id >= up) & (Tree.id < up + "~"))
                              .limit(10))
            if len(candidates) == 1:
                return candidates[0]
        if candidates:
            listed = ", ".join(f'{t.id[:10]}… "{t.title}"' for t in candidates[:5])
            raise not_found(f'tree "{ref}" is ambiguous: {listed}',
                            "type more of the title, or use more characters of the id")
        raise not_found(f'tree "{ref}" does not exist', "list trees with: loom trees")

    def trees(self, include_archived: bool = False) -> list[tuple[Tree, int]]:
        """Every tree with its node count (:meth:`tree_counts`' definition), oldest first."""
        q = Tree.select().order_by(Tree.created)
        if not include_archived:
            q = q.where(Tree.archived == False)  # noqa: E712
        counts = dict(self.db.execute_sql(
            "SELECT n.tree_id, count(*) FROM node n LEFT JOIN edge e ON e.target = n.id "
            f"WHERE {_COUNTED} GROUP BY n.tree_id").fetchall())
        return [(t, counts.get(t.id, 0)) for t in q]

    def tree_counts(self, tree: Tree) -> TreeCounts:
        """The one definition of a tree's counts, for every output that shows them.

        *Nodes* are the root and its continuations: what ``→ tree`` draws. Annotations,
        buffer-mode versions (a version takes its original's place, it is not another
        node) and archived (pruned) nodes are counted apart. A *branch* is a branch point:
        a node (with its versions, which share its continuations) that has more than one
        continuation; a *leaf* is a node with none."""
        row = self.db.execute_sql(
            "SELECT count(*), "  # count(CASE …): a boolean sum is SQLite's alone
            "count(CASE WHEN n.kind = 'annotation' THEN 1 END), "
            f"count(CASE WHEN n.kind != 'annotation' AND {_BUFFER_VERSION} THEN 1 END), "
            f"count(CASE WHEN n.kind != 'annotation' AND NOT {_BUFFER_VERSION} "
            "AND n.pruned THEN 1 END) "
            "FROM node n LEFT JOIN edge e ON e.target = n.id WHERE n.tree_id = ?",
            (tree.id,)).fetchone()
        records, annotations, versions, archived = (int(x or 0) for x in row)
        nodes = records - annotations - versions - archived
        # Per source node: (branch points, nodes with continuations), unpruned children only.
        # Looking each node up costs 3x the query, so only a tree with archived nodes does.
        kids = ("FROM edge_source s JOIN edge ce ON ce.target = s.target "
                "AND ce.kind = 'continuation'")
        unpruned = ""
        if archived:
            kids += " JOIN node c ON c.id = s.target AND NOT c.pruned"
            unpruned = " JOIN node n ON n.id = s.node AND NOT n.pruned"
        branches, parents = self.db.execute_sql(
            f"SELECT count(CASE WHEN k > 1 THEN 1 END), count(*) FROM (SELECT count(*) AS k "
            f"{kids}{unpruned} WHERE ce.tree_id = ? GROUP BY s.node) AS per_node",
            (tree.id,)).fetchone()
        if versions:
            # a version shares its original's continuations: count each family once
            members: dict[str, str] = {}
            for vid, fam in self.db.execute_sql(
                    "SELECT n.id, n.version_of FROM node n LEFT JOIN edge e ON e.target = n.id "
                    f"WHERE n.tree_id = ? AND n.kind != 'annotation' AND {_BUFFER_VERSION} "
                    "AND NOT n.pruned", (tree.id,)).fetchall():
                members[vid] = members[fam] = fam
            own: dict[str, set[str]] = {}
            for chunk in _chunks(list(members)):
                marks = ",".join("?" * len(chunk))
                for src, child in self.db.execute_sql(
                        f"SELECT s.node, s.target {kids} WHERE s.node IN ({marks})", chunk):
                    own.setdefault(src, set()).add(child)
            union: dict[str, set[str]] = {}
            for src, children in own.items():
                branches -= len(children) > 1
                parents -= 1
                union.setdefault(members[src], set()).update(children)
            branches += sum(len(children) > 1 for children in union.values())
            parents += len(union)
        return TreeCounts(nodes, branches, max(0, nodes - parents), annotations, versions,
                          archived)

    def update_tree(self, tree: Tree, actor: Participant | None = None, **fields: Any) -> None:
        fields["updated"] = self.clock()
        with self.db.atomic():
            Tree.update(**fields).where(Tree.id == tree.id).execute()
            self.log_change(tree.id, "tree.update", tree.id, actor.id if actor else None,
                            {k: v for k, v in fields.items() if k != "updated"})
        for k, v in fields.items():
            setattr(tree, k, v)

    def touch(self, tree: Tree) -> None:
        """The tree was changed now (what ``tree summary`` calls its last activity)."""
        self.db.execute_sql("UPDATE tree SET updated = ? WHERE id = ?", (self.clock(), tree.id))

    def last_active(self, tree: Tree) -> float:
        """When the tree was last changed, by anyone, as stored now (a ``Tree`` read
        earlier, such as the one a batch of commands shares, may be older)."""
        row = self.sql("SELECT updated FROM tree WHERE id = ?", (tree.id,)).fetchone()
        return float(row[0]) if row else tree.updated

    def node_count(self, tree: Tree) -> int:
        """Every stored node record of the tree, annotations and versions included (what an
        importer wrote); what users are shown is :meth:`tree_counts`."""
        return Node.select().where(Node.tree == tree.id).count()

    # ── nodes ─────────────────────────────────────────────────────────────────
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
            self.sql_many(
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
                self._summary_queue.enqueue_summary("node", node.id, tree.id)
                if count >= self.TREE_SUMMARY_EVERY:
                    self._summary_queue.enqueue_summary("tree", tree.id, tree.id, priority=6)
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
            self._summary_queue.enqueue_summary("node", node.id, tree.id)
            self.touch(tree)
            self.log_change(tree.id, "node.version", node.id, author.id,
                            {"edited_from": original.id, "mode": tree.mode})
            if buffer:
                self.forget_family(author, tree, family)
                self._version_takes_place(tree, original, node)
        return Node.get_by_id(node.id)

    def _version_takes_place(self, tree: Tree, original: Node, version: Node) -> None:
        """A buffer-mode version takes its original's place on every path that ended on
        it or stood on it (before: a collaborator's fix of the node at the end of the
        human's path was a version no view of that path showed — ``loom tree``, the
        Markdown export, ``view branch:… as:prose`` all walked to the original). Paths
        through it already show the newest version; one that names the original itself,
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
                self._summary_queue.enqueue_summary("node", half.id, tree.id)
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
                self._summary_queue.enqueue_summary("node", node.id, tree.id)
            Tree.update(updated=self.clock()).where(Tree.id == tree.id).execute()
            self.log_change(tree.id, "node.split", original.id, actor.id,
                            {"head": head.id, "tail": tail.id, "at": at, "moved": True})
        return Node.get_by_id(head.id), Node.get_by_id(tail.id)

    def node(self, node_id: str) -> Node:
        n = Node.get_or_none(Node.id == node_id)
        if n is None:
            raise not_found(f"node {node_id} does not exist")
        return n

    def tree_or_none(self, tree_id: str) -> Tree | None:
        return Tree.get_or_none(Tree.id == tree_id)

    def find_node(self, node_id: str) -> Node | None:
        """The node with this id, or None (a change log may name a node since deleted)."""
        return Node.get_or_none(Node.id == node_id)

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

    def nodes_by_prefix(self, tree: Tree, prefix: str, limit: int) -> list[Node]:
        """Nodes of a tree whose localId starts with ``prefix``, in localId order."""
        return list(Node.select().where((Node.tree == tree.id) & (Node.local_id >= prefix) &
                                        (Node.local_id < prefix + "~"))
                    .order_by(Node.local_id).limit(limit))

    def node_family_rows(self, node_ids: list[str]
                         ) -> dict[str, tuple[str | None, str | None, str]]:
        """``id → (parent, version_of, kind)`` for many nodes, in chunked queries."""
        out: dict[str, tuple[str | None, str | None, str]] = {}
        for chunk in _chunks(node_ids):
            marks = ",".join("?" * len(chunk))
            for nid, parent, version_of, kind in self.sql(
                    f"SELECT id, parent, version_of, kind FROM node WHERE id IN ({marks})",
                    chunk):
                out[nid] = (parent, version_of, kind)
        return out

    def continuation_ids(self, parents: list[str]) -> dict[str, list[str]]:
        """``parent → [child ids]``: the unpruned continuations of many nodes, in sibling
        order."""
        kids: dict[str, list[str]] = {}
        for chunk in _chunks(parents):
            marks = ",".join("?" * len(chunk))
            for parent, child in self.sql(
                    "SELECT s.node, s.target FROM edge_source s JOIN edge e ON "
                    "e.target = s.target JOIN node n ON n.id = s.target WHERE s.node IN ("
                    + marks + ") AND e.kind = 'continuation' AND NOT n.pruned "
                    "ORDER BY s.node, e.sibling_order, s.target", chunk):
                kids.setdefault(parent, []).append(child)
        return kids

    def model_originals(self, ids: list[str]) -> dict[str, str]:
        """For versions among ``ids`` whose original a model wrote: id → the original."""
        out: dict[str, str] = {}
        for chunk in _chunks(ids):
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
        for chunk in _chunks(ids):
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

    def _child_count_any(self, node_id: str, kind: str) -> int:
        return self.sql(
            "SELECT count(*) FROM edge_source s JOIN edge e ON e.target = s.target "
            "WHERE s.node = ? AND e.kind = ?", (node_id, kind)).fetchone()[0]

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

    def nodes_by_id(self, ids: Sequence[str]) -> list[Node]:
        """The nodes with these ids, in this order (those that exist): one query."""
        if not ids:
            return []
        found = {n.id: n for n in Node.select().where(Node.id.in_(list(ids)))}
        return [found[i] for i in ids if i in found]

    def other_openings(self, tree: Tree) -> list[Node]:
        """A dialogue tree's edited roots: each another opening of the conversation, with
        replies of its own (the original's stay where they were: SPEC-NOTES 5). A buffer
        tree's edited root is a version in the root's place, not another opening."""
        if tree.mode != "dialogue" or not tree.root:
            return []
        return list(Node.select().where((Node.tree == tree.id) & (Node.version_of == tree.root)
                                        & (Node.depth == 0) & (Node.pruned == False))  # noqa: E712
                    .order_by(Node.version_number))

    def siblings(self, node: Node) -> int:
        """Other children of the node's parent (SPEC-NOTES decision 4)."""
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
        for chunk in _chunks(ids):
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
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            members: dict[str, list[tuple[int, str, str]]] = {}
            for fam, vid, label, number in self.db.execute_sql(
                    "SELECT n.version_of, n.id, n.label, n.version_number FROM node n "
                    f"LEFT JOIN edge e ON e.target = n.id WHERE n.version_of IN ({marks}) "
                    f"AND {_BUFFER_VERSION} AND NOT n.pruned", chunk):
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

    # ── provenance: how a model made a node (store/provenance.py) ─────────────
    def generations(self, node_ids: Sequence[str]) -> list[Generation]:
        """The provenance records of these nodes (model, parameters, usage)."""
        return self._provenance.generations(node_ids)

    def request_batch(self, node: Node) -> tuple[Generation | None, list[str]]:
        """A model node's provenance record and the ids of every node made by the same
        request (``continue n:3`` makes three), in completion order; ``(None, [])`` for a
        node no model generated."""
        return self._provenance.request_batch(node)

    def request_sizes(self, parent_id: str) -> dict[str, int]:
        """For every child of ``parent_id`` a model generated: node id → how many nodes
        its request made (what :meth:`request_batch` counts), in one query for them all."""
        return self._provenance.request_sizes(parent_id)

    def save_raw_response(self, body: str) -> str:
        """Keep a request's raw response (in the caller's transaction); its id."""
        return self._provenance.save_raw_response(body)

    def record_generation(self, node_id: str, **fields: Any) -> None:
        """How a model made ``node_id`` (``provider``, ``model``, ``params``, ``usage``,
        ``latency_ms``, ``completion_index``, ``raw``, ``created``: :class:`Generation`'s
        columns), in the caller's transaction."""
        self._provenance.record(node_id, **fields)

    def copy_generation(self, generation: Generation, node_id: str, created: float,
                        **params: Any) -> None:
        """``generation``'s record for another node (a split half, an alternative the
        model weighed), with ``params`` added to its parameters."""
        self._provenance.copy(generation, node_id, created, **params)

    def all_or_nothing(self) -> contextlib.AbstractContextManager[Any]:
        """A block whose writes commit together or not at all (one transaction; nested,
        a savepoint): a handler's several writes that make one change."""
        return self.db.atomic()

    # ── the summary queue (SPEC-NOTES decision 11; store/summary_queue.py) ─────
    TREE_SUMMARY_EVERY = TREE_SUMMARY_EVERY

    @property
    def SUMMARY_QUEUE_LIMIT(self) -> int:
        """Jobs the queue holds before it takes only urgent work: a constant once, a
        property now so that a test lowering it on one workspace lowers its queue's."""
        return self._summary_queue.limit

    @SUMMARY_QUEUE_LIMIT.setter
    def SUMMARY_QUEUE_LIMIT(self, limit: int) -> None:
        self._summary_queue.limit = limit

    def enqueue_summary(self, kind: str, entity: str, tree: str | None,
                        priority: int = 5) -> bool:
        """Queue summary work; bounded: past the limit only urgent (lazy) work is taken."""
        return self._summary_queue.enqueue_summary(kind, entity, tree, priority)

    def claim_summary_job(self, lease_s: float) -> SummaryJob | None:
        """Lease the most urgent due summary job to this worker for ``lease_s`` seconds
        (other processes' workers skip it meanwhile; a dead worker's comes back after)."""
        return self._summary_queue.claim_summary_job(lease_s)

    def release_summary_job(self, job_id: int) -> None:
        """Give a leased job back at once (the worker could not run it: no model)."""
        self._summary_queue.release_summary_job(job_id)

    def queued_summaries(self) -> int:
        """Summary jobs waiting in the queue."""
        return self._summary_queue.queued_summaries()

    def next_summary_job(self) -> SummaryJob | None:
        """The most urgent job that is due now, without leasing it."""
        return self._summary_queue.next_summary_job()

    def retry_summary_job(self, job_id: int, attempts: int, not_before: float) -> None:
        """Keep a job that failed ``attempts`` times for another try at ``not_before``."""
        self._summary_queue.retry_summary_job(job_id, attempts, not_before)

    def drop_summary_job(self, job_id: int) -> None:
        """Take a job off the queue: done, given up on, or its subject has gone."""
        self._summary_queue.drop_summary_job(job_id)

    def set_tree_summary(self, tree: Tree, summary: str, source: str,
                         themes: list[str] | None = None) -> None:
        self._summary_queue.set_tree_summary(tree, summary, source, themes)

    def set_document_summary(self, doc: Document, summary: str, source: str) -> None:
        self._summary_queue.set_document_summary(doc, summary, source)

    # ── positions and branch turn locks (store/positions.py) ───────────────────
    def position(self, participant: Participant, tree: Tree) -> tuple[Node, Node]:
        """The participant's (node, tip); a newcomer starts at the end of the first path."""
        return self._positions.position(participant, tree)

    def set_position(self, participant: Participant, tree: Tree, node: Node,
                     tip: Node | None = None) -> None:
        self._positions.set_position(participant, tree, node, tip)

    def enter_tree(self, participant: Participant, tree: Tree) -> None:
        self._positions.enter_tree(participant, tree)

    def model_choice(self, participant: Participant, tree: Tree) -> str | None:
        """The model profile the participant picked for the tree, if any."""
        return self._positions.model_choice(participant, tree)

    def choose_model(self, participant: Participant, tree: Tree, profile: str | None,
                     preset: str | None = None, *, keep_preset: bool = True) -> None:
        self._positions.choose_model(participant, tree, profile, preset,
                                     keep_preset=keep_preset)

    def preset_choice(self, participant: Participant, tree: Tree) -> str | None:
        """The sampler preset the participant picked for the tree, if any."""
        return self._positions.preset_choice(participant, tree)

    # ── the preference log (store/preferences.py) ─────────────────────────────
    def record_preference(self, participant: Participant, tree: Tree, kind: str,
                          **fields: Any) -> int:
        """Append a preference event (``parent``, ``node``, ``shown``, ``chosen``,
        ``rejected``, ``detail``: :meth:`Preferences.record`); its id."""
        return self._preferences.record(participant.id, tree.id, kind, **fields)

    def preference_events(self, trees: Iterable[str] | None = None,
                          participant: str | None = None,
                          kinds: Iterable[str] | None = None) -> list[PreferenceEvent]:
        """The recorded events (of trees, a participant id, kinds), oldest first."""
        return self._preferences.events(trees, participant, kinds)

    def chosen_among(self, participant: Participant, parents: Sequence[str]) -> set[str]:
        """The branch points among ``parents`` whose children the participant has chosen
        between."""
        return self._preferences.chosen_among(participant.id, parents)

    def path_choices(self, participant: Participant, tree: Tree) -> tuple[str, ...]:
        """The version-family members ``participant`` chose to see on their paths."""
        return self._positions.path_choices(participant, tree)

    def version_members(self, ids: Sequence[str]) -> dict[str, list[Node]]:
        """For those of ``ids`` that have buffer-mode versions still shown (not pruned):
        the versions, oldest first (what a sibling picker lists beside the original)."""
        out: dict[str, list[Node]] = {}
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for node in Node.raw(
                    f"SELECT n.* FROM node n LEFT JOIN edge e ON e.target = n.id WHERE "
                    f"n.version_of IN ({marks}) AND {_BUFFER_VERSION} AND NOT n.pruned "
                    "ORDER BY n.version_number", *chunk):
                out.setdefault(node.version_of, []).append(node)
        return out

    def forget_family(self, participant: Participant, tree: Tree, family: str) -> None:
        """``participant``'s paths show ``family``'s newest version again."""
        self._positions.forget_family(participant, tree, family)

    def has_versions(self, node_id: str) -> bool:
        """Whether ``node_id`` has versions (``edit``'s, or a buffer's commits)."""
        return self.sql("SELECT 1 FROM node WHERE version_of = ? LIMIT 1",
                        (node_id,)).fetchone() is not None

    def choose_member(self, participant: Participant, tree: Tree, node: Node) -> None:
        """``participant``'s paths show ``node`` in place of its family's other members."""
        self._positions.choose_member(participant, tree, node)

    def has_position(self, participant: Participant, tree: Tree) -> bool:
        """Whether ``participant`` has been placed in ``tree`` (else :meth:`position` gives
        a newcomer's default)."""
        return self._positions.has_position(participant, tree)

    def latest_position(self, tree: Tree, kind: str = "human") -> tuple[Node, Node] | None:
        """(node, tip) of whichever participant of ``kind`` moved in ``tree`` most recently."""
        return self._positions.latest_position(tree, kind)

    def active_elsewhere(self, tree: Tree, exclude: Participant,
                         within_s: float = 900.0) -> list[tuple[Participant, Node]]:
        """Other participants with a recent position in this tree (for visibility lines)."""
        return self._positions.active_elsewhere(tree, exclude, within_s)

    def acquire_turn(self, node: Node, participant: Participant, ttl_s: float = 120.0) -> None:
        """Take the turn lock on ``node``'s branch for ``ttl_s`` seconds (SPEC-NOTES
        decision 10); ``CONFLICT`` when another participant holds it."""
        self._positions.acquire_turn(node, participant, ttl_s)

    def release_turn(self, node: Node, participant: Participant) -> None:
        self._positions.release_turn(node, participant)

    def foreign_locks(self, tree_id: str, participant: Participant) -> list[tuple[str, str]]:
        """Live turn locks of other participants in a tree: ``(node id, holder name)``."""
        return self._positions.foreign_locks(tree_id, participant)

    def reap_dead_locks(self, tree_id: str | None = None) -> int:
        """Free the branch locks of processes that have died (``lock.release`` for each)."""
        return self._positions.reap_dead_locks(tree_id)

    def guarded_write(self, tree_id: str, participant: Participant,
                      checks: Iterable[tuple[Node, bool]]
                      ) -> contextlib.AbstractContextManager[None]:
        """A write transaction on a tree that first checks each ``(node, extends)`` against
        the branch locks (:meth:`check_branch`) with the tree's writers held off."""
        return self._positions.guarded_write(tree_id, participant, checks)

    def check_branch(self, node: Node, participant: Participant, *, extends: bool) -> None:
        """Refuse a write on a branch another participant is generating on with a
        retryable ``CONFLICT`` (SPEC-NOTES decision 10)."""
        self._positions.check_branch(node, participant, extends=extends)

    # ── editor sessions and their uncommitted text (store/sessions.py) ─────────
    def open_session(self, participant: Participant) -> str:
        """Register a running editor session (a language server) and return its id."""
        return self._sessions.open_session(participant)

    def heartbeat(self, session: str) -> None:
        self._sessions.heartbeat(session)

    def close_session(self, session: str) -> None:
        self._sessions.close_session(session)

    def session_alive(self, session: str) -> bool:
        return self._sessions.session_alive(session)

    def buffer_states(self, uri: str, participant: Participant) -> list[BufferState]:
        """Every session's uncommitted work on a buffer, newest first."""
        return self._sessions.buffer_states(uri, participant)

    def save_buffer_state(self, uri: str, participant: Participant, session: str, *,
                          tree: str, tip: str, pending: list[dict[str, str]],
                          working: str) -> None:
        self._sessions.save_buffer_state(uri, participant, session, tree=tree, tip=tip,
                                         pending=pending, working=working)

    def drop_buffer_state(self, uri: str, participant: Participant, session: str) -> None:
        self._sessions.drop_buffer_state(uri, participant, session)

    def recent_buffers(self, tree_id: str, since: float,
                       exclude: str | None = None) -> list[BufferState]:
        """Buffers in ``tree_id`` saved at or after ``since``, except ``exclude``'s (a
        participant id): who may be typing there now."""
        return self._sessions.recent_buffers(tree_id, since, exclude)

    # ── links and documents (store/documents.py) ──────────────────────────────
    def add_link(self, tree: Tree, source: Node, author: Participant, *, target_kind: str,
                 target_node: Node | None = None, target_tree: Tree | None = None,
                 target_doc: Document | None = None, section: str | None = None,
                 note: str | None = None) -> Link:
        with self.db.atomic():
            self.touch(tree)
            return self._documents.add_link(
                tree, source, author, target_kind=target_kind, target_node=target_node,
                target_tree=target_tree, target_doc=target_doc, section=section, note=note)

    def links(self, node: Node) -> list[Link]:
        return self._documents.links(node)

    def document(self, name: str) -> Document:
        """A document by name (exact, then any case) or id; else NOT_FOUND with the
        nearest name as a hint."""
        return self._documents.document(name)

    def find_document(self, doc_id: str) -> Document | None:
        """The document with this id, or None (a queued job may name one since deleted)."""
        return self._documents.find_document(doc_id)

    def documents(self) -> list[Document]:
        return self._documents.documents()

    def create_document(self, name: str, content: str = "",
                        actor: Participant | None = None) -> Document:
        return self._documents.create_document(name, content, actor)

    def save_document(self, doc: Document, content: str, actor: Participant | None = None,
                      expected_updated: float | None = None) -> None:
        self._documents.save_document(doc, content, actor, expected_updated)

    # ── purging what was deleted (store/purge.py) ─────────────────────────────
    def purge_expired(self, window_s: float = UNDO_WINDOW_S) -> Purged:
        """Delete for good what was soft-deleted more than ``window_s`` ago (subtrees and
        trees, with what is theirs alone), in one transaction."""
        return self._purge.expired(window_s)

    def purge_refusal(self) -> str | None:
        """None when this process may purge; else why not (PostgreSQL: only the
        database's owner purges)."""
        return self._purge.refusal()

    # ── bulk (importers, benchmarks) ──────────────────────────────────────────
    def any_exists(self, model: type[pw.Model], column: pw.Field, values: Sequence[str]
                   ) -> bool:
        """Whether any of ``values`` is stored in ``model.column``: one prepared query per
        900 values (an importer checks a file's 100,000 ids before keeping them)."""
        sql = f'SELECT 1 FROM "{model._meta.table_name}" WHERE "{column.column_name}" IN ('
        for chunk in _chunks([v for v in values if v]):
            if self.sql(sql + ",".join("?" * len(chunk)) + ") LIMIT 1",
                                   chunk).fetchone() is not None:
                return True
        return False

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
