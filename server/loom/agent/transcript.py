"""The turn record, where turns are kept, and the conversation view text.

A turn record holds what the human sees of a collaborator turn: its message (never written
into the tree), its think blocks (shown collapsed), each command it ran with the ``✓``/``✗``
head of the result, the model usage, and whether pruning happened.

Storage goes through :class:`TurnLog`: :class:`SqliteTurnLog` (the default) keeps them in
the store's ``agent_turn`` table and logs an ``agent.turn`` change in the same transaction;
:class:`MemoryTurnLog` keeps them in memory, :class:`JsonlTurnLog` appends one JSON line per
turn to a file.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from loom.model.ids import ordered_ulid
from loom.render import formats as f
from loom.render.text import plural, relative_time, thousands
from loom.store import turns as turn_store
from loom.store.backend import storage_error
from loom.store.orm import pw

if TYPE_CHECKING:
    from loom.store.workspace import Workspace

log = logging.getLogger(__name__)

TriggerKind = Literal["ask", "annotation", "autonomous"]
StopReason = Literal["done", "iterations", "tokens", "stopped", "error"]


class SaidRecord(BaseModel):
    """A piece of the agent's message to the human, from one iteration."""

    text: str
    iteration: int = 0
    seq: int = 0  # order of everything in the turn


class ThinkRecord(BaseModel):
    content: str
    iteration: int = 0
    seq: int = 0

    @property
    def lines(self) -> int:
        return len(self.content.strip().splitlines()) if self.content.strip() else 0


class CommandRecord(BaseModel):
    line: str  # as the model wrote it
    canonical: str = ""
    seq: int = 0
    ok: bool
    head: str  # the first line of the result: "✓ …" or "✗ CODE: …"
    code: str | None = None
    iteration: int = 0
    summarized: bool = False  # the result was over the threshold and summarized
    attempts: int = 1  # > 1 when a CONFLICT was retried
    approved: bool | None = None  # approval mode: the human's answer
    executed: bool = True  # False: refused before the executor (budget, approval)
    tool: str | None = None  # an MCP tool call: SERVER.TOOL
    arguments: dict[str, Any] | None = None  # its arguments (redacted)


class CallUsage(BaseModel):
    """One model call of the collaborator."""

    iteration: int
    model: str = ""
    provider: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    context_tokens: int = 0  # Loom's own count of the assembled context
    estimated: bool = False  # True when the provider gave no usage (stopped early)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    subject_prompt_tokens: int = 0  # continue's subject-model calls
    subject_completion_tokens: int = 0
    continuations: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TurnRecord(BaseModel):
    id: str = Field(default_factory=ordered_ulid)
    agent: str
    tree: str
    trigger: TriggerKind = "ask"
    input: str = ""
    input_author: str | None = None
    input_node: str | None = None  # the annotation that triggered it
    input_target: str | None = None  # the node that annotation is on
    started: float = Field(default_factory=time.time)
    ended: float | None = None
    message: str = ""  # what the agent said to the human (never written into the tree)
    said: list[SaidRecord] = Field(default_factory=list)
    thinks: list[ThinkRecord] = Field(default_factory=list)
    commands: list[CommandRecord] = Field(default_factory=list)
    #: commands written but not run, with why (mid-line, in a code block, after commands)
    not_run: list[str] = Field(default_factory=list)
    calls: list[CallUsage] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    iterations: int = 0
    pruned: bool = False
    prune_notes: list[str] = Field(default_factory=list)
    stop_reason: StopReason = "done"
    error: str | None = None
    position: str | None = None  # the agent's node label at the end
    depth: int | None = None
    seen_seq: int = 0  # the change-log sequence when the turn started (trigger cursor)


#: the verbs whose results an earlier turn's summary keeps (the nodes it touched)
WRITTEN_VERBS = frozenset({"respond", "annotate", "link", "edit", "write", "continue", "split",
                           "bookmark", "unbookmark", "tag", "untag", "rate", "prune",
                           "unprune", "delete", "undelete"})


def written(turn: TurnRecord) -> list[str]:
    """What a turn's writes answered, in order: ``✓ annotation [ann-2] added to [b3k9]``
    (the nodes it created, edited or annotated, for its next turns' context), then the
    commands it wrote that did not run (``not run: → continue n:3 (…)``)."""
    out = []
    for c in turn.commands:
        words = (c.canonical or c.line).removeprefix("→").split()
        if c.ok and c.executed and words and words[0] in WRITTEN_VERBS:
            out.append(c.head)
    return out + list(turn.not_run)


class TurnLog(Protocol):
    """Where turn records live; swap the implementation to move them into the store."""

    def append(self, turn: TurnRecord) -> None: ...

    def turns(self, agent: str, tree: str | None = None,
              limit: int | None = None) -> list[TurnRecord]:
        """Oldest first; ``limit`` keeps the most recent."""
        ...


def _select(items: Sequence[TurnRecord], agent: str, tree: str | None,
            limit: int | None) -> list[TurnRecord]:
    out = [t for t in items if t.agent == agent and (tree is None or t.tree == tree)]
    return out[-limit:] if limit else out


class MemoryTurnLog:
    def __init__(self) -> None:
        self._items: list[TurnRecord] = []
        self._lock = threading.Lock()

    def append(self, turn: TurnRecord) -> None:
        with self._lock:
            self._items.append(turn.model_copy(deep=True))

    def turns(self, agent: str, tree: str | None = None,
              limit: int | None = None) -> list[TurnRecord]:
        with self._lock:
            return _select(list(self._items), agent, tree, limit)


