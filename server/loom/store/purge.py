"""Purging for good what was soft-deleted longer ago than the undo window
(``marks.UNDO_WINDOW_S``, 30 days): a deleted subtree's nodes, and a deleted (archived)
tree with everything in it, together with what belongs only to them — edges and their
sources, links, annotations, provenance (generations, and raw responses no other
generation shares), token data, summary jobs, turn locks, pins, preference events about
them, media no other node shows, and their full-text rows (SQLite's FTS5 index drops a
node's row when the node goes; PostgreSQL's index is over the node table itself).

What stays: a node below a deleted root that another, live node continues too (a buffer
version shares its original's continuations) is live, and so is everything below it; a
node a live one names as its original (``version_of``, ``edited_from``, a split's
``split_from``) keeps its row, though what only it continues goes. Positions on purged
nodes move to the deleted root's parent; buffers whose path ended in them are dropped.

One transaction holds the whole purge, with each tree's writers held off
(``Workspace.lock_tree``) and the deletion marks read again under that lock, so an
``undelete`` or a write committed just before is seen, and one just after finds the
nodes gone (``Workspace`` refuses to add below a node that no longer exists).

Who purges: on SQLite, any process (one person's file). On PostgreSQL, only a process
connected as the database's owner (or a superuser): a writer's or reader's role never
deletes (docs/team.md), and the deletion times a writer's role writes are the server's
own (``roles.py``), so a writer cannot date a deletion back into the purge."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from loom.model import marks
from loom.render.text import plural
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository

log = logging.getLogger(__name__)

#: How often a long-running process purges (the language server, beside its summaries).
EVERY_S = 24 * 3600.0


@dataclass
class Purged:
    """What one purge removed: subtrees and trees, and rows per table."""

    subtrees: int = 0
    trees: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    moved: int = 0  # positions moved off purged nodes

    @property
    def nodes(self) -> int:
        return self.rows["node"]

    def __bool__(self) -> bool:
        return bool(self.subtrees or self.trees)

    def line(self) -> str:
        """``purged 4 nodes (1 deleted subtree) and 1 deleted tree; …`` for the log and
        ``loom purge``."""
        if not self:
            return "nothing to purge"
        head = f"purged {plural(self.nodes, 'node')}"
        parts = [plural(n, what) for n, what in ((self.subtrees, "deleted subtree"),
                                                 (self.trees, "deleted tree")) if n]
        rest = ", ".join(f"{table} {n}" for table, n in sorted(self.rows.items())
                         if table != "node" and n)
        moved = f"; {plural(self.moved, 'position')} moved" if self.moved else ""
        return f"{head} ({' and '.join(parts)})" + (f"; rows: {rest}" if rest else "") + moved


class Purge(Repository):
    """The purge (``Workspace.purge_expired``) and who may run it (``refusal``)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange,
                 lock_tree: Callable[[str], None]) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.lock_tree = lock_tree

    def refusal(self) -> str | None:
        """None when this process may purge; else why not (PostgreSQL: not the owner)."""
        if not self.dialect.postgres:
            return None
        owner, me, superuser = self.sql(
            "SELECT pg_get_userbyid(d.datdba), current_user, r.rolsuper FROM pg_database d, "
            "pg_roles r WHERE d.datname = current_database() AND r.rolname = current_user"
        ).fetchone()
        if owner == me or superuser:
            return None
        return (f"only the database's owner ({owner}) purges deleted content; this process "
                f"connects as {me}")

    # ── what is due ───────────────────────────────────────────────────────────
    def _due_subtrees(self, cutoff: float) -> list[tuple[str, str]]:
        """``(tree, node)`` of every deleted subtree root whose mark is older than
        ``cutoff``, oldest first."""
        due = []
        for nid, tree_id, extra in self.sql(
                "SELECT id, tree_id, extra FROM node WHERE pruned AND extra IS NOT NULL"):
            mark = marks.deleted_of(extra)
            at = _seconds(mark.get("at")) if mark else None
            if at is not None and at < cutoff:
                due.append((at, tree_id, nid))
        return [(tree_id, nid) for _at, tree_id, nid in sorted(due)]

    def _due_trees(self, cutoff: float) -> list[str]:
        return [r[0] for r in self.sql(
            "SELECT id FROM tree WHERE archived AND updated < ? ORDER BY updated, id",
            (cutoff,))]

    # ── the purge ─────────────────────────────────────────────────────────────
    def expired(self, window_s: float = marks.UNDO_WINDOW_S) -> Purged:
        """Delete for good what was soft-deleted more than ``window_s`` ago, in one
        transaction; a deletion exactly ``window_s`` old can still be undone."""
        cutoff = self.clock() - window_s
        out = Purged()
        if not self._due_subtrees(cutoff) and not self._due_trees(cutoff):
            return out  # (no write transaction: nothing waits on a purge with nothing due)
        with self.db.atomic():
            first = {t for t, _n in self._due_subtrees(cutoff)} | set(self._due_trees(cutoff))
            for tree_id in sorted(first):  # (in one order: two purgers never deadlock)
                self.lock_tree(tree_id)
            # read again under the locks: an undelete committed meanwhile keeps its nodes
            trees = [t for t in self._due_trees(cutoff) if t in first]
            for tree_id in trees:
                self._purge_tree(tree_id, out)
            for tree_id, root in self._due_subtrees(cutoff):
                if tree_id in first and tree_id not in trees:
                    self._purge_subtree(tree_id, root, out)
        if out:
            log.info("purge: %s", out.line())
        return out

    def _purge_tree(self, tree_id: str, out: Purged) -> None:
        title = self.sql("SELECT title FROM tree WHERE id = ?", (tree_id,)).fetchone()[0]
        ids = [r[0] for r in self.sql("SELECT id FROM node WHERE tree_id = ?", (tree_id,))]
        self._drop_nodes(ids, out)
        for table, where in (
                ("position", "tree = ?"), ("buffer_state", "tree = ?"), ("pin", "tree = ?"),
                ("stash", "tree = ?"), ("trace_entry", "tree = ?"),
                ("model_choice", "tree = ?"), ("preference_event", "tree = ?"),
                ("agent_turn", "tree = ?"), ("summary_job", "tree = ? OR entity = ?"),
                ("link", "tree_id = ? OR target_tree = ?"), ("edge", "tree_id = ?")):
            self._delete(out, table, where, (tree_id,) * where.count("?"))
        self.sql("UPDATE participant SET current_tree = NULL WHERE current_tree = ?",
                 (tree_id,))
        self._delete(out, "tree", "id = ?", (tree_id,))
        out.trees += 1
        self.log_change(tree_id, "tree.purge", tree_id, None,
                        {"title": title, "nodes": len(ids)})

    def _purge_subtree(self, tree_id: str, root: str, out: Purged) -> None:
        going = self._going(tree_id, root)
        if not going:
            return
        ids = sorted(going)
        payload = json.dumps(ids)
        values = self.dialect.json_values()
        parent = self.sql("SELECT parent FROM node WHERE id = ?", (root,)).fetchone()[0]
        anchor = parent if parent is not None and parent not in going else None
        # where people stood: a tip below the cut comes up to their node; a node below
        # it, to the deleted root's parent (no live anchor: the newcomer's default)
        out.moved += self.sql(
            f"UPDATE position SET tip = node WHERE tree = ? AND tip IN ({values}) "
            f"AND node NOT IN ({values})", (tree_id, payload, payload)).rowcount or 0
        if anchor is not None:
            out.moved += self.sql(
                f"UPDATE position SET node = ?, tip = ? WHERE tree = ? AND node IN ({values})",
                (anchor, anchor, tree_id, payload)).rowcount or 0
        self._delete(out, "position", f"tree = ? AND node IN ({values})", (tree_id, payload))
        self._delete(out, "buffer_state", f"tree = ? AND tip IN ({values})", (tree_id, payload))
        self._drop_nodes(ids, out)
        # a live node whose parent went is continued from its remaining source
        self.sql(
            "UPDATE node SET parent = (SELECT s.node FROM edge_source s WHERE s.target = "
            "node.id ORDER BY (s.role = 'primary') DESC, s.position LIMIT 1) "
            f"WHERE tree_id = ? AND parent IN ({values})", (tree_id, payload))
        out.subtrees += 1
        self.log_change(tree_id, "node.purge", root, None, {"nodes": len(ids)})

    def _going(self, tree_id: str, root: str) -> set[str]:
        """The nodes of ``root``'s deleted subtree whose rows go (see the module's
        docstring: live ones stay, and originals a live node names keep their row)."""
        below = [r[0] for r in self.sql(
            """
            WITH RECURSIVE down(id) AS (
              SELECT id FROM node WHERE id = ?
              UNION
              SELECT s.target FROM edge_source s JOIN down ON s.node = down.id
            )
            SELECT id FROM down""", (root,))]
        if not below:
            return set()
        payload = json.dumps(below)
        values = self.dialect.json_values()
        primary: dict[str, list[str]] = {}  # target → its primary sources
        continues: dict[str, list[str]] = {}  # source → targets it is a primary source of
        for target, source in self.sql(
                f"SELECT target, node FROM edge_source WHERE role = 'primary' AND "
                f"target IN ({values})", (payload,)):
            primary.setdefault(target, []).append(source)
            continues.setdefault(source, []).append(target)
        going = set(below)
        live = [n for n in below if n != root and any(s not in going for s in primary.get(n, ()))]
        while live:  # continued by a node outside: live, and what it continues with it
            node = live.pop()
            if node in going:
                going.discard(node)
                live.extend(t for t in continues.get(node, ()) if t in going and t != root)
        named: dict[str, set[str]] = {}  # node → the originals it names
        for nid, version_of, edited_from in self.sql(
                f"SELECT id, version_of, edited_from FROM node WHERE version_of IN ({values}) "
                f"OR edited_from IN ({values})", (payload, payload)):
            named.setdefault(nid, set()).update(x for x in (version_of, edited_from) if x)
        for nid, extra in self.sql("SELECT id, extra FROM node WHERE tree_id = ? AND extra "
                                   "LIKE '%split_from%'", (tree_id,)):
            origin = marks.extra_of(extra).get("split_from")
            if isinstance(origin, str):
                named.setdefault(nid, set()).add(origin)
        kept: set[str] = set()
        changed = True
        while changed:  # an original named by a node that stays keeps its row
            changed = False
            for nid, originals in named.items():
                if nid in going and nid not in kept:
                    continue
                for origin in originals & going - kept:
                    kept.add(origin)
                    changed = True
        return going - kept

    def _drop_nodes(self, ids: list[str], out: Purged) -> None:
        """Delete these nodes and every row that is theirs alone."""
        if not ids:
            return
        payload = json.dumps(ids)
        values = self.dialect.json_values()
        raws = [r[0] for r in self.sql(
            f"SELECT DISTINCT raw FROM generation WHERE raw IS NOT NULL AND node IN ({values})",
            (payload,))]
        shas = self._media_of(payload)
        both = (payload, payload)
        for table, where, params in (
                ("generation", f"node IN ({values})", (payload,)),
                ("node_tokens", f"node IN ({values})", (payload,)),
                ("summary_job", f"kind = 'node' AND entity IN ({values})", (payload,)),
                ("branch_lock", f"node IN ({values})", (payload,)),
                ("pin", f"kind = 'node' AND ref IN ({values})", (payload,)),
                ("link", f"source IN ({values}) OR target_node IN ({values})", both),
                ("preference_event", f"node IN ({values}) OR chosen IN ({values}) OR "
                 f"parent IN ({values})", (payload,) * 3),
                ("edge_source", f"target IN ({values}) OR node IN ({values})", both),
                ("edge", f"target IN ({values})", (payload,)),
                ("node", f"id IN ({values})", (payload,))):
            self._delete(out, table, where, params)
        if raws:  # a request's other completions may still hold its raw response
            self._delete(out, "raw_response", f"id IN ({values}) AND NOT EXISTS (SELECT 1 "
                         "FROM generation g WHERE g.raw = raw_response.id)", (json.dumps(raws),))
        for sha in shas:
            if self.sql("SELECT 1 FROM node WHERE extra LIKE ? LIMIT 1",
                        (f"%{sha}%",)).fetchone() is None:
                self._delete(out, "media", "sha256 = ?", (sha,))

    def _media_of(self, payload: str) -> list[str]:
        """The media the nodes show (``extra.interchange.media``: imported images, audio)."""
        shas: set[str] = set()
        for (extra,) in self.sql(f"SELECT extra FROM node WHERE id IN "
                                 f"({self.dialect.json_values()}) AND extra LIKE '%sha%'",
                                 (payload,)):
            media = (marks.extra_of(extra).get("interchange") or {}).get("media") or {}
            if isinstance(media, dict):
                shas.update(m["sha"] for m in media.values()
                            if isinstance(m, dict) and isinstance(m.get("sha"), str))
        return sorted(shas)

    def _delete(self, out: Purged, table: str, where: str, params: Iterable[Any]) -> None:
        out.rows[table] += self.sql(f'DELETE FROM "{table}" WHERE {where}',
                                    tuple(params)).rowcount or 0


def _seconds(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
