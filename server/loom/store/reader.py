"""The reader's side of a tree, in the store: bookmarks, tags and ratings on nodes, pruning
(hiding a subtree from views and model context), soft deletion of subtrees and trees (undone
with undelete for ``marks.UNDO_WINDOW_S``, purged after by ``store/purge.py``), renaming
trees, and full-text search over every tree (``store/fulltext.py``: FTS5 or PostgreSQL's
text search).

Each write is one IMMEDIATE transaction with its change-log row, as in ``Workspace``.
Callers are the executor's handlers (permissions, branch locks and traces are theirs) and,
for reading, the shells."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from loom.errors import LoomError, not_found
from loom.model import marks
from loom.store import fulltext
from loom.store.dialect import dialect_of
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import BUFFER_VERSION, Workspace

SEARCH_LIMIT = 50


# ── marks ─────────────────────────────────────────────────────────────────────
def _write_extra(ws: Workspace, node: Node, extra: dict[str, Any], actor: Participant,
                 what: str, **columns: Any) -> None:
    with ws.db.atomic():
        Node.update(extra=extra or None, **columns).where(Node.id == node.id).execute()
        ws.log_change(node.tree_id, "node.marks", node.id, actor.id,
                      {"what": what, **{k: v for k, v in columns.items()}})
    node.extra = extra or None
    for k, v in columns.items():
        setattr(node, k, v)


def set_bookmark(ws: Workspace, node: Node, actor: Participant, on: bool,
                 label: str | None = None) -> None:
    extra = dict(marks.extra_of(node.extra))
    if on and label:
        extra[marks.BOOKMARK_LABEL] = label
    else:
        extra.pop(marks.BOOKMARK_LABEL, None)
    _write_extra(ws, node, extra, actor, "bookmark" if on else "unbookmark", bookmarked=on)


def set_tags(ws: Workspace, node: Node, actor: Participant, add: list[str],
             remove: list[str]) -> list[str]:
    """Add and remove tags (normalised: ``#Dream`` is ``dream``); the node's tags after."""
    extra = dict(marks.extra_of(node.extra))
    tags = [t for t in marks.tags_of(extra)]
    gone = {marks.normal_tag(t) for t in remove}
    tags = [t for t in tags if marks.normal_tag(t) not in gone]
    for t in add:
        tag = marks.normal_tag(t)
        if tag and tag not in {marks.normal_tag(x) for x in tags}:
            tags.append(tag)
    if tags:
        extra[marks.TAGS] = tags
    else:
        extra.pop(marks.TAGS, None)
    _write_extra(ws, node, extra, actor, "tag")
    return tags


def set_rating(ws: Workspace, node: Node, actor: Participant, rating: int | None) -> None:
    extra = dict(marks.extra_of(node.extra))
    if rating is None or rating == 0:
        extra.pop(marks.RATING, None)
    else:
        extra[marks.RATING] = rating
    _write_extra(ws, node, extra, actor, "rate")


def set_judgement(ws: Workspace, node: Node, actor: Participant, score: int, reason: str,
                  rubric: str) -> None:
    """The exploration judge's score (0-10) and one-line reason on a node (``extra["judge"]``),
    logged as a ``node.marks`` change (``what: "judge"``) so editors redraw it."""
    extra = dict(marks.extra_of(node.extra))
    extra[marks.JUDGE] = {"score": score, "reason": reason, "rubric": rubric}
    _write_extra(ws, node, extra, actor, "judge")


def bookmarks(ws: Workspace, tree: Tree | None = None,
              include_hidden: bool = False) -> list[Node]:
    """Bookmarked nodes (of one tree, or every tree), oldest first."""
    q = Node.select().where(Node.bookmarked == True)  # noqa: E712
    if tree is not None:
        q = q.where(Node.tree == tree.id)
    if not include_hidden:
        q = q.where(Node.pruned == False)  # noqa: E712
    return list(q.order_by(Node.created, Node.id))


def tagged(ws: Workspace, tree: Tree, tag: str) -> list[Node]:
    """Nodes of a tree carrying ``tag``."""
    want = marks.normal_tag(tag)
    # the tags live in the node's JSON extra: read in Python (the two backends' JSON
    # functions differ), from the few nodes that have any extra at all
    q = Node.select().where((Node.tree == tree.id) & Node.extra.is_null(False))
    return [n for n in q.order_by(Node.created, Node.id)
            if want in {marks.normal_tag(t) for t in marks.tags_of(marks.extra_of(n.extra))}]


# ── pruning and soft deletion ────────────────────────────────────────────────
def subtree_ids(ws: Workspace, node: Node) -> list[str]:
    """The node and everything below it (continuations, versions, annotations)."""
    rows = ws.db.execute_sql(
        """
        WITH RECURSIVE down(id) AS (
          SELECT id FROM node WHERE id = ?
          UNION
          SELECT s.target FROM edge_source s JOIN down ON s.node = down.id
        )
        SELECT id FROM down""", (node.id,)).fetchall()
    return [r[0] for r in rows]


def set_pruned(ws: Workspace, node: Node, actor: Participant, on: bool) -> None:
    """Hide (or show again) a node and, through it, its subtree: views, pickers, search
    and model context leave pruned nodes out; they stay in the store."""
    if node.parent is None and node.kind == "root":
        raise LoomError("INVALID_SYNTAX", "the root cannot be pruned",
                        "prune the branches under it")
    if not on and marks.deleted_of(node.extra):
        raise LoomError("CONFLICT", f"[{node.label}] was deleted, not pruned",
                        f"→ undelete {node.local_id}")
    with ws.db.atomic():
        Node.update(pruned=on).where(Node.id == node.id).execute()
        ws.log_change(node.tree_id, "node.flags", node.id, actor.id, {"pruned": on})
    node.pruned = on


def delete_subtree(ws: Workspace, node: Node, actor: Participant) -> int:
    """Soft delete: the node is hidden (pruned) and marked deleted with the time, so
    ``undelete`` brings it back within the undo window; returns the nodes it hides."""
    if node.parent is None and node.kind == "root":
        raise LoomError("INVALID_SYNTAX", "the root cannot be deleted",
                        "delete the branches under it, or the tree")
    count = len(subtree_ids(ws, node))
    extra = dict(marks.extra_of(node.extra))
    extra[marks.DELETED] = {"at": ws.clock(), "by": actor.id, "pruned": bool(node.pruned),
                            "nodes": count}
    with ws.db.atomic():
        ws.lock_tree(node.tree_id)  # (a purge holds it while it deletes)
        Node.update(pruned=True, extra=extra).where(Node.id == node.id).execute()
        ws.log_change(node.tree_id, "node.delete", node.id, actor.id, {"nodes": count})
    node.pruned, node.extra = True, extra
    return count


def restore_subtree(ws: Workspace, node: Node, actor: Participant) -> int:
    with ws.db.atomic():
        # under the tree's lock, read fresh: a purge holds it while it deletes
        ws.lock_tree(node.tree_id)
        row = ws.sql("SELECT extra, pruned FROM node WHERE id = ?", (node.id,)).fetchone()
        if row is None:
            raise LoomError("NOT_FOUND", f"[{node.label}] was deleted more than "
                            f"{marks.UNDO_WINDOW_S // 86_400} days ago and purged",
                            "a purged node cannot be brought back")
        mark = marks.deleted_of(row[0])
        if mark is None:
            raise LoomError("NOT_FOUND", f"[{node.label}] is not deleted",
                            f"→ unprune {node.local_id} shows a pruned node again")
        extra = dict(marks.extra_of(row[0]))
        extra.pop(marks.DELETED, None)
        was_pruned = bool(mark.get("pruned"))
        Node.update(pruned=was_pruned, extra=extra or None).where(Node.id == node.id).execute()
        ws.log_change(node.tree_id, "node.restore", node.id, actor.id, {})
    node.pruned, node.extra = was_pruned, extra or None
    return int(mark.get("nodes") or 1)


def deleted(ws: Workspace, tree: Tree) -> list[Node]:
    """The subtrees deleted in a tree that can still be restored, newest first."""
    found = [(mark, n) for n in _deleted_nodes(tree)
             if (mark := marks.deleted_of(n.extra)) is not None and mark.get("at") is not None]
    return [n for _m, n in sorted(found, key=lambda mn: -float(mn[0]["at"]))]


def _deleted_nodes(tree: Tree | None = None) -> list[Node]:
    """Pruned nodes with marks (where deleted subtree roots are); the deletion mark is
    in the JSON extra, read by the callers in Python."""
    q = Node.select().where((Node.pruned == True) & Node.extra.is_null(False))  # noqa: E712
    if tree is not None:
        q = q.where(Node.tree == tree.id)
    return list(q)


# ── trees ─────────────────────────────────────────────────────────────────────
def rename_tree(ws: Workspace, tree: Tree, title: str, actor: Participant) -> str:
    title = title.strip()
    if not title:
        raise LoomError("INVALID_SYNTAX", "a tree needs a title", '→ rename "New title"')
    old = tree.title
    ws.update_tree(tree, actor, title=title)
    return old


def delete_tree(ws: Workspace, tree: Tree, actor: Participant) -> None:
    """Soft delete: the tree is archived (``loom trees --all`` lists it) until restored
    or purged after the undo window."""
    with ws.db.atomic():  # (its log row with the write it describes: docs/team.md)
        ws.update_tree(tree, actor, archived=True)
        ws.log_change(tree.id, "tree.delete", tree.id, actor.id, {"title": tree.title})


def restore_tree(ws: Workspace, tree: Tree, actor: Participant) -> None:
    with ws.db.atomic():
        ws.lock_tree(tree.id)  # a purge holds it while it deletes: read fresh under it
        row = ws.sql("SELECT archived FROM tree WHERE id = ?", (tree.id,)).fetchone()
        if row is None:
            raise LoomError("NOT_FOUND", f'tree "{tree.title}" was deleted more than '
                            f"{marks.UNDO_WINDOW_S // 86_400} days ago and purged",
                            "a purged tree cannot be brought back")
        if not row[0]:
            raise LoomError("NOT_FOUND", f'tree "{tree.title}" is not deleted')
        ws.update_tree(tree, actor, archived=False)


def find_any_tree(ws: Workspace, ref: str) -> Tree:
    """A tree by id or title, deleted (archived) ones included (for ``undelete``)."""
    try:
        return ws.find_tree(ref)
    except LoomError:
        pass
    ref = ref.strip().strip('"“”')
    rows = list(Tree.select().where((Tree.archived == True) & (  # noqa: E712
        (Tree.id == ref.upper()) | (Tree.title == ref))))
    if len(rows) == 1:
        return rows[0]
    raise not_found(f'tree "{ref}" does not exist', "list trees with: loom trees --all")


# ── search ────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Hit:
    node: Node
    tree_title: str
    snippet: str  # the matching words in context, marked «…»
    hidden: bool  # pruned (or under a deleted subtree root)


def search(ws: Workspace, text: str, tree: Tree | None = None, limit: int = SEARCH_LIMIT,
           include_hidden: bool = False) -> list[Hit]:
    """Nodes whose text matches, best first (BM25 or ts_rank), across every tree unless ``tree``;
    deleted trees never, pruned nodes only with ``include_hidden``."""
    if not fulltext.has_words(text):
        raise LoomError("INVALID_SYNTAX", "search needs a word to look for",
                        '→ search "walnut trees"')
    where = ["NOT t.archived", "n.kind != 'annotation'"]
    params: list[Any] = []
    if tree is not None:
        where.append("n.tree_id = ?")
        params.append(tree.id)
    if not include_hidden:
        where.append("NOT n.pruned")
    # room for the ones hidden under a pruned node
    rows = fulltext.matches(ws.db, text, where, params,
                            limit * 2 if not include_hidden else limit)
    under_hidden = hidden_below(ws, [r[0] for r in rows])
    if not include_hidden:
        rows = [r for r in rows if r[0] not in under_hidden][:limit]
    by_id = {n.id: n for n in Node.select().where(Node.id.in_([r[0] for r in rows]))}
    return [Hit(by_id[r[0]], r[1], " ".join(r[2].split()),
                bool(r[3]) or r[0] in under_hidden) for r in rows if r[0] in by_id]


def hidden_below(ws: Workspace, ids: list[str]) -> set[str]:
    """Which of ``ids`` sit under a pruned (or deleted) node: hidden with it."""
    if not ids:
        return set()
    rows = ws.db.execute_sql(
        """
        WITH RECURSIVE up(start, id) AS (
          SELECT n.id, n.parent FROM node n WHERE n.id IN (""" + dialect_of(ws.db).json_values()
        + """)
          UNION
          SELECT up.start, n.parent FROM node n JOIN up ON n.id = up.id
          WHERE n.parent IS NOT NULL
        )
        SELECT DISTINCT up.start FROM up JOIN node n ON n.id = up.id WHERE n.pruned
        """, (json.dumps(ids),)).fetchall()
    return {r[0] for r in rows}


def symbols(ws: Workspace, text: str, limit: int = 100) -> list[tuple[str, Tree, Node | None,
                                                                      str]]:
    """What ``workspace/symbol`` lists for ``text``: trees by title, bookmarks by label or
    text, nodes by localId prefix, then text matches. ``(kind, tree, node, name)`` with
    kind ``tree`` | ``bookmark`` | ``node`` | ``text``."""
    out: list[tuple[str, Tree, Node | None, str]] = []
    want = text.strip().lower()
    trees = {t.id: t for t, _ in ws.trees()}
    for t in trees.values():
        if not want or want in t.title.lower():
            out.append(("tree", t, None, t.title))
    for n in bookmarks(ws):
        t = trees.get(n.tree_id)
        label = marks.bookmark_label(n.extra) or ""
        if t is None:
            continue
        if not want or want in label.lower() or want in n.content.lower() or \
                n.local_id.startswith(want):
            out.append(("bookmark", t, n, f"★ {label or n.content.strip()[:60]}"))
    if len(want) >= 3 and re.fullmatch(r"[0-9a-z']+", want):
        for n in Node.select().where((Node.local_id >= want) & (Node.local_id < want + "~")
                                     & (Node.pruned == False)).limit(20):  # noqa: E712
            t = trees.get(n.tree_id)
            if t is not None:
                out.append(("node", t, n, f"[{n.label}]"))
    if want and len(out) < limit:
        try:
            hits = search(ws, text, limit=limit - len(out))
        except LoomError:
            hits = []
        seen = {n.id for _k, _t, n, _s in out if n is not None}
        for h in hits:
            t = trees.get(h.node.tree_id)
            if t is not None and h.node.id not in seen:
                out.append(("text", t, h.node, h.snippet))
    return out[:limit]


# ── the whole tree, for people ───────────────────────────────────────────────
@dataclass(frozen=True)
class OutlineRow:
    id: str
    parent: str | None  # the node it continues (None: the root)
    label: str
    text: str  # the start of its text (at most 160 characters)
    by_model: bool
    bookmarked: bool
    extra: str | None  # JSON text (bookmark label, tags)
    notes: int = 0  # annotations on it (the collaborator's notes show in the overview)
    #: The model that wrote it, where its siblings come from more than one model
    #: (``continue models:a,b``): what tells them apart.
    model: str | None = None
    #: The labels of the other members of its version family (the original and its
    #: versions not shown in its place): ``→ switch to`` one shows it instead.
    others: tuple[str, ...] = ()


def outline(ws: Workspace, tree: Tree, prefer: Iterable[str] = ()
            ) -> tuple[str, dict[str, OutlineRow], dict[str, list[str]]]:
    """Every shown node of a tree in a few queries: (root id, rows by id, children in
    sibling order). Pruned nodes and what is below them are left out, as are annotations.
    A node with buffer-mode versions is one row, under its own id, showing the member of
    its family in ``prefer`` (the viewer's path) else its newest version, as the path
    does (so the overview never shows the original a collaborator has fixed)."""
    rows: dict[str, OutlineRow] = {}
    for nid, label, text, author_type, bookmarked, extra in ws.db.execute_sql(
            "SELECT id, label, substr(content, 1, 160), author_type, bookmarked, extra "
            "FROM node WHERE tree_id = ? AND kind != 'annotation' AND NOT pruned",
            (tree.id,)).fetchall():
        rows[nid] = OutlineRow(nid, None, label, text, author_type == "model", bool(bookmarked),
                               extra)
    for nid, count in ws.db.execute_sql(
            "SELECT s.node, count(*) FROM edge_source s JOIN edge e ON e.target = s.target "
            "JOIN node n ON n.id = s.target WHERE e.tree_id = ? AND e.kind = 'annotation' "
            "AND NOT n.pruned GROUP BY s.node", (tree.id,)).fetchall():
        if nid in rows:
            rows[nid] = dataclasses.replace(rows[nid], notes=count)
    _versions_in_place(ws, tree, rows, set(prefer))
    children: dict[str, list[str]] = {}
    for parent, child in ws.db.execute_sql(
            "SELECT s.node, s.target FROM edge_source s JOIN edge e ON e.target = s.target "
            "WHERE e.tree_id = ? AND e.kind = 'continuation' AND s.role = 'primary' "
            "ORDER BY s.node, e.sibling_order, s.target", (tree.id,)).fetchall():
        if parent in rows and child in rows:
            children.setdefault(parent, []).append(child)
            rows[child] = dataclasses.replace(rows[child], parent=parent)
    _models_where_mixed(ws, tree, rows)
    return tree.root or "", rows, children


def _models_where_mixed(ws: Workspace, tree: Tree, rows: dict[str, OutlineRow]) -> None:
    """Each node's model, where its siblings come from more than one (read from the
    generation records alone: a tree no model wrote costs one empty lookup)."""
    made: dict[str, list[tuple[str, str]]] = {}
    for nid, parent, model in ws.sql(
            # CROSS JOIN: SQLite walks the generation records, not every node of the tree
            "SELECT g.node, n.parent, g.model FROM generation g CROSS JOIN node n "
            "WHERE n.id = g.node AND n.tree_id = ?", (tree.id,)).fetchall():
        made.setdefault(parent, []).append((nid, model))
    for siblings in made.values():
        if len({model for _nid, model in siblings}) > 1:
            for nid, model in siblings:
                if nid in rows:
                    rows[nid] = dataclasses.replace(rows[nid], model=model)


@dataclass
class PathOutline:
    """A tree's outline as one viewer sees it: the rows (families shown as the member on
    the viewer's path), the ids on that path (with the families of its versions, which
    the rows are keyed by) and the row of the viewer's position."""
    root: str
    rows: dict[str, OutlineRow]
    children: dict[str, list[str]]
    path: list[str]
    here: str
    also: list[str] = dataclasses.field(default_factory=list)  # other openings (dialogue)


def outline_on_path(ws: Workspace, tree: Tree, position: Node, tip: Node,
                    chosen: Iterable[str] = ()) -> PathOutline:
    """The outline as the viewer whose ``position`` and ``tip`` these are sees it, with
    the version-family members they ``chosen`` (``Workspace.path_choices``) on the path."""
    walked = ws.path(tip, prefer=(position.id, *chosen))
    root, rows, children = outline(ws, tree, prefer=[n.id for n in walked])
    path: list[str] = []
    for n in walked:  # a buffer version is drawn in its original's row; anything else in its own
        path += [n.id, *([n.version_of] if n.version_of and n.id not in rows else [])]
    here = position.id if position.id in rows else (position.version_of or position.id)
    also = [n.id for n in ws.other_openings(tree)]
    return PathOutline(root, rows, children, path, here, also)


def _versions_in_place(ws: Workspace, tree: Tree, rows: dict[str, OutlineRow],
                       prefer: set[str]) -> None:
    """Each buffer-mode family drawn as one row: the original's place, the shown member's
    label, text and marks; the versions' own rows dropped (they are not nodes of the
    drawing: → tree's note says versions are not counted)."""
    families: dict[str, list[tuple[int, str]]] = {}
    for family, vid, number in ws.db.execute_sql(
            "SELECT n.version_of, n.id, n.version_number FROM node n LEFT JOIN edge e "
            "ON e.target = n.id WHERE n.tree_id = ? AND n.version_of IS NOT NULL "
            f"AND {BUFFER_VERSION} AND n.kind != 'annotation' "
            "AND NOT n.pruned", (tree.id,)).fetchall():
        families.setdefault(family, []).append((number, vid))
    for family, versions in families.items():
        kept = [rows.pop(vid) for _n, vid in versions if vid in rows]
        if family not in rows or not kept:
            continue
        members = [rows[family], *(v for v in sorted(kept, key=lambda r: r.label))]
        if family in prefer:
            shown = rows[family]
        else:
            on_path = [v for v in kept if v.id in prefer]
            shown = on_path[0] if on_path else _newest(kept, versions)
        others = tuple(m.label for m in members if m.id != shown.id)
        rows[family] = dataclasses.replace(
            rows[family], label=shown.label, text=shown.text, by_model=shown.by_model,
            bookmarked=shown.bookmarked, extra=shown.extra, notes=shown.notes,
            others=others)


def _newest(kept: list[OutlineRow], versions: list[tuple[int, str]]) -> OutlineRow:
    by_id = {v.id: v for v in kept}
    return next(by_id[vid] for _n, vid in sorted(versions, reverse=True) if vid in by_id)
