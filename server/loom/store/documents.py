"""Documents (``doc:"name"``: notes beside the trees, each saved whole and summarised when
it changes) and links (``→ link``: from a node to a node, a tree, or a document's section).
Every write logs its change in the same transaction."""

from __future__ import annotations

from collections.abc import Callable

from loom.errors import LoomError, not_found
from loom.model.documents import check_name
from loom.model.ids import new_ulid
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository
from loom.store.schema import Document, Link, Node, Participant, Tree

#: ``SummaryQueue.enqueue_summary``: a saved document's summary is written again.
Enqueue = Callable[[str, str, str | None], bool]


class Documents(Repository):
    """Documents and links (``Workspace``'s document and link methods)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange,
                 enqueue_summary: Enqueue) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.enqueue_summary = enqueue_summary

    # ── links ─────────────────────────────────────────────────────────────────
    def add_link(self, tree: Tree, source: Node, author: Participant, *, target_kind: str,
                 target_node: Node | None = None, target_tree: Tree | None = None,
                 target_doc: Document | None = None, section: str | None = None,
                 note: str | None = None) -> Link:
        with self.db.atomic():
            link = Link.create(
                id=new_ulid(), tree=tree.id, source=source.id, target_kind=target_kind,
                target_node=target_node.id if target_node else None,
                target_tree=(target_tree.id if target_tree else
                             (target_node.tree_id if target_node else None)),
                target_doc=target_doc.id if target_doc else None, target_section=section,
                note=note, author=author.id, created=self.clock(),
            )
            self.log_change(tree.id, "link.create", link.id, author.id,
                            {"source": source.id, "target_kind": target_kind})
        return link

    def links(self, node: Node) -> list[Link]:
        return list(Link.select().where((Link.source == node.id) | (Link.target_node == node.id))
                     .order_by(Link.created))

    # ── documents ─────────────────────────────────────────────────────────────
    def document(self, name: str) -> Document:
        """A document by name (exact, then any case) or id; else NOT_FOUND with the
        nearest name as a hint."""
        name = check_name(name)
        d = Document.get_or_none(Document.name == name)
        if d is None:
            d = Document.get_or_none(pw.fn.lower(Document.name) == name.lower())
        if d is None:
            d = Document.get_or_none(Document.id == name)
        if d is None:
            names = [x.name for x in Document.select(Document.name).limit(50)]
            from rapidfuzz import process  # (only for a name not found)

            best = process.extractOne(name, names) if names else None
            hint = f'did you mean doc:"{best[0]}"?' if best and best[1] >= 70 else None
            raise not_found(f'document doc:"{name}" does not exist', hint)
        return d

    def find_document(self, doc_id: str) -> Document | None:
        """The document with this id, or None (a queued job may name one since deleted)."""
        return Document.get_or_none(Document.id == doc_id)

    def documents(self) -> list[Document]:
        return list(Document.select().order_by(Document.name))

    def create_document(self, name: str, content: str = "",
                        actor: Participant | None = None) -> Document:
        check_name(name)
        now = self.clock()
        with self.db.atomic():
            if Document.get_or_none(Document.name == name) is not None:
                raise LoomError("CONFLICT", f'document doc:"{name}" already exists')
            d = Document.create(id=new_ulid(), name=name, content=content, created=now,
                                updated=now)
            self.log_change(None, "document.create", d.id, actor.id if actor else None,
                            {"name": name})
        return d

    def save_document(self, doc: Document, content: str, actor: Participant | None = None,
                      expected_updated: float | None = None) -> None:
        with self.db.atomic():
            current = Document.get_by_id(doc.id)
            if expected_updated is not None and current.updated != expected_updated:
                raise LoomError("CONFLICT", f'doc:"{doc.name}" changed since you read it',
                                "read it again and retry")
            now = self.clock()
            Document.update(content=content, updated=now, summary=None,
                            summary_source=None).where(Document.id == doc.id).execute()
            self.enqueue_summary("doc", doc.id, None)
            self.log_change(None, "document.update", doc.id, actor.id if actor else None,
                            {"name": doc.name})
        doc.content, doc.updated, doc.summary = content, now, None