class JsonlTurnLog:
    """One JSON object per line, appended with a single ``write`` under ``O_APPEND`` (a
    line is never interleaved with another process's); unreadable lines are skipped."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def append(self, turn: TurnRecord) -> None:
        data = (turn.model_dump_json() + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)

    def turns(self, agent: str, tree: str | None = None,
              limit: int | None = None) -> list[TurnRecord]:
        if not self.path.is_file():
            return []
        items = []
        with self._lock, self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    items.append(TurnRecord.model_validate(json.loads(line)))
                except (ValueError, TypeError):
                    continue
        return _select(items, agent, tree, limit)


class SqliteTurnLog:
    """Turns in the store (schema v4 ``agent_turn``): each append writes the row and an
    ``agent.turn`` change-log entry in one transaction, so other processes (the language
    server's views) catch up on it."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def append(self, turn: TurnRecord) -> None:
        """Keep ``turn``. A turn the database will not keep (a role that may not write
        it, a lost connection) ends as that error, unless it already ended on one: the
        front end says so and ``loom agent`` exits 1, rather than a traceback logged and
        the turn reported as done."""
        try:
            turn_store.add_turn(self.ws, turn.model_dump(mode="json"))
        except pw.DatabaseError as err:
            refused = storage_error(err)
            log.warning("the turn was not kept: %s", refused.message)
            if turn.stop_reason != "error":
                turn.stop_reason = "error"
                turn.error = f.error(refused.code, refused.message, refused.hint)

    def turns(self, agent: str, tree: str | None = None,
              limit: int | None = None) -> list[TurnRecord]:
        out = []
        for record in turn_store.turn_records(self.ws, agent, tree, limit):
            try:
                out.append(TurnRecord.model_validate(record))
            except (ValueError, TypeError):
                continue
        return out


# ── rendering ────────────────────────────────────────────────────────────────


def think_line(think: ThinkRecord) -> str:
    return f"▸ think (collapsed, {plural(think.lines, 'line')})"


def command_lines(cmd: CommandRecord) -> list[str]:
    shown = cmd.line.strip().splitlines()[0] if cmd.line.strip() else cmd.canonical
    if not shown.lstrip().startswith(("→", "->")):
        shown = f"→ {shown}"
    extra = []
    if cmd.attempts > 1:
        extra.append(f"after {cmd.attempts} attempts")
    if cmd.summarized:
        extra.append("result summarized")
    tail = f" ({', '.join(extra)})" if extra else ""
    return [shown, f"  {cmd.head}{tail}"]


def usage_line(turn: TurnRecord) -> str:
    u = turn.usage
    parts = [plural(turn.iterations, "iteration"),
             f"{thousands(u.prompt_tokens)} tokens in / {thousands(u.completion_tokens)} out"]
    if u.continuations:
        parts.append(f"{plural(u.continuations, 'continuation')} by the subject model")
    if turn.pruned:
        parts.append("context pruned")
    if turn.stop_reason == "iterations":
        parts.append("iteration budget spent")
    elif turn.stop_reason == "tokens":
        parts.append("token budget spent")
    elif turn.stop_reason == "stopped":
        parts.append("stopped by the human")
    elif turn.stop_reason == "error":
        parts.append("ended by an error")
    return "· " + " · ".join(parts)


def render_turn(turn: TurnRecord, now: float | None = None) -> str:
    now = time.time() if now is None else now
    when = relative_time(turn.started, now)
    lines: list[str] = []
    who = turn.input_author or "human"
    if turn.trigger == "ask":
        lines.append(f"{who} · {when}")
        lines.append(f"  {turn.input.strip() or '(asked for help)'}")
    elif turn.trigger == "annotation":
        ann = f" {f.ref(turn.input_node)}" if turn.input_node else ""
        on = f" on {f.ref(turn.input_target)}" if turn.input_target else ""
        lines.append(f"{who} · {when} · annotation{ann}{on}")
        lines.append(f"  {turn.input.strip()}")
    else:
        lines.append(f"(autonomous turn · {when})")
    lines.append(f"{turn.agent} · {when}")
    items: list[tuple[int, list[str]]] = []
    items += [(s.seq, s.text.strip().splitlines()) for s in turn.said if s.text.strip()]
    items += [(t.seq, [think_line(t)]) for t in turn.thinks]
    items += [(c.seq, command_lines(c)) for c in turn.commands]
    if not turn.said and turn.message.strip():
        items.append((10**9, turn.message.strip().splitlines()))
    for _, block in sorted(items, key=lambda x: x[0]):
        lines += [f"  {x}" if x else "" for x in block]
    lines += [f"  {x}" for x in turn.not_run]
    if turn.error:
        lines.append(f"  {turn.error.splitlines()[0]}")
    lines.append(f"  {usage_line(turn)}")
    if turn.position is not None and turn.depth is not None:
        lines.append(f"  {f.active_line(turn.agent, turn.position, turn.depth)}")
    return "\n".join(lines)


def render_conversation(turns: Sequence[TurnRecord], agent: str, tree_title: str | None = None,
                        now: float | None = None) -> str:
    """The text of ``loom://conversation/<agent>``: every turn, oldest first."""
    title = f'Conversation with {agent}' + (f' · tree "{tree_title}"' if tree_title else "")
    if not turns:
        return f"{title}\n\n(no turns yet: loom agent TREE --ask \"…\")\n"
    body = "\n\n".join(render_turn(t, now) for t in turns)
    return f"{title}\n\n{body}\n"
