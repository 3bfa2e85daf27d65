"""Each participant's operational memory: pins, stashes, thoughts and the action trace."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from loom.errors import LoomError
from loom.memory.tokens import count_tokens
from loom.render import formats as f
from loom.store.schema import Document, Node, Participant, Pin, Stash, TraceEntry, Tree
from loom.store.workspace import Workspace

if TYPE_CHECKING:
    from loom.commands.context import Ctx

CONTEXT_BUDGET = 50_000
THINK = "→ think"


def add_pin(ws: Workspace, who: Participant, tree: Tree, kind: str, ref: str,
            section: str | None = None) -> bool:
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


def drop_pin(ws: Workspace, who: Participant, kind: str, ref: str,
             section: str | None = None) -> None:
    with ws.db.atomic():
        q = Pin.delete().where((Pin.participant == who.id) & (Pin.kind == kind) &
                               (Pin.ref == ref))
        if section:
            q = q.where(Pin.section == section)
        if q.execute() == 0:
            raise LoomError("NOT_FOUND", "nothing pinned there", "see → memory for your pins")
        ws.log_change(None, "memory.unpin", ref, who.id)


def pins(ws: Workspace, who: Participant) -> list[Pin]:
    return list(Pin.select().where(Pin.participant == who.id).order_by(Pin.created, Pin.id))


def put_stash(ws: Workspace, who: Participant, label: str, content: str, tokens: int,
              source: str) -> bool:
    with ws.db.atomic():
        deleted = Stash.delete().where((Stash.participant == who.id) &
                                       (Stash.label == label)).execute()
        Stash.create(participant=who.id, label=label, content=content, tokens=tokens,
                     source=source, created=ws.clock())
        ws.log_change(None, "memory.stash", label, who.id, {"tokens": tokens})
    return bool(deleted)


def _stash(who: Participant, label: str) -> Stash:
    item = Stash.get_or_none((Stash.participant == who.id) & (Stash.label == label))
    if item is None:
        item = Stash.get_or_none((Stash.participant == who.id) &
                                 (Stash.label.collate("NOCASE") == label))
    if item is None:
        labels = [s.label for s in Stash.select(Stash.label).where(Stash.participant == who.id)]
        hint = ("stashed: " + ", ".join(f'"{x}"' for x in labels[:8])) if labels else \
            "nothing is stashed yet"
        raise LoomError("NOT_FOUND", f'stash "{label}" does not exist', hint)
    return item


def recall_stash(ws: Workspace, who: Participant, label: str) -> Stash:
    item = _stash(who, label)
    with ws.db.atomic():
        Stash.update(recalled=True).where(Stash.id == item.id).execute()
        ws.log_change(None, "memory.recall", item.label, who.id)
    return item


def drop_stash(ws: Workspace, who: Participant, label: str) -> None:
    item = _stash(who, label)
    with ws.db.atomic():
        Stash.delete().where(Stash.id == item.id).execute()
        ws.log_change(None, "memory.drop", item.label, who.id)


def stashes(ws: Workspace, who: Participant) -> list[Stash]:
    return list(Stash.select().where(Stash.participant == who.id).order_by(Stash.created, Stash.id))


def record(ws: Workspace, who: Participant, tree: Tree | None, command: str, ok: bool,
           code: str | None = None, message: str = "") -> None:
    # one prepared statement: this runs after every command, on the hot path
    with ws.db.atomic():
        ws.db.execute_sql(
            "INSERT INTO trace_entry (participant, tree, command, ok, code, message, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (who.id, tree.id if tree else None, command, ok, code, message, ws.clock()))


def add_thought(ws: Workspace, who: Participant, tree: Tree, content: str) -> None:
    with ws.db.atomic():
        TraceEntry.create(participant=who.id, tree=tree.id, command=THINK, ok=True,
                          message=content, created=ws.clock())


def trace(ws: Workspace, who: Participant, limit: int = 10,
          errors_only: bool = False) -> list[TraceEntry]:
    q = TraceEntry.select().where(TraceEntry.participant == who.id)
    if errors_only:
        q = q.where(TraceEntry.ok == False)  # noqa: E712
    rows = list(q.order_by(TraceEntry.id.desc()).limit(limit))
    return list(reversed(rows))


def thoughts(ws: Workspace, who: Participant, limit: int = 5) -> list[str]:
    rows = (TraceEntry.select().where((TraceEntry.participant == who.id) &
                                      (TraceEntry.command == THINK))
            .order_by(TraceEntry.id.desc()).limit(limit))
    return [r.message for r in reversed(list(rows))]


def summarize_range(ctx: Ctx, a: Node, b: Node) -> str:
    """``summary-of:A-B``: the summaries of the path from A down to B (or B up to A)."""
    lo, hi = (a, b) if a.depth <= b.depth else (b, a)
    path = ctx.ws.path(hi, prefer=(hi.id, lo.id))
    ids = [n.id for n in path]
    if lo.id not in ids:
        raise LoomError("NOT_FOUND", f"[{lo.label}] is not an ancestor of [{hi.label}]",
                        "summary-of takes two nodes on one path: summary-of:r001-a7x2")
    span = path[ids.index(lo.id):]
    return "\n".join(f"[{n.label}] {n.summary or n.content[:200]}" for n in span)


@dataclass
class MemoryState:
    pinned: list[str]
    stashed: list[str]
    used: int
    available: int
    exact: bool
    pinned_blocks: list[str]
    recalled_blocks: list[str]


def state(ctx: Ctx) -> MemoryState:
    """What the operational memory holds, with the tokens it costs in context."""
    shown: list[str] = []
    blocks: list[str] = []
    for p in pins(ctx.ws, ctx.me):
        if p.kind == "node":
            node = Node.get_or_none(Node.id == p.ref)
            if node is None:
                continue
            shown.append(f.ref(node.label))
            blocks.append(f'{f.ref(node.label)} "{node.summary or node.content}"')
        else:
            doc = Document.get_or_none(Document.id == p.ref)
            if doc is None:
                continue
            shown.append(f.doc_ref(doc.name, p.section))
            blocks.append(f"{f.doc_ref(doc.name, p.section)}\n{doc.content}")
    items = stashes(ctx.ws, ctx.me)
    recalled = [f'"{s.label}": {s.content}' for s in items if s.recalled]
    used, exact = count_tokens("\n".join(blocks + recalled))
    return MemoryState(shown, [s.label for s in items], used, max(0, CONTEXT_BUDGET - used),
                       exact, blocks, recalled)
