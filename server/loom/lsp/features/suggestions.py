"""A path's continuations as inline suggestions.

At the end of a path document, the continuations of its last node that the text typed
there begins (all of them when nothing is typed) are offered as LSP 3.18
``textDocument/inlineCompletion`` items: ghost text in VS Code; the Neovim plugin asks the
same request and shows virtual text. ``loom.suggest`` generates n continuations *without*
moving to the first, so they appear there to cycle through.

``loom.acceptSuggestion`` makes the choice the current path: the whole continuation is a
``switch`` to it; part of it (a word, a line) splits it at the accepted length through the
executor and switches to the head, so the rest stays offered; the next word of the same
suggestion moves that cut instead of cutting again, so words taken one by one grow one node
(``Split.grow``), not a node per word. The text is either already
in the buffer (VS Code inserts an accepted suggestion itself: ``inserted``, with the
``text`` of a word or line it took) or inserted by the server (Neovim). Accepts in one
document run one at a time, and keep what the buffer gained meanwhile: Tab pressed right
after ctrl+right takes the rest of the suggestion shown before the word was split off.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.lexicon import is_command_line
from loom.commands.results import Result
from loom.lsp.documents import OpenDoc
from loom.lsp.features.editing import Editing
from loom.lsp.features.generation import Generating
from loom.lsp.host import Host
from loom.lsp.ranges import offset_of, range_of
from loom.model import preferences as prefs
from loom.render.text import plural
from loom.store.schema import Node

log = logging.getLogger(__name__)

#: How long an accept waits for the editor's own insertion of the text to arrive.
INSERT_WAIT_S = 2.0


@dataclass
class Showing:
    """Suggestions shown at a path's end: its tip and their ids in the order shown."""

    tip: str
    order: list[str]


@dataclass
class Suggestion:
    node: str  # node id
    label: str
    text: str  # the whole continuation (what replaces [start, end))
    start: int  # document offsets of the text typed over
    end: int


def _working(doc: OpenDoc) -> tuple[int, str]:
    session = doc.session
    return session.committed_end, session.working_text


def _match(children: list[Node], working: str, node_id: str | None, text: str | None = None
           ) -> tuple[Node, str] | None:
    """The continuation the working text accepted, and how much of it: ``text`` when the
    editor said (a word of one that begins with it), else the whole of one the working text
    begins with, else the one it is the beginning of (``node_id`` first)."""
    if not working:
        return None
    ordered = sorted(children, key=lambda c: c.id != node_id)
    if text is not None:
        if not text or not working.startswith(text):
            return None
        return next(((c, text) for c in ordered if c.content.startswith(text)), None)
    for c in ordered:
        if working.startswith(c.content):
            return c, c.content
    for c in ordered:
        if c.content.startswith(working):
            return c, working
    return None


