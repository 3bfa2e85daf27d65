"""Undo across a move of the view: a sibling switch, a branch, a generation landing.

The server rewrites a path buffer when the view moves; an editor keeps that rewrite on its
undo stack like any edit. Undone, the old branch's text came back as the human's edit of
the new branch, and a save committed it as versions. Here such an
undo is read for what it is: the text of the view before the move, back in the buffer, is
the move undone — the participant goes back there and nothing is written; the text after
it, back again, is the redo — the move again. The tree keeps everything either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from loom.commands import syntax
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, ViewMove, copy_segments
from loom.lsp.host import Host

#: (text, node ranges, (position node id, tip id)) of a path view at one moment
ViewState = tuple[str, list[Segment], tuple[str, str]]

if TYPE_CHECKING:
    from loom.lsp.wiring import Later


class _Navigation(Protocol):
    async def follow(self, doc: OpenDoc) -> None: ...


class Moves:
    def __init__(self, host: Host, navigation: Later[_Navigation]) -> None:
        self.host = host
        self.navigation = navigation  # shows the participant's path again

    def state(self, doc: OpenDoc) -> ViewState:
        """The view as the editor will show it once our edits land, and where the
        participant stands."""
        docs = self.host.docs
        assert doc.tree is not None
        node, tip = self.host.app.ws.position(docs.participant, doc.tree)
        return (docs.expected_text(doc), copy_segments(docs.expected_segments(doc)),
                (node.id, tip.id))

    def moved(self, doc: OpenDoc, before: ViewState) -> None:
        """The view moved from ``before`` to where it is now: an undo may come for it."""
        after = self.state(doc)
        if after[0] == before[0]:
            doc.last_move = None  # nothing an undo could tell apart
            return
        doc.last_move = ViewMove(before[0], before[1], before[2], after[0], after[1], after[2])

    def undone(self, doc: OpenDoc) -> bool:
        """Whether the editor's latest change brought back the view before the last move
        (an undo) or after it (a redo, recorded reversed); if so the buffer's ranges are
        that view's at once, and the participant moves there."""
        move = doc.last_move
        if (move is None or doc.kind != "path" or doc.targets or doc.generating
                or doc.session.text != move.before_text):
            return False
        doc.session.segments = copy_segments(move.before_segments)
        doc.last_move = move.reversed()
        self.host.spawn(self._go(doc, move.before), "an undone move of the view")
        return True

    async def _go(self, doc: OpenDoc, where: tuple[str, str]) -> None:
        host = self.host
        node, tip = where
        result = host.execute_now(syntax.Switch(node=node, tip=tip), host.actor(doc))
        if not result.ok:  # the node went meanwhile: say so, and show where it stands
            host.show(result)
        moved = doc.last_move
        await self.navigation().follow(doc)
        doc.last_move = moved  # following re-renders; the redo stays possible
        label = doc.view.tip.label if doc.view.tip is not None else "?"
        host.status(doc, f"↶ back at [{label}] (the tree keeps everything)")
