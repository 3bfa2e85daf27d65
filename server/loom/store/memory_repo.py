"""The store side of each participant's operational memory: pins, stashes and the action
trace (thoughts are trace entries too). Every write logs its change in the same
transaction; what a missing pin or stash means to a user is ``loom.memory``'s business.

Pins and stashes belong to a participant **in a tree** (schema v6): what you pin or stash
while working in one tree is not in your memory in another. Stashes from before v6 that
could not be placed in a tree (their participant had none) have no tree and show in
every tree."""

from __future__ import annotations

from loom.store.orm import fn, pw
from loom.store.schema import Document, Node, Participant, Pin, Stash, TraceEntry, Tree
from loom.store.workspace import Workspace

#: The trace's command text for a thought (``→ think`` … ``←``).
THINK = "→ think"


# ── pins ──────────────────────────────────────────────────────────────────────


def _pin_where(who: Participant, tree: Tree, kind: str, ref: str) -> pw.Expression:
    return ((Pin.participant == who.id) & (Pin.tree == tree.id) & (Pin.kind == kind) &
            (Pin.ref == ref))


def add_pin(ws: Workspace, who: Participant, tree: Tree, kind: str, ref: str,
            section: str | None = None) -> bool:
    """Pin a node or document (section) in ``tree``; False when it was pinned already."""
    with ws.db.atomic():
        exists = Pin.get_or_none(_pin_where(who, tree, kind, ref) &
                                 (Pin.section == section if section else Pin.section.is_null()))
        if exists is not None:
            return False
        Pin.create(participant=who.id, tree=tree.id, kind=kind, ref=ref, section=section,
                   created=ws.clock())
        ws.log_change(tree.id, "memory.pin", ref, who.id, {"kind": kind, "section": section})
    return True


def remove_pins(ws: Workspace, who: Participant, tree: Tree, kind: str, ref: str,
                section: str | None = None) -> int:
    """Unpin ``ref`` in ``tree`` (only its ``section``, when given); how many pins went."""
    with ws.db.atomic():
        q = Pin.delete().where(_pin_where(who, tree, kind, ref))
        # a document's own pin is not its sections': dropping the document leaves its
        # §motivation pin
        q = q.where(Pin.section == section) if section else \
            q.where(Pin.section.is_null() | (Pin.section == ""))
        removed = q.execute()
        if removed:
            ws.log_change(tree.id, "memory.unpin", ref, who.id)
    return removed


def pins(ws: Workspace, who: Participant, tree: Tree | None) -> list[Pin]:
    """``who``'s pins in ``tree``, oldest first (none without a tree)."""
    if tree is None:
        return []
    return list(Pin.select().where((Pin.participant == who.id) & (Pin.tree == tree.id))
                .order_by(Pin.created, Pin.id))


def pinned(ws: Workspace, who: Participant, tree: Tree | None
           ) -> list[tuple[Pin, Node | Document]]:
    """Each of ``who``'s pins in ``tree`` with the node or document it holds; pins of
    deleted entities are left out."""
    out: list[tuple[Pin, Node | Document]] = []
    for p in pins(ws, who, tree):
        model = Node if p.kind == "node" else Document
        entity = model.get_or_none(model.id == p.ref)
        if entity is not None:
            out.append((p, entity))
    return out


# ── stashes ───────────────────────────────────────────────────────────────────


def _in_tree(tree: Tree) -> pw.Expression:
    return (Stash.tree == tree.id) | Stash.tree.is_null()


def put_stash(ws: Workspace, who: Participant, tree: Tree, label: str, content: str,
              tokens: int, source: str) -> bool:
    """Stash ``content`` under ``label`` in ``tree``; True when it replaced an earlier
    stash of that label there."""
    with ws.db.atomic():
        deleted = Stash.delete().where((Stash.participant == who.id) & (Stash.tree == tree.id)
                                       & (Stash.label == label)).execute()
        Stash.create(participant=who.id, tree=tree.id, label=label, content=content,
                     tokens=tokens, source=source, created=ws.clock())
        ws.log_change(tree.id, "memory.stash", label, who.id, {"tokens": tokens})
    return bool(deleted)


def find_stash(ws: Workspace, who: Participant, tree: Tree, label: str) -> Stash | None:
    """The stash in ``tree`` labelled exactly ``label``, else the one labelled so ignoring
    case; the tree's own before one from before v6."""
    mine = (Stash.participant == who.id) & _in_tree(tree)
    for same in (Stash.label == label, fn.lower(Stash.label) == label.lower()):
        item = (Stash.select().where(mine & same)
                .order_by(Stash.tree.is_null(), Stash.id).first())
        if item is not None:
            return item
    return None


def mark_recalled(ws: Workspace, who: Participant, item: Stash) -> None:
    """The stash goes back into context (``recall``)."""
    with ws.db.atomic():
        Stash.update(recalled=True).where(Stash.id == item.id).execute()
        ws.log_change(item.tree, "memory.recall", item.label, who.id)
    item.recalled = True


def remove_stash(ws: Workspace, who: Participant, item: Stash) -> None:
    with ws.db.atomic():
        Stash.delete().where(Stash.id == item.id).execute()
        ws.log_change(item.tree, "memory.drop", item.label, who.id)


def stashes(ws: Workspace, who: Participant, tree: Tree | None) -> list[Stash]:
    """``who``'s stashes in ``tree``, oldest first (none without a tree)."""
    if tree is None:
        return []
    return list(Stash.select().where((Stash.participant == who.id) & _in_tree(tree))
                .order_by(Stash.created, Stash.id))


# ── the action trace ─────────────────────────────────────────────────────────


def record(ws: Workspace, who: Participant, tree: Tree | None, command: str, ok: bool,
           code: str | None = None, message: str = "") -> None:
    """Add a trace entry for a command that ran (or was refused)."""
    # one prepared statement: this runs after every command, on the hot path
    with ws.db.atomic():
        ws.sql(
            "INSERT INTO trace_entry (participant, tree, command, ok, code, message, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (who.id, tree.id if tree else None, command, ok, code, message, ws.clock()))


def add_thought(ws: Workspace, who: Participant, tree: Tree, content: str) -> None:
    with ws.db.atomic():
        TraceEntry.create(participant=who.id, tree=tree.id, command=THINK, ok=True,
                          message=content, created=ws.clock())


def trace(ws: Workspace, who: Participant, limit: int = 10, errors_only: bool = False,
          tree_id: str | None = None) -> list[TraceEntry]:
    """``who``'s latest trace entries, oldest first; with ``tree_id``, those in that tree
    and those in no tree."""
    q = TraceEntry.select().where(TraceEntry.participant == who.id)
    if errors_only:
        q = q.where(TraceEntry.ok == False)  # noqa: E712
    if tree_id is not None:
        q = q.where((TraceEntry.tree == tree_id) | TraceEntry.tree.is_null())
    rows = list(q.order_by(TraceEntry.id.desc()).limit(limit))
    return list(reversed(rows))


def thoughts(ws: Workspace, who: Participant, limit: int = 5,
             tree_id: str | None = None) -> list[str]:
    """The text of ``who``'s latest thoughts (in ``tree_id``), oldest first."""
    q = TraceEntry.select().where((TraceEntry.participant == who.id) &
                                  (TraceEntry.command == THINK))
    if tree_id is not None:
        q = q.where(TraceEntry.tree == tree_id)
    rows = q.order_by(TraceEntry.id.desc()).limit(limit)
    return [r.message for r in reversed(list(rows))]