class Suggestions:
    def __init__(self, host: Host, editing: Editing, generation: Generating) -> None:
        self.host = host
        self.editing = editing
        self.generation = generation
        #: one accept at a time per document: a second (Tab right after ctrl+right) must
        #: see the path and buffer the first one leaves, not the ones it started from
        self._accepting: dict[str, asyncio.Lock] = {}
        #: uri → (head, tail) of the split the last partial accept made there: the next
        #: word of the same suggestion moves that cut, so the head grows (one node, not a
        #: node per word)
        self._taking: dict[str, tuple[str, str]] = {}
        #: uri → the suggestions shown there now (the preference log's showing)
        self._showing: dict[str, Showing] = {}

    async def settled(self, uri: str) -> None:
        """Wait for an accept running in this document: until it has re-rendered the
        buffer, its path and its buffer disagree, and an answer from them would be wrong
        (VS Code, told there was nothing left to offer, showed a word twice)."""
        lock = self._accepting.get(uri)
        if lock is not None and lock.locked():
            async with lock:
                pass

    def items(self, doc: OpenDoc, offset: int) -> list[Suggestion]:
        """The continuations to offer at ``offset``: only at the end of a path document,
        after the text typed there (never after a command line)."""
        if doc.kind != "path" or doc.tree is None or doc.view.tip is None:
            return []
        end, working = _working(doc)
        if offset < end:
            return []
        typed, after = working[:offset - end], working[offset - end:]
        if after.strip() or any(is_command_line(x) for x in typed.split("\n")):
            return []
        ws = self.host.app.ws
        tip = ws.find_node(doc.view.tip.id)
        if tip is None:
            return []
        children = ws.children(tip)
        found = [Suggestion(c.id, c.label, c.content, end, offset) for c in children
                 if c.content.startswith(typed) and len(c.content) > len(typed)]
        # (a suggestion the editor has just inserted, its accept on the way, is no dismissal)
        taken = any(typed.startswith(c.content) for c in children)
        return self._present(doc, tip, found, typed if not taken else "")

    def _present(self, doc: OpenDoc, tip: Node, found: list[Suggestion], typed: str
                 ) -> list[Suggestion]:
        """``found`` in the order of this showing, recorded in the preference log when a
        showing begins: a new tip or a new suggestion begins one (a tree whose
        ``shuffle`` is on gets a new random order then); typing that narrows the
        suggestions keeps it. Typing that leaves none dismisses them."""
        showing = self._showing.get(doc.uri)
        ids = [f.node for f in found]
        if showing is not None and showing.tip == tip.id and set(ids) <= set(showing.order):
            if not ids and typed:
                self._showing.pop(doc.uri, None)
                self._log(doc, prefs.SUGGESTION_DISMISSED, showing, how="typed over")
            place = {nid: i for i, nid in enumerate(showing.order)}
            return sorted(found, key=lambda f: place[f.node])
        if not found:
            return found
        ws = self.host.app.ws
        tree = ws.tree_or_none(doc.tree.id) if doc.tree is not None else None
        if tree is not None and prefs.shuffles(tree.extra):
            random.shuffle(found)
        showing = self._showing[doc.uri] = Showing(tip.id, [f.node for f in found])
        self._log(doc, prefs.SUGGESTION_SHOWN, showing)
        return found

    def _log(self, doc: OpenDoc, kind: str, showing: Showing, chosen: str | None = None,
             **detail: object) -> None:
        """One preference event about ``showing`` (never failing the editor's request)."""
        if doc.tree is None:
            return
        rejected = None if kind == prefs.SUGGESTION_SHOWN else \
            [i for i in showing.order if i != chosen]
        try:
            self.host.app.ws.record_preference(
                self.host.docs.participant, doc.tree, kind, parent=showing.tip,
                node=chosen, shown=showing.order, chosen=chosen, rejected=rejected,
                detail=dict(detail) or None)
        except Exception:
            log.warning("could not record %s", kind, exc_info=True)

    def dismiss(self, uri: str) -> Result:
        """The writer dismissed the suggestions shown (``loom.dismissSuggestion``: Escape
        on ghost text): logged, and the next showing is a new one."""
        doc = self.host.docs.ensure(uri)
        showing = self._showing.pop(uri, None)
        if showing is None:
            return Result.success("✓ no suggestions shown", dismissed=[])
        self._log(doc, prefs.SUGGESTION_DISMISSED, showing, how="dismissed")
        return Result.success(f"✓ dismissed {plural(len(showing.order), 'suggestion')}",
                              dismissed=showing.order)

    def inline_list(self, doc: OpenDoc, position: lsp.Position) -> lsp.InlineCompletionList:
        """``textDocument/inlineCompletion``: ``items`` as ghost text, each accepted by
        ``loom.acceptSuggestion`` (the editor inserted it)."""
        text_doc = doc.session.doc
        return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(
            insert_text=s.text, range=range_of(text_doc, s.start, s.end),
            command=lsp.Command(title=f"Accept [{s.label}]", command="loom.acceptSuggestion",
                                arguments=[{"uri": doc.uri, "node": s.node, "inserted": True}]))
            for s in self.items(doc, offset_of(doc, position))])

    async def suggest(self, uri: str, asked: syntax.Continue | None = None) -> Result:
        """Commit, generate n continuations of the path's end and stay there, so they are
        offered as suggestions (cancellable like any generation: ``loom.cancel``)."""
        host = self.host
        started = await self.generation.start(uri, "suggestions work",
                                              asked or syntax.Continue())
        if isinstance(started, Result):
            return started
        doc, run, cmd = started
        tip = doc.view.tip
        assert tip is not None
        doc.generating = True
        host.status(doc, "generating suggestions…")
        actor = host.actor(doc)
        try:
            result = await host.execute(cmd, actor, cancel=run.cancel)
        finally:
            doc.generating = False
            self.generation.release()
        if not result.ok:
            host.status(doc, result.text)
            return result
        # `continue` moves to the first continuation: stay where the suggestions start
        back = host.execute_now(syntax.Switch(node=tip.id, tip=tip.id), actor)
        if not back.ok:
            return back
        host.status(doc)
        host.refresh_decorations()
        made = result.data.get("created", [])
        return Result.success(
            f"✓ {plural(len(made), 'suggestion')} from [{tip.label}] at the end of the "
            "buffer: cycle through them, accept one (or a word of it)",
            created=made, source=tip.id)

    async def accept(self, uri: str, node: str | None, text: str | None,
                     inserted: bool) -> Result:
        """Make a suggestion (or its first ``text``) the current path."""
        lock = self._accepting.setdefault(uri, asyncio.Lock())
        async with lock:
            return await self._accept(uri, node, text, inserted)

    async def _accept(self, uri: str, node: str | None, text: str | None,
                      inserted: bool) -> Result:
        host, docs = self.host, self.host.docs
        doc = docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None or doc.view.tip is None:
            return Result.failure("INVALID_SYNTAX", "suggestions work in a path document",
                                  "open loom://path/TREE/NODE")
        ws = host.app.ws
        tip = ws.find_node(doc.view.tip.id)
        children = ws.children(tip) if tip is not None else []
        leftover = ""
        if inserted:
            picked = await self._inserted(doc, children, node, text)
            if picked is None:
                return Result.failure("CONFLICT", "the accepted text is not at the end of "
                                      "the buffer", "ask for the suggestions again")
            child, accepted = picked
            leftover = _working(doc)[1][len(accepted):]
        else:
            child = next((c for c in children if c.id == node or c.local_id == node), None)
            if child is None:
                return Result.failure("NOT_FOUND", "that suggestion is not a continuation of "
                                      "the path's end", "ask for the suggestions again")
            accepted = child.content if text is None else text
            if not accepted or not child.content.startswith(accepted):
                return Result.failure("INVALID_SYNTAX", "the accepted text is not the "
                                      "beginning of the suggestion", "accept a prefix of it")
        actor = host.actor(doc)
        target = child.id
        taking = self._taking.pop(uri, None)
        if len(accepted) < len(child.content):
            cut = None
            if taking == (tip.id if tip is not None else None, child.id):
                cut = await host.execute(syntax.Split(node=child.id, at=len(accepted),
                                                   grow=True), actor)
                if not cut.ok and cut.code != "CONFLICT":
                    return cut
            if cut is None or not cut.ok:  # (built on since: an ordinary cut)
                cut = await host.execute(syntax.Split(node=child.id, at=len(accepted)), actor)
            if not cut.ok:
                return cut
            target = cut.data["head"]
            self._taking[uri] = (target, cut.data["tail"])
        moved = host.execute_now(syntax.Switch(node=target, tip=target), actor)
        if not moved.ok:
            return moved
        _here, doc.view.tip = ws.position(docs.participant, doc.tree)
        rendered, segments = docs.rerender_target(doc)
        end = segments[-1].end if segments else 0
        if inserted and rendered[end:].startswith(accepted):
            # what was typed (or accepted) after the text while the split ran stays
            leftover = rendered[end + len(accepted):]
        await host.send_edit(doc, rendered[:end] + leftover, segments)
        self.editing.persist(doc)
        host.status(doc)
        host.refresh_decorations()
        showing = self._showing.pop(uri, None)
        if showing is None or showing.tip != (tip.id if tip is not None else None) \
                or child.id not in showing.order:  # (accepted before it was ever shown)
            showing = Showing(tip.id if tip is not None else "", [c.id for c in children])
        self._log(doc, prefs.SUGGESTION_ACCEPTED, showing, child.id,
                  how="whole" if len(accepted) == len(child.content) else "partial",
                  accepted=len(accepted), length=len(child.content),
                  slot=showing.order.index(child.id) + 1)
        shown = ws.node(target)
        part = "" if target == child.id else f" (the first {len(accepted)} characters)"
        return Result.success(f"✓ accepted [{shown.label}]{part}", node=target,
                              suggestion=child.id, accepted=len(accepted))

    async def _inserted(self, doc: OpenDoc, children: list[Node], node: str | None,
                        text: str | None) -> tuple[Node, str] | None:
        """The suggestion the editor inserted (waiting for its change to arrive)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + INSERT_WAIT_S
        while True:
            picked = _match(children, _working(doc)[1], node, text)
            full = picked is not None and picked[1] == picked[0].content
            # an accepted whole suggestion may still be arriving: wait for all of it
            if picked is not None and (full or text is not None or node is None
                                       or picked[0].id != node):
                return picked
            if loop.time() > deadline:
                return picked
            await asyncio.sleep(0.02)
