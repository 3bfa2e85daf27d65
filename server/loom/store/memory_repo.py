"""The store side of each participant's operational memory: pins, stashes and the action
trace (thoughts are trace entries too). Every write logs its change in the same
transaction; what a missing pin or stash means to a user is ``loom.memory``'s business."""

from __future__ import annotations

from peewee import fn

from loom.store.schema import Document, Node, Participant, Pin, Stash, TraceEntry, Tree
from loom.store.workspace import Workspace

#: The trace's command text for a thought (``→ think`` … ``←``).
THINK = "→ think"


# ── pins ──────────────────────────────────────────────────────────────────────


def add_pin(ws: Workspace, who: Participant, tree: Tree, kind: str, ref: str,
            section: str | None = None) -> bool:
    """Pin a node or document (section); False when it was pinned already."""
    with ws.db.atomic():
        exists = Pin.get_or_none((Pin.participant == who.id) & (Pin.kind == kind) &
                                 (Pin.ref == ref) & (Pin.section == section if section
                                                     else Pin.section.is_null()))
        if exists is not None:
            return False
        Pin.create(participant=who.id, tree=tree.id, kind=kind, ref=ref, section=section,
                   created=ws.clock())
        ws.log_change(tree.id, "memory.pin", ref, who.id, {"kind": kind, "section": section})
    return True


def remove_pins(ws: Workspace, who: Participant, kind: str, ref: str,
                section: str | None = None) -> int:
    """Unpin ``ref`` (only its ``section``, when given); how many pins went."""
    with ws.db.atomic():
        q = Pin.delete().where((Pin.participant == who.id) & (Pin.kind == kind) &
                               (Pin.ref == ref))
        if section:
            q = q.where(Pin.section == section)
        removed = q.execute()
        if removed:
            ws.log_change(None, "memory.unpin", ref, who.id)
    return removed


def pins(ws: Workspace, who: Participant) -> list[Pin]:
    """``who``'s pins, oldest first."""
    return list(Pin.select().where(Pin.participant == who.id).order_by(Pin.created, Pin.id))


def pinned(ws: Workspace, who: Participant) -> list[tuple[Pin, Node | Document]]:
    """Each pin with the node or document it holds; pins of deleted entities are left out."""
    out: list[tuple[Pin, Node | Document]] = []
    for p in pins(ws, who):
        model = Node if p.kind == "node" else Document
        entity = model.get_or_none(model.id == p.ref)
        if entity is not None:
            out.append((p, entity))
    return out


# ── stashes ───────────────────────────────────────────────────────────────────


def put_stash(ws: Workspace, who: Participant, label: str, content: str, tokens: int,
              source: str) -> bool:
    """Stash ``content`` under ``label``; True when it replaced an earlier stash."""
    with ws.db.atomic():
        deleted = Stash.delete().where((Stash.participant == who.id) &
                                       (Stash.label == label)).execute()
        Stash.create(participant=who.id, label=label, content=content, tokens=tokens,
                     source=source, created=ws.clock())
        ws.log_change(None, "memory.stash", label, who.id, {"tokens": tokens})
    return bool(deleted)


def find_stash(ws: Workspace, who: Participant, label: str) -> Stash | None:
    """The stash labelled exactly ``label``, else the one labelled so ignoring case."""
    item = Stash.get_or_none((Stash.participant == who.id) & (Stash.label == label))
    if item is None:
        item = Stash.get_or_none((Stash.participant == who.id) &
                                 (fn.lower(Stash.label) == label.lower()))
    return item


def mark_recalled(ws: Workspace, who: Participant, item: Stash) -> None:
    """The stash goes back into context (``recall``)."""
    with ws.db.atomic():
        Stash.update(recalled=True).where(Stash.id == item.id).execute()
        ws.log_change(None, "memory.recall", item.label, who.id)
    item.recalled = True


def remove_stash(ws: Workspace, who: Participant, item: Stash) -> None:
    with ws.db.atomic():
        Stash.delete().where(Stash.id == item.id).execute()
        ws.log_change(None, "memory.drop", item.label, who.id)


def stashes(ws: Workspace, who: Participant) -> list[Stash]:
    """``who``'s stashes, oldest first."""
    return list(Stash.select().where(Stash.participant == who.id)
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


def thoughts(ws: Workspace, who: Participant, limit: int = 5) -> list[str]:
    """The text of ``who``'s latest thoughts, oldest first."""
    rows = (TraceEntry.select().where((TraceEntry.participant == who.id) &
                                      (TraceEntry.command == THINK))
            .order_by(TraceEntry.id.desc()).limit(limit))
    return [r.message for r in reversed(list(rows))]
