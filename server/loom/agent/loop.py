"""One collaborator turn (seed 003's agent loop over seed 001's client-side parsing).

Each iteration assembles the context afresh, calls the collaborator's chat model
(streaming), and scans the reply with :func:`loom.commands.extract.extract`:

* prose is the agent's message to the human: it goes into the turn record, never into the
  tree (only ``respond``/``annotate``/``edit``/``write`` commands change the workspace);
* think blocks go to the agent's memory (``operational.add_thought``), shown collapsed;
* command lines run, batch by batch, through the one executor with the agent as the actor,
  so the same permission checks apply as for the human. Text the model writes after its
  commands (before seeing their results) is dropped, and generation is stopped as soon as
  such text starts.

The results go back to the model (over ``result_threshold`` tokens: summarized) and the
loop repeats until a reply has no commands or a budget is spent. Tool lines and results
are not persisted in the conversation: the executor logs them in the trace, and they fade
from context with the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loom.agent import assembly as agent_context
from loom.agent import results as agent_results
from loom.agent.hooks import Hooks, Messages, loom_hooks
from loom.agent.transcript import (
    CallUsage,
    CommandRecord,
    SaidRecord,
    ThinkRecord,
    TurnRecord,
)
from loom.agent.triggers import TurnInput
from loom.commands import syntax
from loom.commands.canonical import to_text
from loom.commands.catalogue import CATALOGUE
from loom.commands.context import Actor
from loom.commands.executor import Executor
from loom.commands.extract import ReplySegment, extract
from loom.commands.results import Result
from loom.errors import LoomError
from loom.llm.base import ChatMessage, ImagePart, ModelError, Provider
from loom.memory import operational as mem
from loom.memory.counting import count_tokens
from loom.model import permissions as perms
from loom.model.sampling import Sampling
from loom.render.formats import doc_ref
from loom.render.formats import error as error_text
from loom.render.text import thousands
from loom.store.backend import storage_error
from loom.store.orm import pw
from loom.store.schema import Node
from loom.store.workspace import Workspace

if TYPE_CHECKING:
    from loom.agent.outside.tools import Outside

log = logging.getLogger(__name__)

#: Commands that change the workspace: approval mode asks before running them.
WRITE_VERBS = frozenset({"respond", "annotate", "link", "edit", "write", "continue"})
#: Writes on a branch of the tree: they take the branch's turn lock.
TREE_WRITES = frozenset({"respond", "annotate", "link", "edit", "continue"})
CUT_NOTE = ("(Your text after the commands was not used: commands run before you go on, so "
            "stop after them and wait for their results.)")

Approver = Callable[[str], Awaitable[bool] | bool]
Summarizer = Callable[[str], Awaitable[str]]


class _RoleRefusal(Exception):
    sqlstate = "42501"  # insufficient_privilege: what PostgreSQL says to a role's write


#: What the executor answers when the database refuses a write for this process's role
#: (the store's own words, asked of it rather than copied).
DATABASE_REFUSED = storage_error(_RoleRefusal())


def refused_by_database(result: Result) -> bool:
    """Whether ``result`` is the database refusing a write for this role: every later
    write (the position, the trace, the turn log) would be refused too, so the turn ends
    there instead of the model being told to try again."""
    return (not result.ok and result.code == DATABASE_REFUSED.code
            and result.message == DATABASE_REFUSED.message)


#: Tokens a turn's first call keeps free for the turn's exchanges (at most a fifth of the
#: context budget).
TURN_RESERVE = 4_000

#: Appended to the last model call a turn's budgets allow.
LAST_CALL = ("(This is your last model call of this turn. Commands you write now still run, "
             "but you will not see their results: end with your message to the human, what "
             "you found and what you would do next.)")


@dataclass
class Budgets:
    max_iterations: int = 32  # model calls per turn (seed 003)
    max_turn_tokens: int = 200_000  # prompt + completion tokens over the turn's calls
    max_continuations: int = 10  # subject-model continuations per turn (the sum of n)
    result_threshold: int = 1_000  # tokens; larger results are summarized (decision 12)
    context_tokens: int = agent_context.DEFAULT_BUDGET
    reply_tokens: int = 1_024  # max tokens per model reply


@dataclass
class LockPolicy:
    """Turn locks around writes on a branch: a CONFLICT is retried this many times."""

    attempts: int = 5
    backoff_s: float = 0.25
    backoff_max_s: float = 2.0
    ttl_s: float = 120.0
    typing_window_s: float = 300.0  # uncommitted buffer work this recent counts as typing


@dataclass
class AgentEvent:
    """What a front end shows as the turn goes: ``delta`` (streamed model text), ``said``
    (the agent's message), ``think``, ``command`` (before it runs), ``result``,
    ``approval`` (asking), ``notice``, ``error``, ``done``."""

    kind: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[AgentEvent], None]


@dataclass
class TurnOptions:
    """How a turn runs, beside what it runs with (the executor, the actor, the provider):
    each field left out is what a bare turn takes."""

    budgets: Budgets = field(default_factory=Budgets)
    locks: LockPolicy = field(default_factory=LockPolicy)
    approve: Approver | None = None
    on_event: EventSink | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    system_prompt: str | None = None
    history: list[agent_context.HistoryItem] = field(default_factory=list)
    temperature: float | None = None
    summarize: Summarizer | None = None
    early_stop: bool = True
    model_name: str = ""
    count: agent_context.Counter | None = None
    hooks: Hooks = field(default_factory=loom_hooks)
    #: the MCP servers' tools (``agent/outside``), called beside the commands
    outside: Outside | None = None
    sees_images: bool = False  # images tools return go to the model as images


class _Stopped(Exception):
    """The human pressed stop."""


# ── scanning a reply ─────────────────────────────────────────────────────────


def _first_batch(segments: list[ReplySegment]) -> int | None:
    return next((i for i, s in enumerate(segments) if s.kind == "batch"), None)


def cut_index(segments: list[ReplySegment]) -> int | None:
    """The first segment not to use: prose with words in it after the first batch (the
    model writing on before its results came back)."""
    first = _first_batch(segments)
    if first is None:
        return None
    for i in range(first + 1, len(segments)):
        if segments[i].kind == "prose" and segments[i].text.strip():
            return i
    return None


def batch_complete(text: str) -> bool:
    """While streaming: has the model started writing prose after a finished batch? Only
    complete lines count, and an open multi-line quote keeps the batch open."""
    end = text.rfind("\n")
    if end < 0:
        return False
    segments = extract(text[: end + 1])
    cut = cut_index(segments)
    if cut is None:
        return False
    for seg in segments[:cut]:
        for _, cmd in seg.commands:
            if isinstance(cmd, syntax.ParseError) and cmd.message.startswith("unterminated"):
                return False
    return True


def command_texts(text: str, seg: ReplySegment
                  ) -> list[tuple[str, syntax.Command | syntax.ParseError]]:
    """Each command of a batch with the text the model wrote for it (quotes may span
    lines)."""
    lines = text.split("\n")
    out = []
    for k, (line_no, cmd) in enumerate(seg.commands):
        last = seg.commands[k + 1][0] - 1 if k + 1 < len(seg.commands) else seg.end_line
        raw = "\n".join(x.rstrip("\r") for x in lines[line_no:last + 1]).strip()
        out.append((raw, cmd))
    return out


# ── results ──────────────────────────────────────────────────────────────────


def _tokens(text: str) -> int:
    return count_tokens(text)[0]


def summarize_result(text: str, threshold: int, cmd: syntax.Command | None = None,
                     less: str | None = None) -> str:
    """An over-threshold result, extractively: its first line, its beginning up to a quarter
    of the threshold (a line too long for what is left is cut inside, at a word: a branch
    read as prose is one line per paragraph, and came back as its first line only), and a
    note that it was summarized with a hint for reading less of what ``cmd`` read."""
    total = _tokens(text)
    lines = text.split("\n")
    kept = [lines[0]]
    used = _tokens(lines[0])
    room = max(50, threshold // 4)
    for line in lines[1:]:
        cost = _tokens(line) + 1
        if used + cost > room:
            left = room - used
            if left >= 20:  # a useful piece of the line, cut at a word
                chars = int(len(line) * left / cost)
                piece = line[:chars].rsplit(" ", 1)[0] if " " in line[:chars] else line[:chars]
                kept.append(piece.rstrip() + " …")
            else:
                kept.append("…")
            break
        kept.append(line)
        used += cost
    kept.append(f"[result summarized: {thousands(total)} tokens is over the "
                f"{thousands(threshold)}-token limit for inline results; "
                f"{less or _read_less(cmd)}]")
    return "\n".join(kept)


def _read_less(cmd: syntax.Command | None) -> str:
    """How to ask for less of what ``cmd`` read."""
    if isinstance(cmd, syntax.View) and cmd.branch:
        return (f"read less of the branch: → view branch:[a node nearer {cmd.branch}] "
                "as:prose, or a node at a time: → view [id] full")
    if isinstance(cmd, syntax.View):
        return "ask for less: → view [id] (its summary)"
    if isinstance(cmd, syntax.Read) and cmd.doc is not None:
        return f"read part of it: → read {doc_ref(cmd.doc)} lines:1-40 or section:…"
    if isinstance(cmd, syntax.ShowTree):
        return "ask for less: → tree depth:2, or → tree from:[id]"
    if isinstance(cmd, syntax.List):
        return "ask for less: → view [id] for one of them"
    return ("ask for less, e.g. → view [id] (summary), → tree depth:2, → read doc:\"…\" "
            "lines:1-40 or section:…")


def human_typing(ws: Workspace, node: Node, agent_id: str, window_s: float) -> str | None:
    """The name of someone else with uncommitted buffer work at ``node`` (typing there)."""
    for row in ws.recent_buffers(node.tree_id, ws.clock() - window_s, exclude=agent_id):
        pending = {p.get("node") for p in (row.pending or []) if isinstance(p, dict)}
        if (row.tip == node.id and row.working.strip()) or node.id in pending:
            p = ws.participant_by_id(row.participant)
            return p.name if p else "someone"
    return None


def _subject_usage(ws: Workspace, created: list[str]) -> tuple[int, int]:
    """Prompt and completion tokens the subject model spent on these nodes (one response
    shared by several completions is counted once)."""
    seen: set[tuple[Any, ...]] = set()
    prompt = completion = 0
    for g in ws.generations(created):
        u = g.usage or {}
        key = (g.raw, u.get("prompt_tokens"), u.get("completion_tokens"))
        if g.raw is not None and key in seen:
            continue
        seen.add(key)
        prompt += u.get("prompt_tokens") or 0
        completion += u.get("completion_tokens") or 0
    return prompt, completion


async def _bridge(source: threading.Event, target: asyncio.Event) -> None:
    while not source.is_set():
        await asyncio.sleep(0.02)
    target.set()


# ── the loop ─────────────────────────────────────────────────────────────────


class TurnLoop:
    """Runs one turn for ``actor`` (the collaborator) and fills a :class:`TurnRecord`."""

    def __init__(self, executor: Executor, actor: Actor, provider: Provider,
                 options: TurnOptions | None = None) -> None:
        o = options if options is not None else TurnOptions()
        self.executor = executor
        self.ws = executor.ws
        self.actor = actor
        self.provider = provider
        self.budgets = o.budgets
        self.locks = o.locks
        self.approve = o.approve
        self.on_event = o.on_event
        self.cancel = o.cancel
        self.system_prompt = o.system_prompt
        self.history = o.history
        self.temperature = o.temperature
        self.summarize = o.summarize
        self.early_stop = o.early_stop
        self.model_name = o.model_name
        self.count = o.count
        self.hooks = o.hooks
        self.outside = o.outside if o.outside else None  # an Outside with no tools: none
        self.sees_images = o.sees_images
        self._seq = 0
        #: the turn's first user message, sent again as it was by every later call of the
        #: turn, so each call's prompt is the one before it and more (a prefix a provider
        #: caches); what changes since (memory, position) follows the results it changed
        self._head: str | None = None
        self._state = ""  # the memory block and loom context as the model last saw them

    # -- plumbing --
    def _emit(self, kind: str, text: str = "", **data: Any) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(AgentEvent(kind, text, data))
        except Exception:  # a broken display must not break the turn
            log.exception("agent event handler failed")

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    async def _wait_for_stop(self) -> None:
        while not self.cancel.is_set():
            await asyncio.sleep(0.02)

    async def _until_stopped(self, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` unless the human presses stop first."""
        task = asyncio.ensure_future(awaitable)
        stopper = asyncio.ensure_future(self._wait_for_stop())
        try:
            done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                return task.result()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise _Stopped
        finally:
            stopper.cancel()

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.cancel.is_set():
                raise _Stopped
            await asyncio.sleep(min(0.02, max(0.0, end - time.monotonic())))
        if self.cancel.is_set():
            raise _Stopped

    # -- the turn --
    async def run(self, turn_input: TurnInput, record: TurnRecord) -> TurnRecord:
        exchanges: list[agent_context.Exchange] = []
        try:
            if self.outside is not None:  # the servers connected (or given up on)
                await self._until_stopped(self.outside.ready())
            for iteration in range(1, self.budgets.max_iterations + 1):
                if self.cancel.is_set():
                    raise _Stopped
                if record.usage.total >= self.budgets.max_turn_tokens:
                    record.stop_reason = "tokens"
                    self._emit("notice", f"token budget spent "
                               f"({thousands(self.budgets.max_turn_tokens)} tokens per turn)")
                    break
                messages, tokens = await asyncio.to_thread(self._messages, turn_input,
                                                           exchanges, record)
                if self._last_call(iteration, tokens, record):
                    # told, so the turn ends with a word to the human, not mid-work with
                    # no message at all
                    messages[-1] = messages[-1].model_copy(
                        update={"content": f"{messages[-1].content}\n\n{LAST_CALL}"})
                record.iterations = iteration
                reply = await self._call(messages, iteration, tokens, record)
                exchange = await self._handle_reply(reply, iteration, record)
                if exchange is None:
                    break
                exchanges.append(exchange)
            else:
                record.stop_reason = "iterations"
                self._emit("notice", f"iteration budget spent "
                           f"({self.budgets.max_iterations} model calls per turn)")
        except _Stopped:
            record.stop_reason = "stopped"
            self._emit("notice", "stopped")
        except ModelError as err:
            record.stop_reason = "error"
            record.error = err.render()
            self._emit("error", record.error)
        except (LoomError, pw.DatabaseError) as raised:
            # a before-turn step refused (a budget too small, say), or the database refused
            # a write for this role (a command's; a turn lock's or a thought's, which the
            # store raises as the executor would have answered)
            err = raised if isinstance(raised, LoomError) else storage_error(raised)
            if "storage error" in err.message:  # not one the store could name: a bug?
                log.warning("storage error in a collaborator turn", exc_info=True)
            record.stop_reason = "error"
            record.error = error_text(err.code, err.message, err.hint)
            self._emit("error", record.error)
        record.message = "\n\n".join(s.text for s in record.said if s.text.strip())
        return record

    def _last_call(self, iteration: int, tokens: int, record: TurnRecord) -> bool:
        """No model call of this turn can follow this one: the iteration budget's last, or
        what it may spend leaves the token budget spent."""
        b = self.budgets
        return (iteration == b.max_iterations or
                record.usage.total + tokens + b.reply_tokens >= b.max_turn_tokens)

    def _messages(self, turn_input: TurnInput, exchanges: list[agent_context.Exchange],
                  record: TurnRecord) -> tuple[list[ChatMessage], int]:
        """This call's messages, at full size, through the before-turn steps (Loom's own:
        pruning to the context budget first, redaction last), and their token count."""
        # a turn's first call leaves room for the turn's own exchanges, so that its later
        # calls extend its prompt instead of pruning it again (a broken cached prefix)
        budget = self.budgets.context_tokens
        reserve = min(budget // 5, TURN_RESERVE) if self._head is None else 0
        draft = agent_context.draft(
            self.ws, self.actor, budget, reserve=reserve, turn_input=turn_input.text,
            exchanges=exchanges, history=self.history, system_prompt=self.system_prompt,
            approval=self.approve is not None, count=self.count, head=self._head,
            tools=self._tools_text())
        full = draft.build(draft.levels[0])
        messages = self.hooks.on_before_turn(Messages(full.messages, draft, full))
        assembly = draft.fitted  # what the pruning step chose (None: no pruning step ran)
        chosen = assembly if assembly is not None else full
        if self._head is None or chosen.messages[1].content != self._head:
            self._head = chosen.messages[1].content
            self._state = agent_context.state_key(chosen.sections.get("memory", "") +
                                                  chosen.sections.get("loom", ""))
        if assembly is not None and assembly.pruned:
            record.pruned = True
            for note in assembly.prune_notes:
                if note not in record.prune_notes:
                    record.prune_notes.append(note)
        if assembly is not None and \
                [m.content for m in messages] == [m.content for m in assembly.messages]:
            return messages, assembly.tokens
        # a step changed them: count what is sent
        return messages, _tokens("\n\n".join(m.content for m in messages)) + 8 * len(messages)

    def _tools_text(self) -> str:
        """The MCP tools' section of the system prompt (the same all turn long)."""
        if self.outside is None:
            return ""
        return self.outside.context(self.approve is not None)

    async def _call(self, messages: list[ChatMessage], iteration: int, context_tokens: int,
                    record: TurnRecord) -> str:
        """One streamed model call; returns the reply text (cut short when the model wrote
        on after its commands)."""
        stop = asyncio.Event()
        streamed: list[str] = []
        cut = {"early": False}

        def on_delta(piece: str) -> None:
            streamed.append(piece)
            self._emit("delta", piece, iteration=iteration)
            if self.early_stop and "\n" in piece and not cut["early"] and \
                    batch_complete("".join(streamed)):
                cut["early"] = True
                stop.set()

        bridge = asyncio.create_task(_bridge(self.cancel, stop))
        started = time.monotonic()
        usage = CallUsage(iteration=iteration, context_tokens=context_tokens,
                          model=self.model_name)
        try:
            result = await self.provider.chat(
                messages, Sampling(tokens=self.budgets.reply_tokens,
                                   temperature=self.temperature),
                on_delta=on_delta, cancel=stop)
            text = result.completions[0].text if result.completions else ""
            usage.model, usage.provider = result.model, result.provider
            usage.prompt_tokens = result.usage.prompt_tokens
            usage.completion_tokens = result.usage.completion_tokens
            usage.latency_ms = result.latency_ms
        except ModelError as err:
            if err.kind != "cancelled" or self.cancel.is_set() or not cut["early"]:
                if self.cancel.is_set():
                    partial = "".join(streamed)
                    self._keep_partial(partial, iteration, record)
                    # the prompt was sent and part of a reply came: the turn's usage says
                    # so (a stopped turn said "0 tokens in")
                    usage.prompt_tokens, usage.completion_tokens = context_tokens, \
                        _tokens(partial)
                    usage.estimated = True
                    usage.latency_ms = (time.monotonic() - started) * 1000
                    record.calls.append(usage)
                    record.usage.prompt_tokens += context_tokens
                    record.usage.completion_tokens += usage.completion_tokens
                    raise _Stopped from None
                raise
            text = "".join(streamed)
            usage.latency_ms = (time.monotonic() - started) * 1000
            usage.provider = getattr(self.provider, "name", "")
        finally:
            bridge.cancel()
        if usage.prompt_tokens is None:
            usage.prompt_tokens, usage.estimated = context_tokens, True
        if usage.completion_tokens is None:
            usage.completion_tokens, usage.estimated = _tokens(text), True
        record.calls.append(usage)
        record.usage.prompt_tokens += usage.prompt_tokens or 0
        record.usage.completion_tokens += usage.completion_tokens or 0
        return text

    def _keep_partial(self, partial: str, iteration: int, record: TurnRecord) -> None:
        """Stopped mid-reply: its prose is kept for the human (marked); nothing runs."""
        segments = extract(partial)
        first = _first_batch(segments)
        prose = "".join(s.text + "\n" for s in segments[:first] if s.kind == "prose").strip()
        if prose:
            record.said.append(SaidRecord(text=prose + " …(stopped)", iteration=iteration,
                                          seq=self._next()))

    async def _handle_reply(self, text: str, iteration: int,
                            record: TurnRecord) -> agent_context.Exchange | None:
        """Say, think, run; the exchange to feed back, or None when the turn is over."""
        segments = extract(text)
        cut = cut_index(segments)
        used = segments if cut is None else segments[:cut]
        kept = text[: used[-1].end] if used else ""
        ran_any = False
        results: list[str] = []
        images: list[ImagePart] = []
        for seg in used:
            if seg.kind == "prose":
                if seg.text.strip():
                    record.said.append(SaidRecord(text=seg.text.strip(), iteration=iteration,
                                                  seq=self._next()))
                    self._emit("said", seg.text.strip(), iteration=iteration)
            elif seg.kind == "think":
                content = (seg.content or "").strip()
                if content:
                    await asyncio.to_thread(mem.add_thought, self.ws, self.actor.participant,
                                            self.actor.tree, content)
                    think = ThinkRecord(content=content, iteration=iteration, seq=self._next())
                    record.thinks.append(think)
                    self._emit("think", content, lines=think.lines, iteration=iteration)
            else:
                for raw, cmd in command_texts(text, seg):
                    if self.cancel.is_set():
                        raise _Stopped
                    ran_any = True
                    if self.outside is not None and isinstance(cmd, syntax.ParseError) and \
                            self.outside.claims(raw.split("\n", 1)[0]):
                        result_text, got = await self._run_outside(raw, iteration, record)
                        images += got
                        results.append(f"{agent_results.echo(raw, cmd)}\n{result_text}")
                        continue
                    result_text = await self._run_command(raw, cmd, iteration, record)
                    results.append(f"{agent_results.echo(raw, cmd)}\n{result_text}")
        skipped = agent_results.not_run(segments, len(used))
        if skipped:
            record.not_run += skipped
            for line in skipped:
                self._emit("notice", line, iteration=iteration)
        if not ran_any:
            # the turn ends on a message (an arrow in an example is no request to run it);
            # what did not run is said in the record and the next turn's context
            return None
        parts = [*results, *(["\n".join(skipped)] if skipped else [])]
        # what the commands changed of the memory block and the position, after their
        # results (the turn's first message is not rebuilt: see _head)
        memory, loom = await asyncio.to_thread(agent_context.state_sections, self.ws,
                                               self.actor, self.approve is not None)
        if agent_context.state_key(memory + loom) != self._state:
            self._state = agent_context.state_key(memory + loom)
            parts += [x for x in (memory, loom) if x]
        if cut is not None:
            parts.append(CUT_NOTE)
        return agent_context.Exchange(kept.strip(), "\n\n".join(parts), images)

    # -- one command --
    async def _run_command(self, raw: str, cmd: syntax.Command | syntax.ParseError, iteration: int,
                           record: TurnRecord) -> str:
        shown = raw.split("\n", 1)[0] if isinstance(cmd, syntax.ParseError) else raw
        self._emit("command", shown, iteration=iteration)
        rec = CommandRecord(line=shown, ok=False, head="", iteration=iteration,
                            seq=self._next())
        if isinstance(cmd, syntax.ParseError):
            result = await asyncio.to_thread(self.executor.execute, shown, self.actor)
        else:
            rec.canonical = "→ think" if isinstance(cmd, syntax.Think) else to_text(cmd)
            result = await self._guarded(cmd, rec, record, typed=raw)
        rec.ok, rec.code = result.ok, result.code
        rec.canonical = rec.canonical or result.command
        rec.head = result.text.split("\n", 1)[0]
        text = result.text
        if not isinstance(cmd, syntax.ParseError):
            text = await asyncio.to_thread(agent_results.with_full_texts, self.ws, cmd,
                                           result, self.budgets.result_threshold, _tokens)
        if _tokens(text) > self.budgets.result_threshold:
            rec.summarized = True
            text = await self._summarized(text, None if isinstance(cmd, syntax.ParseError)
                                          else cmd)
        record.commands.append(rec)
        self.hooks.on_tool_result(rec.canonical or shown, result)
        self._emit("result", rec.head, ok=rec.ok, code=rec.code, line=shown,
                   summarized=rec.summarized, iteration=iteration)
        if refused_by_database(result):
            raise LoomError("PERMISSION_DENIED", result.message or "", result.hint)
        return text

    async def _summarized(self, text: str, cmd: syntax.Command | None = None,
                          less: str | None = None) -> str:
        if self.summarize is not None:
            try:
                gist = await self.summarize(text)
                head = text.split("\n", 1)[0]
                return (f"{head}\nsummary: {gist.strip()}\n[result summarized: "
                        f"{thousands(_tokens(text))} tokens is over the "
                        f"{thousands(self.budgets.result_threshold)}-token limit]")
            except Exception:
                log.warning("result summary by model failed; using the extractive one",
                            exc_info=True)
        return summarize_result(text, self.budgets.result_threshold, cmd, less)

    # -- one MCP tool call --
    async def _run_outside(self, raw: str, iteration: int,
                           record: TurnRecord) -> tuple[str, list[ImagePart]]:
        """A ``→ SERVER.TOOL …`` line: read and checked (a wrong call is not made),
        approved (approval mode, unless its server says ``approval = "never"``), called,
        traced and recorded like a command; its text under the same threshold."""
        assert self.outside is not None
        prepared = self.outside.prepare(raw)
        self._emit("command", prepared.line.split("\n", 1)[0], iteration=iteration)
        rec = CommandRecord(line=prepared.line, canonical=prepared.command, ok=False, head="",
                            iteration=iteration, seq=self._next(),
                            tool=prepared.call.name if prepared.call else None,
                            arguments=prepared.arguments if prepared.call else None)
        images: list[ImagePart] = []
        result = prepared.result
        if result is not None:
            rec.executed = False
        elif self.approve is not None and self.outside.needs_approval(prepared):
            self._emit("approval", prepared.command)
            answer = self.approve(prepared.command)
            if inspect.isawaitable(answer):
                answer = await self._until_stopped(answer)
            rec.approved = bool(answer)
            if not answer:
                rec.executed = False
                result = Result.failure(
                    "PERMISSION_DENIED", f"the human declined {prepared.command}",
                    "ask the human in your message, or try something else", prepared.command)
        if result is None:
            result, images = await self._until_stopped(
                self.outside.run(prepared, self.sees_images))
        try:
            await asyncio.to_thread(mem.record, self.ws, self.actor.participant,
                                    self.actor.tree, prepared.command, result.ok, result.code,
                                    result.message or "")
        except pw.DatabaseError:  # the call's own result stands (as the executor's do)
            log.warning("could not record the trace entry for %s", prepared.command)
        rec.ok, rec.code = result.ok, result.code
        rec.head = result.text.split("\n", 1)[0]
        text = result.text
        if _tokens(text) > self.budgets.result_threshold:
            rec.summarized = True
            tool = prepared.call.name if prepared.call else "the tool"
            text = await self._summarized(
                text, None, f"ask {tool} for less (→ help {tool} shows its arguments)")
        record.commands.append(rec)
        self.hooks.on_tool_result(prepared.command, result)
        self._emit("result", rec.head, ok=rec.ok, code=rec.code, line=prepared.line,
                   summarized=rec.summarized, iteration=iteration)
        return text, images

    def _refuse(self, cmd: syntax.Command, code: str, message: str, hint: str) -> Result:
        """A command refused before the executor, traced like any other."""
        result = Result.failure(code, message, hint, to_text(cmd))
        with contextlib.suppress(Exception):
            mem.record(self.ws, self.actor.participant, self.actor.tree, to_text(cmd),
                       False, code, message)
        return result

    async def _guarded(self, cmd: syntax.Command, rec: CommandRecord,
                       record: TurnRecord, typed: str | None = None) -> Result:
        """Budgets, approval and the branch turn lock around one executor call."""
        allowed = perms.missing_for(CATALOGUE[cmd.verb].permission,
                                    self.actor.permissions) is None
        n = 0
        if isinstance(cmd, syntax.Continue) and allowed:
            n = cmd.total()
            left = self.budgets.max_continuations - record.usage.continuations
            if 1 <= n <= 10 and n > left:
                rec.executed = False
                return self._refuse(
                    cmd, "LIMIT_EXCEEDED",
                    f"this turn's continuation budget is spent ({record.usage.continuations} "
                    f"of {self.budgets.max_continuations} used)",
                    f"use n:{left} or less" if left > 0 else
                    "ask the human to generate, or continue in a later turn")
        if self.approve is not None and cmd.verb in WRITE_VERBS and allowed:
            self._emit("approval", to_text(cmd))
            answer = self.approve(to_text(cmd))
            if inspect.isawaitable(answer):
                answer = await self._until_stopped(answer)
            rec.approved = bool(answer)
            if not answer:
                rec.executed = False
                return self._refuse(
                    cmd, "PERMISSION_DENIED", f"the human declined {to_text(cmd)}",
                    "ask the human in your message, or try something else")
        lock_node = None
        if cmd.verb in TREE_WRITES and allowed:
            lock_node = self._target(cmd)
            if lock_node is not None:
                failure, rec.attempts = await self._acquire(lock_node)
                if failure is not None:
                    with contextlib.suppress(Exception):
                        mem.record(self.ws, self.actor.participant, self.actor.tree,
                                   to_text(cmd), False, failure.code, failure.message or "")
                    return failure
        try:
            result = await asyncio.to_thread(self.executor.execute, cmd, self.actor, None,
                                             self.cancel, typed)
        finally:
            if lock_node is not None:
                with contextlib.suppress(Exception):
                    self.ws.release_turn(lock_node, self.actor.participant)
        if isinstance(cmd, syntax.Continue) and result.ok:
            created = list(result.data.get("created", []))
            record.usage.continuations += len(created)
            p, c = await asyncio.to_thread(_subject_usage, self.ws, created)
            record.usage.subject_prompt_tokens += p
            record.usage.subject_completion_tokens += c
        return result

    def _target(self, cmd: syntax.Command) -> Node | None:
        """The node a tree write works on (its branch's lock key), or None when the
        reference does not resolve (the executor then reports it)."""
        ref = getattr(cmd, "from_", None) if isinstance(cmd, syntax.Continue) else \
            getattr(cmd, "node", None)
        try:
            if not ref:
                return self.ws.position(self.actor.participant, self.actor.tree)[0]
            return self.ws.resolve(self.actor.tree, ref)
        except LoomError:
            return None

    async def _acquire(self, node: Node) -> tuple[Result | None, int]:
        """The turn lock on ``node``'s branch; the human's typing and locks win: retried
        with backoff, then reported as ``✗ CONFLICT``."""
        policy = self.locks
        err: LoomError | None = None
        me = self.actor.participant
        for attempt in range(1, policy.attempts + 1):
            typing = human_typing(self.ws, node, me.id, policy.typing_window_s)
            if typing is None:
                try:
                    self.ws.acquire_turn(node, me, ttl_s=policy.ttl_s)
                    return None, attempt
                except LoomError as e:
                    if e.code != "CONFLICT":
                        raise
                    err = e
            else:
                err = LoomError("CONFLICT", f"{typing} is typing on [{node.label}]")
            self._emit("notice", f"{err.message}: waiting (attempt {attempt})")
            if attempt < policy.attempts:
                delay = min(policy.backoff_max_s, policy.backoff_s * 2 ** (attempt - 1))
                await self._sleep(delay * (0.5 + random.random() / 2))
        assert err is not None
        return Result.failure(
            "CONFLICT", f"{err.message} (gave up after {policy.attempts} attempts)",
            "the human is working on this branch: try another branch, or ask them in your "
            "message"), policy.attempts
