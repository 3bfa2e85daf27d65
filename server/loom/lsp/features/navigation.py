"""Moving through the tree from the editor: cycling siblings, branching from a node,
annotating from a lens, opening paths. Every move is a ``switch`` (every write an
``annotate``) through the executor, in the document's own tree."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.documents import OpenDoc
from loom.lsp.features import blind, cards, lookup
from loom.lsp.features.editing import Editing, base_segments
from loom.lsp.features.moves import Moves
from loom.lsp.host import Host
from loom.lsp.positions import TextDoc
from loom.model import permissions as perms
from loom.model import preferences as prefs
from loom.store.schema import Node
from loom.uris import node_uri, tree_uri

log = logging.getLogger(__name__)

#: How long a move waits for a generation that has finished to land in the buffer.
LANDING_WAIT_S = 10.0


class Navigation:
    def __init__(self, host: Host, editing: Editing, moves: Moves) -> None:
        self.host = host
        self.editing = editing
        self.moves = moves
        #: (uri, branch point) → the siblings' ids in the order the picker showed them,
        #: until one is picked (the preference log records the order with the pick)
        self._shown: dict[tuple[str, str], list[str]] = {}

    def node(self, doc: OpenDoc, ref: str) -> Node:
        """A node of the document's tree (never another tree's, whatever id is sent)."""
        tree = doc.tree or self.host.actor(doc).tree
        if tree is None:
            raise LoomError("NOT_FOUND", "there is no tree yet")
        return self.host.app.ws.resolve(tree, ref)

    async def follow(self, doc: OpenDoc) -> None:
        """Show the participant's position after a switch: the path to its tip."""
        ws = self.host.app.ws
        assert doc.tree is not None
        _node, doc.view.tip = ws.position(self.host.docs.participant, doc.tree)
        text, segments = self.host.docs.rerender_target(doc)
        await self.host.send_edit(doc, text, segments)
        self.editing.persist(doc)
        self.host.status(doc)
        self.editing.announce(doc)
        self.host.refresh_decorations()

    async def _path_committed(self, uri: str, what: str) -> tuple[OpenDoc, Result]:
        """The path document, its typed text committed first (a move must not leave it
        behind); the result is a failure when either cannot be."""
        doc = self.host.docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return doc, Result.failure("INVALID_SYNTAX", f"{what} in a path document",
                                       "open loom://path/TREE/NODE")
        if doc.streaming:
            return doc, Result.failure("CONFLICT", "a generation is writing into this path",
                                       "wait for it to land, or cancel it")
        # its continuations are nodes but not yet in the buffer: a move now would be
        # undone by the landing (the Neovim journey: ]s said "switched", the buffer not)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LANDING_WAIT_S
        while doc.generating and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return doc, await self.editing.commit_and_show(doc)

    async def cycle(self, uri: str, ref: str, delta: int) -> Result:
        host = self.host
        doc, committed = await self._path_committed(uri, "siblings are cycled")
        if not committed.ok:
            return committed
        ws = host.app.ws
        node = self.node(doc, ref)
        if node.parent is None:
            return Result.failure("NOT_FOUND", "the root has no siblings")
        siblings = ws.children(ws.node(node.parent))
        ids = [s.id for s in siblings]
        here = node.id if node.id in ids else node.version_of
        if here not in ids or len(ids) < 2:
            return Result.failure("NOT_FOUND", f"[{node.label}] has no siblings",
                                  "→ continue to make some")
        target = siblings[(ids.index(here) + delta) % len(ids)]
        # a sibling with versions shows as its path would: the member chosen, else the newest
        chosen = set(ws.path_choices(host.docs.participant, doc.tree)) if doc.tree else set()
        member = ws.shown_members([target.id], chosen).get(target.id)
        if member is not None:
            target = ws.node(member[0])
        before = self.moves.state(doc)
        result = host.execute_now(syntax.Switch(node=target.id), host.actor(doc))
        if not result.ok:
            return result
        await self.follow(doc)
        self.moves.moved(doc, before)
        k = ids.index(target.version_of or target.id) + 1
        return Result.success(f"✓ switched to [{target.label}] ({k}/{len(ids)})",
                              node=target.id, range=self._range_of(doc, target.id))

    def _range_of(self, doc: OpenDoc, node_id: str) -> dict[str, Any] | None:
        """Where ``node_id``'s text is in the document once our edits land, as an LSP
        range: the editor keeps the cursor in the node it switched to, so the next ]n
        cycles it again (a cursor at the end of the parent would have the next ]n look
        for the parent's siblings)."""
        docs = self.host.docs
        seg = next((s for s in docs.expected_segments(doc) if s.node == node_id), None)
        if seg is None:
            return None
        text = TextDoc(docs.expected_text(doc), docs.encoding)
        (sl, sc), (el, ec) = text.position_at(seg.start), text.position_at(seg.end)
        return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}

    def siblings(self, uri: str, ref: str, offset: int = 0, limit: int | None = None
                 ) -> Result:
        """The node's siblings side by side: each one's own text, author, marks and
        whether one request made them, for a picker (``loom.siblings``). A page of them
        (``limit``, default ``lookup.PAGE``, from ``offset``), with ``total``, ``offset``,
        ``next`` (where the next page starts, or None) and ``currentIndex`` (the node's
        place among them all, 1-based): a constant number of queries per answer."""
        perms.require_read(self.host.docs.participant.permissions)
        host = self.host
        doc = host.docs.ensure(uri)
        ws = host.app.ws
        node = self.node(doc, ref)
        if node.parent is None:
            return Result.failure("NOT_FOUND", "the root has no siblings")
        parent = ws.node(node.parent)
        ids = self._showing(uri, doc, parent.id,
                            ws.continuation_ids([parent.id]).get(parent.id, []), offset)
        here = node.id if node.id in ids else node.version_of
        page = lookup.page_of(len(ids), offset, limit)
        hidden = blind.veiled(ws, host.docs.participant, doc.tree or parent.tree_id,
                              [parent.id])
        slots = ws.nodes_by_id(ids[page.offset:page.offset + page.limit])
        # a sibling with versions is listed with each of them: picking the original (or
        # an older version) puts it back on the path
        versions = ws.version_members([s.id for s in slots]) if doc.tree is None or \
            doc.tree.mode == "buffer" else {}
        members = [(i, sib, m) for i, sib in enumerate(slots, page.offset + 1)
                   for m in (sib, *versions.get(sib.id, []))]
        siblings = [m for _i, _sib, m in members]
        gens: dict[str, Any] = {}
        for gen in ws.generations([s.id for s in siblings]):
            gens.setdefault(gen.node, gen)
        sizes = ws.request_sizes(parent.id) if gens else {}
        names = ws.participant_names()
        kids, _links = ws.connection_counts([s.id for s in siblings])
        in_family = {m.id for _i, sib, m in members if sib.id == here}
        out = []
        for i, slot, sib in members:
            gen = gens.get(sib.id)
            made = sizes.get(sib.id, 0) if gen is not None else 0
            current = sib.id == node.id if node.id in in_family else sib.id == here
            family_note = (f"version of [{slot.label}]" if sib.id != slot.id else
                           "the original" if slot.id in versions else "")
            marks = " · ".join(x for x in (family_note, cards.mark_line(sib)) if x)
            out.append({
                "id": sib.id, "localId": sib.local_id, "label": sib.label,
                "author": "model" if hidden and sib.author_type == "model" else
                          names.get(sib.author_id) or ws.participant_name(sib.author_id),
                "authorType": sib.author_type,
                "index": i, "count": len(ids), "current": current,
                "text": sib.content, "excerpt": cards.excerpt(sib.content, 300),
                "marks": marks, "versionOf": slot.id if sib.id != slot.id else None,
                "model": None if gen is None else blind.HIDDEN if hidden else gen.model,
                "request": made if made > 1 else None,
                "children": kids.get((sib.id, "continuation"), 0),
                "uri": node_uri(doc.tree or ws.tree(sib.tree_id), sib)})
        shown = (f" (showing {page.offset + 1}–{page.offset + len(slots)})"
                 if len(slots) < len(ids) else "")
        current = ids.index(here) + 1 if here in ids else None
        return Result.success(f"✓ {len(ids)} siblings of [{node.label}]{shown}",
                              node=node.id, siblings=out, total=len(ids),
                              offset=page.offset, next=page.next, currentIndex=current)

    async def switch_to(self, uri: str, ref: str) -> Result:
        """Show ``ref`` in place of whichever of its siblings the path holds (the sibling
        picker's choice): commit, switch, follow."""
        host = self.host
        doc, committed = await self._path_committed(uri, "siblings are switched")
        if not committed.ok:
            return committed
        target = self.node(doc, ref)
        before = self.moves.state(doc)
        result = host.execute_now(syntax.Switch(node=target.id), host.actor(doc))
        if not result.ok:
            return result
        self._record_pick(doc, target)
        await self.follow(doc)
        self.moves.moved(doc, before)
        ws = host.app.ws
        siblings = ws.children(ws.node(target.parent)) if target.parent else [target]
        k = next((i for i, s in enumerate(siblings, 1) if s.id == target.id), 1)
        return Result.success(f"✓ switched to [{target.label}] ({k}/{len(siblings)})",
                              node=target.id, range=self._range_of(doc, target.id))

    def _showing(self, uri: str, doc: OpenDoc, parent: str, ids: list[str], offset: int
                 ) -> list[str]:
        """The order the picker shows ``parent``'s children in: as stored, or (a tree
        whose ``shuffle`` is on) a new random order for each showing, kept for its later
        pages. Either way the order is kept for the pick's event."""
        key = (uri, parent)
        kept = self._shown.get(key)
        if offset > 0 and kept is not None and sorted(kept) == sorted(ids):
            return kept
        order = list(ids)
        tree = self.host.app.ws.tree_or_none(doc.tree.id) if doc.tree is not None else None
        if tree is not None and prefs.shuffles(tree.extra):
            random.shuffle(order)
        self._shown[key] = order
        return order

    def _record_pick(self, doc: OpenDoc, target: Node) -> None:
        """A sibling chosen in the picker: logged with the order it showed them in."""
        shown = self._shown.pop((doc.uri, target.parent or ""), None)
        if shown is None or doc.tree is None or target.id not in shown:
            return
        try:
            self.host.app.ws.record_preference(
                self.host.docs.participant, doc.tree, prefs.SIBLING_PICK,
                parent=target.parent, node=target.id, shown=shown, chosen=target.id,
                rejected=[i for i in shown if i != target.id],
                detail={"slot": shown.index(target.id) + 1})
        except Exception:  # the pick itself is done: a lost log line must not undo it
            log.warning("could not record a sibling pick", exc_info=True)

    async def branch(self, uri: str, ref: str) -> Result:
        host = self.host
        doc, committed = await self._path_committed(uri, "branch")
        if not committed.ok:
            return committed
        node = self.node(doc, ref)
        before = self.moves.state(doc)
        result = host.execute_now(syntax.Switch(node=node.id, tip=node.id), host.actor(doc))
        if not result.ok:
            return result
        await self.follow(doc)
        self.moves.moved(doc, before)
        return Result.success(f"✓ branching from [{node.label}]: type to continue",
                              node=node.id)

    async def annotate(self, uri: str, ref: str, text: str | None) -> Result:
        host = self.host
        doc = host.docs.ensure(uri)
        node = self.node(doc, ref)
        if text:
            result = await host.execute(syntax.Annotate(node=node.id, content=text),
                                        host.actor(doc))
            host.show(result)
            host.refresh_decorations()
            return result
        # No text yet: put a command line to complete at the end of the buffer.
        docs = host.docs
        base = docs.expected_text(doc)
        sep = "" if not base or base.endswith("\n") else "\n"
        line = f'→ annotate {node.local_id} ""'
        new = base + sep + line
        await host.send_edit(doc, new, base_segments(doc))
        pos = TextDoc(new, docs.encoding).position_at(len(new) - 1)
        await host.show_document(uri, lsp.Range(lsp.Position(*pos), lsp.Position(*pos)))
        return Result.success("✓ type the annotation between the quotes, then run the line")

    async def open(self, tree_ref: str, node_ref: str | None) -> Result:
        """Open a tree (its path at the participant's position, or its overview with
        ``node_ref`` ``"tree"``) or the path through a node. ``tree_ref`` may be a title
        with spaces, a unique start of one, or an id; without ``node_ref``, a last word
        that is not part of the title is taken as the node (``The House a7x2``)."""
        ws = self.host.app.ws
        try:
            tree = ws.find_tree(tree_ref)
        except LoomError:
            head, _, last = tree_ref.strip().rpartition(" ")
            if node_ref or not head:
                raise
            tree = ws.find_tree(head)
            node_ref = last
        if node_ref == "tree":
            uri = tree_uri(tree)
        elif node_ref:
            uri = node_uri(tree, ws.resolve(tree, node_ref))
        else:
            _node, tip = ws.position(self.host.docs.participant, tree)
            uri = node_uri(tree, tip)
        with contextlib.suppress(Exception):
            await self.host.show_document(uri)
        return Result.success(f"✓ {uri}", uri=uri)
