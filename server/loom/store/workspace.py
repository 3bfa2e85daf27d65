"""The loom workspace: the store's one door. :class:`Workspace` builds the repositories
over its database — the change log (:mod:`loom.store.change_log`), trees
(:mod:`loom.store.trees`), nodes (:mod:`loom.store.nodes`), how nodes connect
(:mod:`loom.store.paths`), participants (:mod:`loom.store.participants`), editor sessions
and buffer states (:mod:`loom.store.sessions`), positions and branch locks
(:mod:`loom.store.positions`), the summary queue (:mod:`loom.store.summary_queue`),
documents and links (:mod:`loom.store.documents`), the preference log
(:mod:`loom.store.preferences`), provenance (:mod:`loom.store.provenance`) and the purge of
deleted content (:mod:`loom.store.purge`) — hands each the clock, the change log and the
other pieces it needs, and delegates to them under the names callers use, one line each;
whole trees' rows, for the importers and exporters, are :attr:`Workspace.bulk`
(:mod:`loom.store.bulk`). What it does itself: raw SQL, the tree's write lock, and the
writes that span repositories. Nothing outside ``store/`` queries the database itself
(``tests/unit/test_architecture.py``).

Every mutation happens in one transaction together with its change-log row, so a process
killed mid-write leaves either all of it or none of it, and other processes can catch up by
reading the log. The same code runs on SQLite and PostgreSQL: SQL here uses ``?``
placeholders and :mod:`loom.store.dialect` for what differs; raw SQL goes through
:meth:`Workspace.sql`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from loom.model.marks import UNDO_WINDOW_S
from loom.store import fulltext, roles
from loom.store.backend import executemany, insert_rows
from loom.store.bulk import Bulk
from loom.store.change_log import ChangeLog
from loom.store.db import checkpoint_later
from loom.store.dialect import dialect_of
from loom.store.documents import Documents
from loom.store.feed import ChangeCursor, ChangeListener, listen
from loom.store.nodes import BUFFER_VERSION, NewNode, Nodes, content_hash
from loom.store.orm import pw
from loom.store.participants import HUMAN, SUBJECT, Participants
from loom.store.paths import NodeRow, Paths
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
    Generation,
    Link,
    Node,
    Participant,
    SummaryJob,
    Tree,
)
from loom.store.sessions import Sessions
from loom.store.summary_queue import SummaryQueue
from loom.store.trees import TreeCounts, Trees

# What callers import from here, with Workspace itself.
__all__ = ["BUFFER_VERSION", "HUMAN", "SUBJECT", "NewNode", "NodeRow", "TreeCounts",
           "Workspace", "content_hash"]

class Workspace:
    """All reads and writes of the loom workspace, through its repositories. One per
    process per database."""

    def __init__(self, db: pw.Database, clock: Any = time.time) -> None:
        self.db = db
        self.dialect = dialect_of(db)
        self._change_log = ChangeLog(db, clock)
        log_change = self._change_log.log_change
        self._participants = Participants(db, clock, log_change)
        self._sessions = Sessions(db, clock)
        self._summary_queue = SummaryQueue(db, clock, log_change)
        # (bound methods of the façade where two repositories need each other)
        self._nodes = Nodes(db, clock, log_change, self.lock_tree,
                            self._summary_queue.enqueue_summary, self.touch,
                            self.forget_family, self._participants.ensure_participant)
        self._trees = Trees(db, clock, log_change, self._nodes.insert_root,
                            self._participants.human)
        self._paths = Paths(db, clock)
        self._positions = Positions(db, clock, log_change, self.lock_tree,
                                    self._nodes.node, self._paths.descend)
        self._documents = Documents(db, clock, log_change,
                                    self._summary_queue.enqueue_summary)
        self._preferences = Preferences(db, clock)
        self._purge = Purge(db, clock, log_change, self.lock_tree)
        self._provenance = Provenance(db, clock)
        #: whole trees' rows, read and written at once (the importers' and exporters' door)
        self.bulk = Bulk(db, clock)
        self._repositories: tuple[Repository, ...] = (
            self._change_log, self._participants, self._sessions, self._summary_queue,
            self._nodes, self._trees, self._paths, self._positions, self._documents,
            self._preferences, self._purge, self._provenance, self.bulk)
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

    def all_or_nothing(self) -> contextlib.AbstractContextManager[Any]:
        """A block whose writes commit together or not at all (one transaction; nested,
        a savepoint): a handler's several writes that make one change."""
        return self.db.atomic()

    def lock_tree(self, tree_id: str) -> None:
        """Inside a write transaction: writers of this tree go one at a time until it
        commits, across processes and machines (localIds, sibling order, annotation and
        version numbers, branch locks). SQLite's write transaction already excludes every
        other writer; PostgreSQL locks the tree's row."""
        if self.dialect.postgres:
            self.sql("SELECT 1 FROM tree WHERE id = ? FOR UPDATE", (tree_id,))

    # ── the change log (store/change_log.py) ──────────────────────────────────
    def log_change(self, tree: str | None, kind: str, entity: str, actor: str | None,
                   payload: dict[str, Any] | None = None) -> None:
        self._change_log.log_change(tree, kind, entity, actor, payload)

    def last_change(self) -> int:
        return self._change_log.last_change()

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
        return self._change_log.changes_since(seq, tree)

    # ── writes that span repositories ─────────────────────────────────────────
    def add_link(self, tree: Tree, source: Node, author: Participant, *, target_kind: str,
                 target_node: Node | None = None, target_tree: Tree | None = None,
                 target_doc: Document | None = None, section: str | None = None,
                 note: str | None = None) -> Link:
        with self.db.atomic():
            self.touch(tree)
            return self._documents.add_link(
                tree, source, author, target_kind=target_kind, target_node=target_node,
                target_tree=target_tree, target_doc=target_doc, section=section, note=note)

    def may_write_as(self, participant: Participant) -> bool:
        """Whether this connection may write rows in ``participant``'s name: on a team's
        database with roles, its own participant's or a model's without a login role of
        its own (``roles.may_write_as``); elsewhere anyone's."""
        return roles.may_write_as(self.db, participant.id)

    # ── trees (store/trees.py) ────────────────────────────────────────────────
    def create_tree(self, title: str, mode: str = "buffer", *, description: str = "",
                    system_context: str = "", root_content: str = "",
                    author: Participant | None = None) -> Tree:
        return self._trees.create_tree(title, mode, description=description,
                                       system_context=system_context, root_content=root_content,
                                       author=author)

    def tree(self, tree_id: str) -> Tree:
        return self._trees.tree(tree_id)

    def tree_or_none(self, tree_id: str) -> Tree | None:
        return self._trees.tree_or_none(tree_id)

    def find_tree(self, ref: str) -> Tree:
        return self._trees.find_tree(ref)

    def trees(self, include_archived: bool = False) -> list[tuple[Tree, int]]:
        return self._trees.trees(include_archived)

    def tree_counts(self, tree: Tree) -> TreeCounts:
        return self._trees.tree_counts(tree)

    def update_tree(self, tree: Tree, actor: Participant | None = None, **fields: Any) -> None:
        self._trees.update_tree(tree, actor, **fields)

    def touch(self, tree: Tree) -> None:
        self._trees.touch(tree)

    def last_active(self, tree: Tree) -> float:
        return self._trees.last_active(tree)

    def node_count(self, tree: Tree) -> int:
        return self._trees.node_count(tree)

    def other_openings(self, tree: Tree) -> list[Node]:
        return self._trees.other_openings(tree)

    # ── nodes (store/nodes.py) ────────────────────────────────────────────────
    def add_node(self, tree: Tree, parent: Node, content: str, author: Participant, *,
                 kind: str = "continuation", role: str = "primary",
                 extra_sources: Sequence[tuple[Node, str]] = (),
                 summary: str | None = None, summary_source: str | None = None) -> Node:
        return self._nodes.add_node(tree, parent, content, author, kind=kind, role=role,
                                    extra_sources=extra_sources, summary=summary,
                                    summary_source=summary_source)

    def add_version(self, tree: Tree, original: Node, content: str,
                    author: Participant) -> Node:
        return self._nodes.add_version(tree, original, content, author)

    def split_node(self, tree: Tree, node: Node, at: int,
                   actor: Participant) -> tuple[Node, Node]:
        return self._nodes.split_node(tree, node, at, actor)

    def split_unbuilt(self, head: Node, tail: Node, actor: Participant) -> str | None:
        return self._nodes.split_unbuilt(head, tail, actor)

    def move_split(self, tree: Tree, head: Node, tail: Node, at: int,
                   actor: Participant) -> tuple[Node, Node]:
        return self._nodes.move_split(tree, head, tail, at, actor)

    def bulk_add(self, tree: Tree, root: Node, specs: Sequence[NewNode],
                 chunk: int = 2000) -> dict[str, Node]:
        return self._nodes.bulk_add(tree, root, specs, chunk)

    def node(self, node_id: str) -> Node:
        return self._nodes.node(node_id)

    def find_node(self, node_id: str) -> Node | None:
        return self._nodes.find_node(node_id)

    def nodes_by_id(self, ids: Sequence[str]) -> list[Node]:
        return self._nodes.nodes_by_id(ids)

    def nodes_by_prefix(self, tree: Tree, prefix: str, limit: int) -> list[Node]:
        return self._nodes.nodes_by_prefix(tree, prefix, limit)

    def resolve(self, tree: Tree, ref: str) -> Node:
        return self._nodes.resolve(tree, ref)

    def node_family_rows(self, node_ids: list[str]
                         ) -> dict[str, tuple[str | None, str | None, str]]:
        return self._nodes.node_family_rows(node_ids)

    def model_originals(self, ids: list[str]) -> dict[str, str]:
        return self._nodes.model_originals(ids)

    def filled_spans(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        return self._nodes.filled_spans(ids)

    def version_members(self, ids: Sequence[str]) -> dict[str, list[Node]]:
        return self._nodes.version_members(ids)

    def has_versions(self, node_id: str) -> bool:
        return self._nodes.has_versions(node_id)

    def set_flags(self, node: Node, actor: Participant | None = None, **flags: bool) -> None:
        self._nodes.set_flags(node, actor, **flags)

    def set_summary(self, node: Node, summary: str, source: str) -> None:
        self._nodes.set_summary(node, summary, source)

    # ── children, paths and walks (store/paths.py) ────────────────────────────
    def children(self, node: Node | NodeRow, kind: str = "continuation",
                 include_pruned: bool = False) -> list[Node]:
        return self._paths.children(node, kind, include_pruned)

    def count_children(self, node_id: str, kind: str = "continuation") -> int:
        return self._paths.count_children(node_id, kind)

    def continuation_ids(self, parents: list[str]) -> dict[str, list[str]]:
        return self._paths.continuation_ids(parents)

    def count_links(self, node_id: str) -> int:
        return self._paths.count_links(node_id)

    def connection_counts(self, ids: Sequence[str]
                          ) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        return self._paths.connection_counts(ids)

    def sibling_count(self, node: Node) -> int:
        return self._paths.sibling_count(node)

    def path(self, tip: Node | NodeRow, prefer: Iterable[str] = (),
             limit: int = 100_000) -> list[NodeRow]:
        return self._paths.path(tip, prefer, limit)

    def single_source_path(self, tip: Node | NodeRow) -> list[NodeRow] | None:
        return self._paths.single_source_path(tip)

    def path_step(self, node_id: str) -> tuple[NodeRow | None, list[str]]:
        return self._paths.path_step(node_id)

    def continuation_map(self, node_id: str, depth: int, per_node: int | None = None,
                         prefer: Iterable[str] = ()) -> dict[str, list[tuple[str, str]]]:
        return self._paths.continuation_map(node_id, depth, per_node, prefer)

    def shown_members(self, ids: Sequence[str], prefer: set[str] | frozenset[str] = frozenset()
                      ) -> dict[str, tuple[str, str]]:
        return self._paths.shown_members(ids, prefer)

    def descend(self, node: Node, limit: int = 100_000) -> Node:
        return self._paths.descend(node, limit)

    # ── participants (store/participants.py) ──────────────────────────────────
    def participant(self, name: str) -> Participant:
        return self._participants.participant(name)

    def ensure_participant(self, name: str, kind: str, role: str,
                           permissions: Iterable[str], loom_aware: bool = False,
                           profile: str | None = None) -> Participant:
        return self._participants.ensure_participant(name, kind, role, permissions,
                                                     loom_aware, profile)

    def find_participant(self, name: str) -> Participant | None:
        return self._participants.find_participant(name)

    def participant_by_id(self, participant_id: str) -> Participant | None:
        return self._participants.participant_by_id(participant_id)

    def participants(self, kind: str | None = None, role: str | None = None
                     ) -> list[Participant]:
        return self._participants.participants(kind, role)

    def participant_names(self) -> dict[str, str]:
        return self._participants.participant_names()

    def participant_name(self, participant_id: str) -> str:
        return self._participants.participant_name(participant_id)

    def update_participant(self, participant: Participant, **fields: Any) -> None:
        self._participants.update_participant(participant, **fields)

    def owner(self) -> str | None:
        return self._participants.owner()

    def human(self, name: str = HUMAN) -> Participant:
        return self._participants.human(name)

    def subject(self, name: str = SUBJECT) -> Participant:
        return self._participants.subject(name)

    def set_permissions(self, participant: Participant, permissions: Iterable[str]) -> None:
        self._participants.set_permissions(participant, permissions)

    # ── positions, path choices and branch turn locks (store/positions.py) ────
    def position(self, participant: Participant, tree: Tree) -> tuple[Node, Node]:
        return self._positions.position(participant, tree)

    def set_position(self, participant: Participant, tree: Tree, node: Node,
                     tip: Node | None = None) -> None:
        self._positions.set_position(participant, tree, node, tip)

    def enter_tree(self, participant: Participant, tree: Tree) -> None:
        self._positions.enter_tree(participant, tree)

    def has_position(self, participant: Participant, tree: Tree) -> bool:
        return self._positions.has_position(participant, tree)

    def latest_position(self, tree: Tree, kind: str = "human") -> tuple[Node, Node] | None:
        return self._positions.latest_position(tree, kind)

    def active_elsewhere(self, tree: Tree, exclude: Participant,
                         within_s: float = 900.0) -> list[tuple[Participant, Node]]:
        return self._positions.active_elsewhere(tree, exclude, within_s)

    def model_choice(self, participant: Participant, tree: Tree) -> str | None:
        return self._positions.model_choice(participant, tree)

    def choose_model(self, participant: Participant, tree: Tree, profile: str | None,
                     preset: str | None = None, *, keep_preset: bool = True) -> None:
        self._positions.choose_model(participant, tree, profile, preset,
                                     keep_preset=keep_preset)

    def preset_choice(self, participant: Participant, tree: Tree) -> str | None:
        return self._positions.preset_choice(participant, tree)

    def path_choices(self, participant: Participant, tree: Tree) -> tuple[str, ...]:
        return self._positions.path_choices(participant, tree)

    def forget_family(self, participant: Participant, tree: Tree, family: str) -> None:
        self._positions.forget_family(participant, tree, family)

    def choose_member(self, participant: Participant, tree: Tree, node: Node) -> None:
        self._positions.choose_member(participant, tree, node)

    def acquire_turn(self, node: Node, participant: Participant, ttl_s: float = 120.0) -> None:
        self._positions.acquire_turn(node, participant, ttl_s)

    def release_turn(self, node: Node, participant: Participant) -> None:
        self._positions.release_turn(node, participant)

    def foreign_locks(self, tree_id: str, participant: Participant) -> list[tuple[str, str]]:
        return self._positions.foreign_locks(tree_id, participant)

    def reap_dead_locks(self, tree_id: str | None = None) -> int:
        return self._positions.reap_dead_locks(tree_id)

    def guarded_write(self, tree_id: str, participant: Participant,
                      checks: Iterable[tuple[Node, bool]]
                      ) -> contextlib.AbstractContextManager[None]:
        return self._positions.guarded_write(tree_id, participant, checks)

    def check_branch(self, node: Node, participant: Participant, *, extends: bool) -> None:
        self._positions.check_branch(node, participant, extends=extends)

    # ── editor sessions and their uncommitted text (store/sessions.py) ────────
    def open_session(self, participant: Participant) -> str:
        return self._sessions.open_session(participant)

    def heartbeat(self, session: str) -> None:
        self._sessions.heartbeat(session)

    def close_session(self, session: str) -> None:
        self._sessions.close_session(session)

    def session_alive(self, session: str) -> bool:
        return self._sessions.session_alive(session)

    def buffer_states(self, uri: str, participant: Participant) -> list[BufferState]:
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
        return self._sessions.recent_buffers(tree_id, since, exclude)

    # ── the summary queue (SPEC-NOTES decision 11; store/summary_queue.py) ────
    @property
    def summary_queue_limit(self) -> int:
        """Jobs the queue holds before it takes only urgent work (a test lowers it)."""
        return self._summary_queue.limit

    @summary_queue_limit.setter
    def summary_queue_limit(self, limit: int) -> None:
        self._summary_queue.limit = limit

    def enqueue_summary(self, kind: str, entity: str, tree: str | None,
                        priority: int = 5) -> bool:
        return self._summary_queue.enqueue_summary(kind, entity, tree, priority)

    def claim_summary_job(self, lease_s: float) -> SummaryJob | None:
        return self._summary_queue.claim_summary_job(lease_s)

    def release_summary_job(self, job_id: int) -> None:
        self._summary_queue.release_summary_job(job_id)

    def queued_summaries(self) -> int:
        return self._summary_queue.queued_summaries()

    def next_summary_job(self) -> SummaryJob | None:
        return self._summary_queue.next_summary_job()

    def retry_summary_job(self, job_id: int, attempts: int, not_before: float) -> None:
        self._summary_queue.retry_summary_job(job_id, attempts, not_before)

    def drop_summary_job(self, job_id: int) -> None:
        self._summary_queue.drop_summary_job(job_id)

    def set_tree_summary(self, tree: Tree, summary: str, source: str,
                         themes: list[str] | None = None) -> None:
        self._summary_queue.set_tree_summary(tree, summary, source, themes)

    def set_document_summary(self, doc: Document, summary: str, source: str) -> None:
        self._summary_queue.set_document_summary(doc, summary, source)

    # ── links and documents (store/documents.py) ──────────────────────────────
    def links(self, node: Node) -> list[Link]:
        return self._documents.links(node)

    def document(self, name: str) -> Document:
        return self._documents.document(name)

    def find_document(self, doc_id: str) -> Document | None:
        return self._documents.find_document(doc_id)

    def documents(self) -> list[Document]:
        return self._documents.documents()

    def create_document(self, name: str, content: str = "",
                        actor: Participant | None = None) -> Document:
        return self._documents.create_document(name, content, actor)

    def save_document(self, doc: Document, content: str, actor: Participant | None = None,
                      expected_updated: float | None = None) -> None:
        self._documents.save_document(doc, content, actor, expected_updated)

    # ── the preference log (store/preferences.py) ─────────────────────────────
    def record_preference(self, participant: Participant, tree: Tree, kind: str,
                          **fields: Any) -> int:
        return self._preferences.record(participant.id, tree.id, kind, **fields)

    def preference_events(self, trees: Iterable[str] | None = None,
                          participant: str | None = None,
                          kinds: Iterable[str] | None = None) -> list[PreferenceEvent]:
        return self._preferences.events(trees, participant, kinds)

    def chosen_among(self, participant: Participant, parents: Sequence[str]) -> set[str]:
        return self._preferences.chosen_among(participant.id, parents)

    # ── provenance: how a model made a node (store/provenance.py) ─────────────
    def generations(self, node_ids: Sequence[str]) -> list[Generation]:
        return self._provenance.generations(node_ids)

    def request_batch(self, node: Node) -> tuple[Generation | None, list[str]]:
        return self._provenance.request_batch(node)

    def request_sizes(self, parent_id: str) -> dict[str, int]:
        return self._provenance.request_sizes(parent_id)

    def save_raw_response(self, body: str) -> str:
        return self._provenance.save_raw_response(body)

    def record_generation(self, node_id: str, **fields: Any) -> None:
        self._provenance.record(node_id, **fields)

    def copy_generation(self, generation: Generation, node_id: str, created: float,
                        **params: Any) -> None:
        self._provenance.copy(generation, node_id, created, **params)

    # ── purging what was deleted (store/purge.py) ─────────────────────────────
    def purge_expired(self, window_s: float = UNDO_WINDOW_S) -> Purged:
        return self._purge.expired(window_s)

    def purge_refusal(self) -> str | None:
        return self._purge.refusal()

    # ── bulk (importers, benchmarks; store/bulk.py) ───────────────────────────
    def any_exists(self, model: type[pw.Model], column: pw.Field, values: Sequence[str]
                   ) -> bool:
        return self.bulk.any_exists(model, column, values)
