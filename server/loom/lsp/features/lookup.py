"""Hover, go to definition, references and document links over node references (as
offsets, and as the LSP answers built from them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from loom.commands.grammar import term_at
from loom.commands.help import render_flag_help, render_help_tool, render_option_help
from loom.errors import LoomError
from loom.lsp.documents import OpenDoc, OpenDocuments
from loom.lsp.features import cards
from loom.lsp.features.refs import Ref, is_command_line, ref_at, refs_in_line, verb_at
from loom.lsp.positions import TextDoc
from loom.lsp.ranges import offset_of, range_of
from loom.model import marks
from loom.model import permissions as perms
from loom.store.schema import Node, Tree
from loom.uris import node_uri


@dataclass
class Span:
    start: int  # document offsets
    end: int


@dataclass
class Location:
    uri: str
    start: int  # offsets in the target document's text
    end: int
    text: str  # the target document's text (for position conversion)


def resolve_ref(docs: OpenDocuments, tree: Tree, ref: Ref) -> Node | None:
    try:
        return docs.ws.resolve(tree, ref.text)
    except LoomError:
        return None


def _line_ref(doc: OpenDoc, offset: int) -> tuple[Ref, int] | None:
    text_doc = doc.session.doc
    line_no, _ = text_doc.position_at(offset)
    start = text_doc.line_start(line_no)
    found = ref_at(text_doc.line(line_no), offset - start)
    return (found, start) if found else None


def node_card(docs: OpenDocuments, tree: Tree, node: Node) -> str:
    """The hover text of a node: its own text first, the summary second and labelled
    with where it came from, then how a model made it (``cards.node_card``)."""
    return cards.node_card(docs, node)


def hover(docs: OpenDocuments, doc: OpenDoc, offset: int) -> tuple[str, Span] | None:
    if perms.missing_for(perms.LOOM_AWARE, docs.participant.permissions):
        return None  # (a card is the tree's text: permissions.require_read)
    tree = doc.tree
    text_doc = doc.session.doc
    line_no, _ = text_doc.position_at(offset)
    line_start = text_doc.line_start(line_no)
    line = text_doc.line(line_no)
    verb = verb_at(line, offset - line_start)
    if verb:
        page = render_help_tool(verb)
        if page:
            return f"```\n{page}\n```", Span(line_start, line_start + len(line))
    term = term_at(line, offset - line_start) if is_command_line(line) else None
    if term is not None:  # an option or a flag: its help, from the catalogue
        page = (render_option_help if term.kind == "option" else render_flag_help)(
            term.verb, term.name)
        if page:
            return f"```\n{page}\n```", Span(line_start + term.start, line_start + term.end)
    if tree is not None:
        found = _line_ref(doc, offset)
        if found:
            ref, start = found
            node = resolve_ref(docs, tree, ref)
            if node is not None:
                return node_card(docs, tree, node), Span(start + ref.start, start + ref.end)
    node = docs.node_at(doc, offset)
    if node is not None and tree is not None:
        i = doc.session.segment_at(offset)
        seg = doc.session.segments[i] if i is not None else None
        span = Span(seg.start, seg.end) if seg else Span(offset, offset)
        pending = " · *edited, not yet committed*" if seg is not None and seg.dirty else ""
        return node_card(docs, tree, node) + pending, span
    return None


def location_of(docs: OpenDocuments, doc: OpenDoc | None, node: Node) -> Location:
    """Where a node is shown: in this document when it is on its path, else in the path
    view through the node."""
    if doc is not None and doc.kind == "path":
        i = doc.session.node_segment(node.id)
        if i is not None:
            seg = doc.session.segments[i]
            return Location(doc.uri, seg.start, seg.start, doc.text)
    tree = docs.ws.tree(node.tree_id)
    uri = node_uri(tree, node)
    open_doc = docs.open.get(uri)
    if open_doc is not None:
        i = open_doc.session.node_segment(node.id)
        if i is not None:
            seg = open_doc.session.segments[i]
            return Location(uri, seg.start, seg.start, open_doc.text)
    view = docs.cache.view(uri)
    for seg in view.segments:
        if seg.node == node.id:
            return Location(uri, seg.start, seg.start, view.text)
    return Location(uri, 0, 0, view.text)


def definition(docs: OpenDocuments, doc: OpenDoc, offset: int) -> Location | None:
    if doc.tree is None:
        return None
    found = _line_ref(doc, offset)
    if not found:
        return None
    node = resolve_ref(docs, doc.tree, found[0])
    if node is None:
        return None
    if node.kind == "annotation" and node.parent:
        node = docs.ws.node(node.parent)
    return location_of(docs, doc, node)


def references(docs: OpenDocuments, doc: OpenDoc, offset: int,
               include_declaration: bool = True) -> list[Location]:
    """Annotations and links that point at a node: shown where their authors' nodes are."""
    if doc.tree is None:
        return []
    found = _line_ref(doc, offset)
    node = resolve_ref(docs, doc.tree, found[0]) if found else docs.node_at(doc, offset)
    if node is None:
        return []
    out = [location_of(docs, doc, node)] if include_declaration else []
    for link in docs.ws.links(node):
        other_id = link.target_node if link.source == node.id else link.source
        other = docs.ws.find_node(other_id) if other_id else None
        if other is not None:
            out.append(location_of(docs, doc, other))
    return out


