"""Each participant's operational memory: pins, stashes, thoughts and the action trace.
Pins and stashes are kept per participant and per tree.

What they mean to a participant is here (what a missing pin or stash says, the memory
state and its token cost); keeping them is :mod:`loom.store.memory_repo`'s job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from loom.errors import LoomError
from loom.memory.counting import count_tokens
from loom.model.documents import find_section
from loom.render import formats as f
from loom.render.text import extractive_summary, preview, quote, word_count, words
from loom.store import memory_repo as repo
from loom.store.schema import Document, Node, Participant, Pin, Stash, Tree
from loom.store.workspace import Workspace

if TYPE_CHECKING:
    from loom.commands.context import Ctx

#: a collaborator's context budget when none is given (``agent.context.DEFAULT_BUDGET``)
CONTEXT_BUDGET = 16_000
THINK = repo.THINK

# The store side, as the memory API: pins, stashes and the trace are kept by store/memory_repo.
add_pin = repo.add_pin
pins = repo.pins
pinned = repo.pinned
put_stash = repo.put_stash
stashes = repo.stashes
record = repo.record
add_thought = repo.add_thought
trace = repo.trace
thoughts = repo.thoughts


def drop_pin(ws: Workspace, who: Participant, tree: Tree, kind: str, ref: str,
             section: str | None = None) -> None:
    """Unpin a node or document (section) in ``tree``; NOT_FOUND when nothing is pinned
    there."""
    if repo.remove_pins(ws, who, tree, kind, ref, section) == 0:
        raise LoomError("NOT_FOUND", "nothing pinned there", "see → memory for your pins")


def _stash(ws: Workspace, who: Participant, tree: Tree, label: str) -> Stash:
    item = repo.find_stash(ws, who, tree, label)
    if item is None:
        labels = [s.label for s in repo.stashes(ws, who, tree)]
        hint = ("stashed: " + ", ".join(f'"{x}"' for x in labels[:8])) if labels else \
            "nothing is stashed in this tree yet"
        raise LoomError("NOT_FOUND", f'stash "{label}" does not exist', hint)
    return item


def recall_stash(ws: Workspace, who: Participant, tree: Tree, label: str) -> Stash:
    """``recall``: the stash (by label, case-insensitively) back in context."""
    item = _stash(ws, who, tree, label)
    repo.mark_recalled(ws, who, item)
    return item


def drop_stash(ws: Workspace, who: Participant, tree: Tree, label: str) -> None:
    repo.remove_stash(ws, who, _stash(ws, who, tree, label))


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


PIN_PREVIEW = 160  # characters of a pinned node's one-line summary


def pin_line(pin: Pin, entity: Node | Document) -> str:
    """A pin as the operational memory block shows it (seed 000, SPEC-NOTES 17): a node as
    its one-line summary in quotes, ``[a7x2] "Marie's reluctance stems from..."``; a
    document or section as its name and word count, ``doc:"character notes" §motivation
    (247 words)``. The full text is one ``→ view … full`` or ``→ read`` away."""
    if isinstance(entity, Node):
        about = entity.summary or extractive_summary(entity.content) or entity.content
        return f"{f.ref(entity.label)} {quote(preview(about, PIN_PREVIEW) or '(empty)')}"
    text = entity.content
    if pin.section:
        sec = find_section(text, pin.section)
        if isinstance(sec, list):
            return f"{f.doc_ref(entity.name, pin.section)} (no such section now)"
        text = "\n".join(text.split("\n")[sec.start:sec.end])
    return f"{f.doc_ref(entity.name, pin.section)} ({words(word_count(text))})"


@dataclass
class MemoryState:
    pinned: list[str]
    stashed: list[str]
    used: int
    available: int
    exact: bool


def state(ctx: Ctx) -> MemoryState:
    """What the operational memory holds, with the tokens it costs in context."""
    shown: list[str] = []
    blocks: list[str] = []
    for p, entity in repo.pinned(ctx.ws, ctx.me, ctx.tree):
        shown.append(f.ref(entity.label) if isinstance(entity, Node)
                     else f.doc_ref(entity.name, p.section))
        blocks.append(pin_line(p, entity))  # what the pin costs in context
    items = stashes(ctx.ws, ctx.me, ctx.tree)
    recalled = [f'"{s.label}": {s.content}' for s in items if s.recalled]
    used, exact = count_tokens("\n".join(blocks + recalled))
    budget = ctx.actor.context_budget or CONTEXT_BUDGET
    return MemoryState(shown, [s.label for s in items], used, max(0, budget - used), exact)
