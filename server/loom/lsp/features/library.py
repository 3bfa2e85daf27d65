"""The reader's actions from the editor: bookmark, tag, rate, prune and unprune, delete and
undelete, rename and delete a tree (``loom.act``), search every tree (``loom.search``), and
the workspace symbols (tree titles, bookmarks, node ids, text). Every change is the
corresponding arrow command through the executor, as this session's participant; a change
to the path a document shows is followed in that document."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.features import cards
from loom.lsp.features.editing import Editing
from loom.lsp.host import Host
from loom.model import permissions as perms
from loom.render import picture
from loom.store import reader
from loom.uris import node_uri, title_segment, tree_uri

if TYPE_CHECKING:
    from loom.lsp.features.navigation import Navigation

#: ``loom.act`` actions: the node ones, then the tree ones.
NODE_ACTIONS = ("bookmark", "unbookmark", "tag", "untag", "rate", "prune", "unprune",
                "delete", "undelete")
TREE_ACTIONS = ("rename", "deleteTree", "undeleteTree")


def action_command(action: str, node: str | None, tree: str | None,
                   value: str | None) -> syntax.Command:
    """The arrow command an editor action is."""
    match action:
        case "bookmark":
            return syntax.Bookmark(node=node, label=value or None)
        case "unbookmark":
            return syntax.Unbookmark(node=node)
        case "tag" | "untag":
            tags = tuple(t for t in (value or "").replace(",", " ").split() if t)
            if action == "tag" and not tags:
                raise LoomError("INVALID_SYNTAX", "no tag given", "tag it with a word: dream")
            return (syntax.Tag if action == "tag" else syntax.Untag)(node=node, tags=tags)
        case "rate":
            try:
                rating = max(-1, min(1, int((value or "1").strip())))
            except ValueError as err:
                raise LoomError("INVALID_SYNTAX", f'a rating is +1, -1 or 0, not "{value}"',
                                "rate with +1 (good), -1 (bad) or 0 (clear)") from err
            return syntax.Rate(node=node, rating=rating)
        case "prune" | "unprune" | "delete" | "undelete":
            if node is None:
                raise LoomError("NOT_FOUND", f"{action}: no node given",
                                "pass {uri, node} or {uri, line, character}")
            cls = {"prune": syntax.Prune, "unprune": syntax.Unprune, "delete": syntax.Delete,
                   "undelete": syntax.Undelete}[action]
            return cls(node=node)
        case "rename":
            if not value or not value.strip():
                raise LoomError("INVALID_SYNTAX", "rename: no title given",
                                "pass {tree, value: the new title}")
            return syntax.Rename(title=value, tree=tree)
        case "deleteTree":
            return syntax.Delete(tree=tree)
        case "undeleteTree":
            return syntax.Undelete(tree=tree)
    raise LoomError("INVALID_SYNTAX", f'unknown action "{action}"',
                    "one of " + ", ".join((*NODE_ACTIONS, *TREE_ACTIONS)))


_SYMBOL_KINDS = {"tree": lsp.SymbolKind.Namespace, "bookmark": lsp.SymbolKind.Key,
                 "node": lsp.SymbolKind.Field, "text": lsp.SymbolKind.String}


class Library:
    def __init__(self, host: Host, editing: Editing, navigation: Navigation) -> None:
        self.host = host
        self.editing = editing
        self.navigation = navigation  # shows the participant's path again

    async def act(self, uri: str, node_ref: str | None, action: str, value: str | None,
                  tree_ref: str | None) -> Result:
        """Run one of the reader's actions on a node of the document's tree (or on a
        tree), then bring the open documents of that tree up to date."""
        host = self.host
        doc = host.doc(uri) if uri else None
        tree = doc.tree if doc is not None else None
        if tree_ref:
            tree = reader.find_any_tree(host.app.ws, tree_ref)
        if tree is None:
            tree = host.actor(doc).tree
        if tree is None:
            raise LoomError("NOT_FOUND", "no tree given", "pass {uri} or {tree}")
        node_id = None
        if action in NODE_ACTIONS:
            if doc is not None and doc.kind == "path":
                committed = await self.editing.commit_and_show(doc)
                if not committed.ok:
                    return committed
            node_id = host.app.ws.resolve(tree, node_ref).id if node_ref else None
        cmd = action_command(action, node_id, tree.id if action in TREE_ACTIONS else None,
                             value)
        actor = host.actor(doc)
        if actor.tree is None or actor.tree.id != tree.id:
            actor = type(actor)(actor.participant, tree)
        result = await host.execute(cmd, actor)
        if result.ok and doc is not None and doc.kind == "path" and doc.tree is not None \
                and action in ("prune", "delete", "unprune", "undelete"):
            await self.navigation.follow(doc)
        host.refresh_decorations()
        return result

    def search(self, query: str, tree_ref: str | None, limit: int) -> Result:
        """``→ search`` with each hit's path URI, its own text and its marks."""
        me = self.host.docs.participant
        perms.require_read(me.permissions)
        ws = self.host.app.ws
        tree = ws.find_tree(tree_ref) if tree_ref else None
        if tree is None and me.current_tree and not perms.reads_everywhere(me.permissions):
            tree = ws.tree_or_none(me.current_tree)  # (no cross_tree: the tree it is in)
        if tree is not None:
            perms.require_read(me.permissions, tree=tree.id, home=me.current_tree)
        hits = reader.search(ws, query, tree, limit=limit)
        trees = {t.id: t for t, _ in ws.trees()}
        out = []
        for h in hits:
            t = trees.get(h.node.tree_id)
            if t is None:
                continue
            out.append({"node": h.node.id, "localId": h.node.local_id, "label": h.node.label,
                        "tree": t.id, "treeTitle": t.title, "snippet": h.snippet,
                        "excerpt": cards.excerpt(h.node.content, 200),
                        "marks": cards.mark_line(h.node),
                        "author": ws.participant_name(h.node.author_id),
                        "uri": node_uri(t, h.node)})
        return Result.success(f"✓ {len(out)} match{'es' if len(out) != 1 else ''}",
                              hits=out)

    def picture(self, tree_ref: str, uri: str | None) -> dict[str, Any]:
        """``loom/picture``: the tree as an SVG and as a text map, with every node's path
        URI (a click opens it)."""
        perms.require_read(self.host.docs.participant.permissions)
        ws = self.host.app.ws
        doc = self.host.doc(uri) if uri else None
        tree = ws.find_tree(tree_ref) if tree_ref else (doc.tree if doc is not None else None)
        if tree is None:
            raise LoomError("NOT_FOUND", "no tree given", "pass {tree} or {uri}")
        me = self.host.docs.participant
        perms.require_read(me.permissions, tree=tree.id, home=me.current_tree)
        position, tip = ws.position(self.host.docs.participant, tree)
        if doc is not None and doc.kind == "path" and doc.view.tip is not None:
            tip = doc.view.tip
        o = reader.outline_on_path(ws, tree, position, tip, ws.path_choices(me, tree))
        root, rows, children, path, here = o.root, o.rows, o.children, o.path, o.here
        drawn = picture.text_map(root, rows, children, path, here)
        nodes = {nid: {"label": r.label, "text": cards.excerpt(r.text, 160),
                       "uri": f"loom://path/{tree.id}/{r.label}/"
                              f"{title_segment(tree.title)}", "model": r.by_model,
                       "madeBy": r.model,
                       "bookmarked": r.bookmarked}
                 for nid, r in rows.items()}
        return {"ok": True, "tree": {"id": tree.id, "title": tree.title},
                "svg": picture.svg(tree.title, root, rows, children, path, here),
                "map": {"lines": drawn.lines,
                        "cells": [[line, col, nid] for line, col, nid in drawn.cells]},
                "nodes": nodes, "position": here}

    def workspace_symbols(self, query: str) -> list[lsp.WorkspaceSymbol]:
        """``workspace/symbol``: ``symbols``, each opening its path."""
        start = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
        return [lsp.WorkspaceSymbol(name=s["name"], kind=_SYMBOL_KINDS[s["kind"]],
                                    container_name=s["detail"],
                                    location=lsp.Location(uri=s["uri"], range=start))
                for s in self.symbols(query)]

    def symbols(self, query: str) -> list[dict[str, Any]]:
        """``workspace/symbol``: trees, bookmarks, node ids and text matches."""
        perms.require_read(self.host.docs.participant.permissions)
        ws = self.host.app.ws
        out = []
        me = self.host.docs.participant
        for kind, tree, node, name in reader.symbols(ws, query):
            if (me.current_tree and tree.id != me.current_tree
                    and not perms.reads_everywhere(me.permissions)):
                continue  # (another tree: cross_tree)
            uri = node_uri(tree, node) if node is not None else node_uri(
                tree, ws.position(self.host.docs.participant, tree)[1])
            detail = tree.title if node is not None else f"tree · {tree.mode}"
            out.append({"kind": kind, "name": name, "tree": tree.id, "treeTitle": tree.title,
                        "node": node.id if node is not None else None, "uri": uri,
                        "overview": tree_uri(tree), "detail": detail})
        return out