def document_links(docs: OpenDocuments, doc: OpenDoc) -> list[tuple[int, int, str]]:
    """Every resolvable reference in the text, linked to the path view of its node."""
    tree = doc.tree
    if tree is None:
        return []
    text_doc = doc.session.doc
    out = []
    cache: dict[str, Node | None] = {}
    for line_no in range(text_doc.line_count):
        line = text_doc.line(line_no)
        if "[" not in line and "→" not in line and "->" not in line and "ann-" not in line:
            continue
        base = text_doc.line_start(line_no)
        for ref in refs_in_line(line):
            if ref.text not in cache:
                cache[ref.text] = resolve_ref(docs, tree, ref)
            node = cache[ref.text]
            if node is not None:
                out.append((base + ref.start, base + ref.end, node_uri(tree, node)))
    return out


# ── as LSP answers ──
def lsp_location(loc: Location, encoding: str) -> lsp.Location:
    return lsp.Location(uri=loc.uri, range=range_of(TextDoc(loc.text, encoding), loc.start,
                                                loc.end))


def lsp_definition(docs: OpenDocuments, doc: OpenDoc, pos: lsp.Position) -> lsp.Location | None:
    """``textDocument/definition``: the node a reference names, in its path."""
    loc = definition(docs, doc, offset_of(doc, pos))
    return lsp_location(loc, docs.encoding) if loc else None


def lsp_references(docs: OpenDocuments, doc: OpenDoc, pos: lsp.Position,
                   include_declaration: bool) -> list[lsp.Location]:
    """``textDocument/references``: the node and what points at it."""
    locs = references(docs, doc, offset_of(doc, pos), include_declaration)
    return [lsp_location(loc, docs.encoding) for loc in locs]


def lsp_links(docs: OpenDocuments, doc: OpenDoc) -> list[lsp.DocumentLink]:
    """``textDocument/documentLink``: every resolvable reference."""
    return [lsp.DocumentLink(range=range_of(doc.session.doc, s, e), target=uri)
            for s, e, uri in document_links(docs, doc)]


#: Siblings and children a ``loom/nodeInfo`` or ``loom.siblings`` answer carries unless
#: asked for another page size (``limit``), and the most it carries.
PAGE = 100
MAX_PAGE = 1000


@dataclass
class Page:
    """A page of a node's siblings or children: where it starts, how many there are in
    all, and where the next page starts (None after the last)."""

    offset: int
    limit: int
    total: int

    @property
    def next(self) -> int | None:
        end = self.offset + self.limit
        return end if end < self.total else None


def page_of(total: int, offset: int | None, limit: int | None) -> Page:
    size = PAGE if limit is None else max(0, min(limit, MAX_PAGE))
    return Page(max(0, min(offset or 0, total)), size, total)


def _node_json(docs: OpenDocuments, tree: Tree, node: Node, place: tuple[int, int],
               names: dict[str, str]) -> dict[str, Any]:
    k, n = place
    return {"id": node.id, "localId": node.local_id, "label": node.label,
            "author": names.get(node.author_id) or docs.ws.participant_name(node.author_id),
            "authorType": node.author_type, "summary": node.summary or "",
            "depth": node.depth, "created": node.created, "uri": node_uri(tree, node),
            "siblingIndex": k, "siblingCount": n,
            # what people read first: the node's own text; the summary second, labelled
            "excerpt": cards.excerpt(node.content, 200),
            "summarySource": cards.summary_label(node.summary_source),
            "bookmarked": bool(node.bookmarked),
            "bookmarkLabel": marks.bookmark_label(node.extra),
            "tags": marks.tags_of(node.extra), "rating": marks.rating_of(node.extra)}


