"""Trees as the store keeps them: a tree's row (title, mode, its root, when it last
changed), finding one by what a person typed, and the one definition of its counts that every
output shows (:class:`TreeCounts`). A new tree's root node is written by
:class:`loom.store.nodes.Nodes`, in the tree's own transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loom.errors import LoomError, not_found
from loom.model.ids import new_ulid
from loom.render.text import plural
from loom.store.nodes import BUFFER_VERSION
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository, chunks
from loom.store.schema import Node, Participant, Tree

# What ``→ tree`` counts as a node: not an annotation, not a buffer version, not archived.
_COUNTED = f"n.kind != 'annotation' AND NOT {BUFFER_VERSION} AND NOT n.pruned"


@dataclass(frozen=True)
class TreeCounts:
    """A tree's counts as every output shows them (:meth:`Trees.tree_counts`)."""

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


InsertRoot = Callable[[Tree, str, Participant, float], Node]


class Trees(Repository):
    """Reads and writes of ``tree`` (``Workspace``'s tree methods).

    ``insert_root`` writes a new tree's root node (``Nodes.insert_root``), ``human`` is the
    author of a tree created without one (``Participants.human``)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange,
                 insert_root: InsertRoot, human: Callable[[], Participant]) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.insert_root = insert_root
        self.human = human

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
            root = self.insert_root(tree, root_content, author, now)
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

    def tree_or_none(self, tree_id: str) -> Tree | None:
        return Tree.get_or_none(Tree.id == tree_id)

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
            # (matched in Python, not by a LIKE pattern: the same on both backends, and a
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
            f"count(CASE WHEN n.kind != 'annotation' AND {BUFFER_VERSION} THEN 1 END), "
            f"count(CASE WHEN n.kind != 'annotation' AND NOT {BUFFER_VERSION} "
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
                    f"WHERE n.tree_id = ? AND n.kind != 'annotation' AND {BUFFER_VERSION} "
                    "AND NOT n.pruned", (tree.id,)).fetchall():
                members[vid] = members[fam] = fam
            own: dict[str, set[str]] = {}
            for chunk in chunks(list(members)):
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

    def other_openings(self, tree: Tree) -> list[Node]:
        """A dialogue tree's edited roots: each another opening of the conversation, with
        replies of its own (the original's stay where they were: SPEC-NOTES 5). A buffer
        tree's edited root is a version in the root's place, not another opening."""
        if tree.mode != "dialogue" or not tree.root:
            return []
        return list(Node.select().where((Node.tree == tree.id) & (Node.version_of == tree.root)
                                        & (Node.depth == 0) & (Node.pruned == False))  # noqa: E712
                    .order_by(Node.version_number))
