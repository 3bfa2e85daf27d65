"""Hover, go to definition, references and document links over node references."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom.commands.help import render_help_tool
from loom.errors import LoomError
from loom.lsp.features import cards
from loom.lsp.features.decorations import sibling_position
from loom.lsp.features.refs import Ref, ref_at, refs_in_line, verb_at
from loom.lsp.session import Documents, OpenDoc
from loom.model import marks
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


def resolve_ref(docs: Documents, tree: Tree, ref: Ref) -> Node | None:
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


def node_card(docs: Documents, tree: Tree, node: Node) -> str:
    """The hover text of a node: its own text first, the summary second and labelled
    with where it came from, then how a model made it (``cards.node_card``)."""
    return cards.node_card(docs, node)


def hover(docs: Documents, doc: OpenDoc, offset: int) -> tuple[str, Span] | None:
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


def location_of(docs: Documents, doc: OpenDoc | None, node: Node) -> Location:
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


def definition(docs: Documents, doc: OpenDoc, offset: int) -> Location | None:
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


def references(docs: Documents, doc: OpenDoc, offset: int,
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


def document_links(docs: Documents, doc: OpenDoc) -> list[tuple[int, int, str]]:
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


def _node_json(docs: Documents, tree: Tree, node: Node) -> dict[str, Any]:
    k, n = sibling_position(docs.ws, node)
    return {"id": node.id, "localId": node.local_id, "label": node.label,
            "author": docs.ws.participant_name(node.author_id),
            "authorType": node.author_type, "summary": node.summary or "",
            "depth": node.depth, "created": node.created, "uri": node_uri(tree, node),
            "siblingIndex": k, "siblingCount": n,
            # what people read first: the node's own text; the summary second, labelled
            "excerpt": cards.excerpt(node.content, 200),
            "summarySource": cards.summary_label(node.summary_source),
            "bookmarked": bool(node.bookmarked),
            "bookmarkLabel": marks.bookmark_label(node.extra),
            "tags": marks.tags_of(node.extra), "rating": marks.rating_of(node.extra)}


def node_info(docs: Documents, tree_ref: str | None, ref: str | None, doc: OpenDoc | None,
              line: int | None, character: int | None) -> dict[str, Any]:
    """``loom/nodeInfo``: a node (given, or at a position in an open document, else the
    participant's position) with its path, siblings and children."""
    ws = docs.ws
    tree = ws.find_tree(tree_ref) if tree_ref else (doc.tree if doc is not None else None)
    if tree is None:
        raise LoomError("NOT_FOUND", "no tree given", "pass {tree} or {uri, line, character}")
    node = None
    if doc is not None and line is not None:
        node = docs.node_at(doc, doc.session.doc.offset_at(line, character or 0))
    if node is None:
        node = ws.resolve(tree, ref) if ref else ws.position(docs.participant, tree)[0]
    tip = ws.descend(node) if ref else ws.position(docs.participant, tree)[1]
    path = ws.path(tip, prefer=(node.id,))
    siblings = ws.children(ws.node(node.parent)) if node.parent else [node]
    return {"ok": True, "tree": {"id": tree.id, "title": tree.title, "mode": tree.mode},
            "node": _node_json(docs, tree, node),
            "path": [_node_json(docs, tree, p) for p in path],
            "siblings": [_node_json(docs, tree, s) for s in siblings],
            "children": [_node_json(docs, tree, c) for c in ws.children(node)]}
