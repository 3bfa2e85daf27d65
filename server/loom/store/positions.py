"""Where each participant stands in a tree (``position``: a node and the tip of the path
through it) and who holds a branch's turn lock (``branch_lock``, SPEC-NOTES decision 10):
a generation's branch is closed to other writers until it yields or its lock expires."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterable, Iterator

from loom.errors import LoomError
from loom.store.dialect import upsert
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository
from loom.store.schema import (
    BranchLock,
    EditorSession,
    ModelChoice,
    Node,
    Participant,
    Position,
    Tree,
)
from loom.store.sessions import SESSION_STALE_S, process_alive


class Positions(Repository):
    """Positions and branch turn locks (``Workspace``'s position and lock methods).

    ``lock_tree`` holds a tree's other writers off until the transaction commits; ``node``
    reads a node (not found: an error) and ``descend`` follows first continuations down to
    a leaf, where a newcomer starts."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange,
                 lock_tree: Callable[[str], None], node: Callable[[str], Node],
                 descend: Callable[[Node], Node]) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.lock_tree = lock_tree
        self.node = node
        self.descend = descend

    # ── positions ─────────────────────────────────────────────────────────────
    def position(self, participant: Participant, tree: Tree) -> tuple[Node, Node]:
        """The participant's (node, tip); a newcomer starts at the end of the first path."""
        rows = {n.id: n for n in Node.raw(
            "SELECT n.* FROM position p JOIN node n ON n.id IN (p.node, p.tip) "
            "WHERE p.participant = ? AND p.tree = ?", participant.id, tree.id)}
        if rows:
            row = self.sql("SELECT node, tip FROM position WHERE participant = ? "
                           "AND tree = ?", (participant.id, tree.id)).fetchone()
            if row is not None and row[0] in rows and row[1] in rows:
                return rows[row[0]], rows[row[1]]
        root = Node.get_by_id(tree.root)
        tip = self.descend(root)
        return tip, tip

    def _choice(self, participant: Participant, tree: Tree) -> ModelChoice | None:
        return ModelChoice.get_or_none((ModelChoice.participant == participant.id)
                                       & (ModelChoice.tree == tree.id))

    def model_choice(self, participant: Participant, tree: Tree) -> str | None:
        """The model profile the participant picked for the tree, if any."""
        row = self._choice(participant, tree)
        return (row.profile or None) if row is not None else None

    def preset_choice(self, participant: Participant, tree: Tree) -> str | None:
        """The sampler preset the participant picked for the tree, if any."""
        row = self._choice(participant, tree)
        return (row.preset or None) if row is not None else None

    def choose_model(self, participant: Participant, tree: Tree, profile: str | None,
                     preset: str | None = None, *, keep_preset: bool = True) -> None:
        """Pick the model ``continue`` asks in the tree (None: the default again) and,
        unless ``keep_preset``, the preset it continues with (None: none)."""
        with self.db.atomic():
            if keep_preset:
                preset = self.preset_choice(participant, tree)
            if profile is None and preset is None:
                ModelChoice.delete().where((ModelChoice.participant == participant.id)
                                           & (ModelChoice.tree == tree.id)).execute()
            else:
                upsert(ModelChoice, ("participant", "tree"), participant=participant.id,
                       tree=tree.id, profile=profile or "", preset=preset,
                       updated=self.clock()).execute()
            self.log_change(tree.id, "model.choice", tree.id, participant.id,
                            {"profile": profile, "preset": preset})

    def set_position(self, participant: Participant, tree: Tree, node: Node,
                     tip: Node | None = None) -> None:
        with self.db.atomic():
            upsert(Position, ("participant", "tree"), participant=participant.id,
                   tree=tree.id, node=node.id, tip=(tip or node).id,
                   updated=self.clock()).execute()
            Participant.update(current_tree=tree.id).where(
                Participant.id == participant.id).execute()
            self.log_change(tree.id, "position", node.id, participant.id,
                            {"tip": (tip or node).id})
        participant.current_tree = tree.id

    # ── which version of a node a participant's paths show ───────────────────
    def path_choices(self, participant: Participant, tree: Tree) -> tuple[str, ...]:
        """The members of version families ``participant`` chose to see on their paths
        in ``tree`` (a path walk's preferences, beside the position's node and tip)."""
        row = self.sql("SELECT chosen FROM position WHERE participant = ? AND tree = ?",
                       (participant.id, tree.id)).fetchone()
        return tuple(json.loads(row[0])) if row and row[0] else ()

    def choose_member(self, participant: Participant, tree: Tree, node: Node) -> None:
        """``participant``'s paths show ``node`` in place of the other members of its
        version family (the original and its versions), until they choose another or make
        a new version of it. Needs a position in the tree (a switch sets one first)."""
        family = node.version_of or node.id
        rows = self.sql("SELECT id, version_number, pruned FROM node WHERE id = ? OR "
                        "version_of = ?", (family, family)).fetchall()
        members = {r[0] for r in rows}
        # the member a path shows unasked (the newest version still shown): choosing it is
        # no choice to keep, so a newer version made later takes its place as for anyone
        default = max(((r[1], r[0]) for r in rows if not r[2]), default=(0, family))[1]
        kept = [c for c in self.path_choices(participant, tree) if c not in members]
        self._set_choices(participant, tree, kept if node.id == default else [*kept, node.id])

    def forget_family(self, participant: Participant, tree: Tree, family: str) -> None:
        """``participant`` made a new version of ``family``: it takes the family's place on
        their paths again (SPEC-NOTES 5), whatever member they chose before."""
        chosen = self.path_choices(participant, tree)
        if not chosen:
            return
        members = {r[0] for r in self.sql(
            "SELECT id FROM node WHERE id = ? OR version_of = ?", (family, family))}
        kept = [c for c in chosen if c not in members]
        if len(kept) != len(chosen):
            self._set_choices(participant, tree, kept)

    def _set_choices(self, participant: Participant, tree: Tree, chosen: list[str]) -> None:
        self.sql("UPDATE position SET chosen = ? WHERE participant = ? AND tree = ?",
                 (json.dumps(chosen) if chosen else None, participant.id, tree.id))

    def enter_tree(self, participant: Participant, tree: Tree) -> None:
        """Record ``tree`` as the one ``participant`` is in (its position there unchanged),
        as naming a tree to work in does (``loom mcp``'s ``tree``)."""
        if participant.current_tree == tree.id:
            return
        Participant.update(current_tree=tree.id).where(
            Participant.id == participant.id).execute()
        participant.current_tree = tree.id

    def has_position(self, participant: Participant, tree: Tree) -> bool:
        """Whether ``participant`` has been placed in ``tree`` (else :meth:`position` gives
        a newcomer's default)."""
        return self.sql("SELECT 1 FROM position WHERE participant = ? AND tree = ?",
                        (participant.id, tree.id)).fetchone() is not None

    def latest_position(self, tree: Tree, kind: str = "human") -> tuple[Node, Node] | None:
        """(node, tip) of whichever participant of ``kind`` moved in ``tree`` most recently."""
        row = self.sql(
            "SELECT p.node, p.tip FROM position p JOIN participant x ON x.id = p.participant "
            "WHERE p.tree = ? AND x.kind = ? ORDER BY p.updated DESC LIMIT 1",
            (tree.id, kind)).fetchone()
        if row is None:
            return None
        return self.node(row[0]), self.node(row[1])

    def active_elsewhere(self, tree: Tree, exclude: Participant,
                         within_s: float = 900.0) -> list[tuple[Participant, Node]]:
        """Other participants with a recent position in this tree (for visibility lines)."""
        cutoff = self.clock() - within_s
        rows = (Position.select().where((Position.tree == tree.id) &
                                        (Position.participant != exclude.id) &
                                        (Position.updated >= cutoff)))
        out = []
        for r in rows:
            p = Participant.get_or_none(Participant.id == r.participant)
            n = Node.get_or_none(Node.id == r.node)
            if p is not None and n is not None:
                out.append((p, n))
        return out

    # ── branch turn locks (SPEC-NOTES decision 10) ────────────────────────────
    def acquire_turn(self, node: Node, participant: Participant, ttl_s: float = 120.0) -> None:
        """Take the turn lock on ``node``'s branch for ``ttl_s`` seconds (a crashed holder
        blocks nobody past that). One atomic statement claims a free or expired lock (or
        renews one's own), so two processes on two machines can never both hold it."""
        now = self.clock()
        with self.db.atomic():
            self.lock_tree(node.tree_id)
            self._reap(node.tree_id, node.id)  # a dead process's lock is free at once
            won = self.sql(
                "INSERT INTO branch_lock (node, participant, expires, host, pid) "
                "VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (node) DO UPDATE SET participant = excluded.participant, "
                "expires = excluded.expires, host = excluded.host, pid = excluded.pid "
                "WHERE branch_lock.participant = excluded.participant "
                "OR branch_lock.expires <= ? RETURNING participant",
                (node.id, participant.id, now + ttl_s, socket.gethostname(), os.getpid(),
                 now)).fetchall()
            if not won:
                row = BranchLock.get_or_none(BranchLock.node == node.id)
                holder = Participant.get_or_none(Participant.id == row.participant) if row \
                    else None
                who = holder.name if holder else "another participant"
                raise LoomError("CONFLICT", f"{who} is generating on [{node.label}]",
                                "retry in a moment, or branch from another node")
            self.check_branch(node, participant, extends=True)

    def release_turn(self, node: Node, participant: Participant) -> None:
        with self.db.atomic():
            BranchLock.delete().where((BranchLock.node == node.id) &
                                      (BranchLock.participant == participant.id)).execute()
            self.log_change(node.tree_id, "lock.release", node.id, participant.id)

    def foreign_locks(self, tree_id: str, participant: Participant) -> list[tuple[str, str]]:
        """Live turn locks of other participants in a tree: ``(node id, holder name)``;
        a lock whose process has died (:meth:`_holder_alive`) is not one."""
        return [(r[0], r[1]) for r in self.sql(
            "SELECT b.node, p.name, b.host, b.pid FROM branch_lock b "
            "JOIN node n ON n.id = b.node LEFT JOIN participant p ON p.id = b.participant "
            "WHERE n.tree_id = ? AND b.expires > ? AND b.participant != ?",
            (tree_id, self.clock(), participant.id)).fetchall()
            if self._holder_alive(r[2], r[3])]

    def _holder_alive(self, host: str | None, pid: int | None) -> bool:
        """Whether the process that took a lock may still run: on this machine its pid is
        asked; on another, a session of that process (an editor's, an exploration's) that
        has gone silent says it died (SPEC-NOTES decision 10: a crashed holder blocks
        nobody). A lock of unknown process (before v15) waits for its expiry."""
        if host is None or pid is None:
            return True
        here = process_alive(host, pid)
        if here is not None:
            return here
        beats = [s.heartbeat for s in EditorSession.select(EditorSession.heartbeat).where(
            (EditorSession.host == host) & (EditorSession.pid == pid))]
        return not beats or self.clock() - max(beats) < SESSION_STALE_S

    def reap_dead_locks(self, tree_id: str | None = None) -> int:
        """Free the branch locks whose process has died (``lock.release`` logged for each,
        so an editor waiting to commit retries); how many."""
        with self.db.atomic():
            return self._reap(tree_id)

    def _reap(self, tree_id: str | None, node_id: str | None = None) -> int:
        query = ("SELECT b.node, b.participant, b.host, b.pid, n.tree_id FROM branch_lock b "
                 "JOIN node n ON n.id = b.node WHERE b.host IS NOT NULL")
        args: list[object] = []
        if tree_id is not None:
            query += " AND n.tree_id = ?"
            args.append(tree_id)
        if node_id is not None:
            query += " AND b.node = ?"
            args.append(node_id)
        dead = [r for r in self.sql(query, tuple(args)).fetchall()
                if not self._holder_alive(r[2], r[3])]
        freed = 0
        for node, holder, _host, _pid, tree in dead:
            # A team's database frees another person's lock only on evidence of its own (the
            # holder's editor silent: docs/team.md), not on this machine's word that a pid
            # is gone: a lock it keeps is left to its expiry. The release is logged by
            # nobody in particular (the holder is not this process's to act as).
            if BranchLock.delete().where((BranchLock.node == node)
                                         & (BranchLock.participant == holder)).execute():
                self.log_change(tree, "lock.release", node, None,
                                {"holder_died": True, "holder": holder})
                freed += 1
        return freed

    def _families_up(self, node_id: str) -> list[str]:
        """The version families (original ids) from a node up to the root, node first."""
        rows = self.sql(
            """
            WITH RECURSIVE up(id, fam, parent, d) AS (
              SELECT id, coalesce(version_of, id), parent, 0 FROM node WHERE id = ?
              UNION ALL
              SELECT n.id, coalesce(n.version_of, n.id), n.parent, up.d + 1
              FROM node n JOIN up ON n.id = up.parent WHERE up.d < 100000
            )
            SELECT fam FROM up ORDER BY d""", (node_id,)).fetchall()
        return [r[0] for r in rows]

    @contextlib.contextmanager
    def guarded_write(self, tree_id: str, participant: Participant,
                      checks: Iterable[tuple[Node, bool]]) -> Iterator[None]:
        """A write transaction on a tree that first checks each ``(node, extends)`` against
        the branch locks (:meth:`check_branch`) with the tree's writers held off, so no lock
        can be taken between the check and the write, on any machine."""
        with self.db.atomic():
            self.lock_tree(tree_id)
            for node, extends in checks:
                self.check_branch(node, participant, extends=extends)
            yield

    def check_branch(self, node: Node, participant: Participant, *, extends: bool) -> None:
        """Refuse a write on a branch another participant is generating on (SPEC-NOTES
        decision 10) with a retryable ``CONFLICT``.

        A lock on L covers the path root → L and everything below L. A write that *extends*
        a node N (a continuation, the buffer's typed text) conflicts when N is L or below
        it; a write that *changes* N (an edit, an annotation) also when N is above L, since
        that is the generation's context. Branches that part above L stay parallel."""
        locks = self.foreign_locks(node.tree_id, participant)
        if not locks:
            return
        mine = self._families_up(node.id)
        for lock_node, holder in locks:
            theirs = self._families_up(lock_node)
            if not theirs:
                continue
            below = theirs[0] in mine  # N is L or a descendant of L
            above = not extends and mine[0] in theirs
            if below or above:
                label = Node.get_by_id(lock_node).label
                raise LoomError(
                    "CONFLICT", f"{holder or 'another participant'} is generating on "
                    f"[{label}] (this branch)",
                    "retry when it yields; nothing was written")