def node_at_cursor(docs: OpenDocuments, doc: OpenDoc | None, line: int | None,
                   character: int | None) -> Node | None:
    """The node under a position of an open document (read on the event loop: the
    buffer's segments change with every keystroke)."""
    if doc is None or line is None:
        return None
    return docs.node_at(doc, doc.session.doc.offset_at(line, character or 0))


def places_in(ws: Any, ids: list[str], families: dict[str, list[str]]
              ) -> dict[str, tuple[int, int]]:
    """(k, n) of each node among its parent's continuations, as
    ``decorations.sibling_positions`` counts them (a buffer-mode version stands in its
    original's place), from ``families`` (``Workspace.continuation_ids``) read once."""
    out: dict[str, tuple[int, int]] = {}
    indexes: dict[str, dict[str, int]] = {}
    for nid, (parent, version_of, kind) in ws.node_family_rows(ids).items():
        family = families.get(parent or "", []) if kind != "annotation" else []
        if parent and parent not in indexes:
            indexes[parent] = {child: i for i, child in enumerate(families.get(parent, []))}
        index = indexes.get(parent or "", {}) if kind != "annotation" else {}
        k = index.get(nid, index.get(version_of or "", 0))
        out[nid] = (k + 1, max(1, len(family)))
    return out


def node_info(docs: OpenDocuments, tree_ref: str | None, ref: str | None, doc: OpenDoc | None,
              line: int | None, character: int | None, *, at: Node | None = None,
              siblings_offset: int = 0, children_offset: int = 0,
              limit: int | None = None) -> dict[str, Any]:
    """``loom/nodeInfo``: a node (``at``, given, or at a position in an open document, else
    the participant's position) with its path, and a page of its siblings and of its
    children (``limit`` each, from ``siblings_offset`` and ``children_offset``) with their
    totals and where the next pages start. Every family on the way (the path's, the
    siblings', the children) is read in one query and each answer holds at most a page:
    the cost does not grow with the square of the siblings."""
    perms.require_read(docs.participant.permissions)
    ws = docs.ws
    tree = ws.find_tree(tree_ref) if tree_ref else (doc.tree if doc is not None else None)
    if tree is None:
        raise LoomError("NOT_FOUND", "no tree given", "pass {tree} or {uri, line, character}")
    perms.require_read(docs.participant.permissions, tree=tree.id,
                       home=docs.participant.current_tree)
    node = at
    if node is None and doc is not None and line is not None:
        node = node_at_cursor(docs, doc, line, character)
    if node is None:
        node = ws.resolve(tree, ref) if ref else ws.position(docs.participant, tree)[0]
    tip = ws.descend(node) if ref else ws.position(docs.participant, tree)[1]
    path = ws.path(tip, prefer=(node.id,))
    ids = list({n.id: None for n in [node, *path]})
    parents = {n.parent for n in [node, *path] if n.parent}
    families = ws.continuation_ids(sorted(parents | {node.id}))
    sibling_ids = families.get(node.parent, []) if node.parent else [node.id]
    child_ids = families.get(node.id, [])
    sib = page_of(len(sibling_ids), siblings_offset, limit)
    kids = page_of(len(child_ids), children_offset, limit)
    siblings = ws.nodes_by_id(sibling_ids[sib.offset:sib.offset + sib.limit])
    if not node.parent:
        siblings = [node][sib.offset:sib.offset + sib.limit]
    children = ws.nodes_by_id(child_ids[kids.offset:kids.offset + kids.limit])
    places = places_in(ws, ids, families)
    for i, s in enumerate(siblings):
        places[s.id] = (sib.offset + i + 1, max(1, sib.total))
    for i, c in enumerate(children):
        places[c.id] = (kids.offset + i + 1, max(1, kids.total))
    names = ws.participant_names()

    def js(n: Node) -> dict[str, Any]:
        return _node_json(docs, tree, n, places.get(n.id, (1, 1)), names)

    return {"ok": True, "tree": {"id": tree.id, "title": tree.title, "mode": tree.mode},
            "node": js(node), "path": [js(p) for p in path],
            "siblings": [js(s) for s in siblings], "siblingsTotal": sib.total,
            "siblingsOffset": sib.offset, "siblingsNext": sib.next,
            "children": [js(c) for c in children], "childrenTotal": kids.total,
            "childrenOffset": kids.offset, "childrenNext": kids.next}
