"""One exploration: breadth-first from a node, as the collaborator.

Each level continues the frontier's nodes (``→ continue from X n:N`` through the executor:
its permission check, branch lock, trace, the tree's models and sampling), asks the judge to
score every new branch, prunes those below the threshold (``→ prune X`` through the
executor: undoable) and keeps the best ``n`` as the next frontier. It ends at the depth, when
the token budget (subject and judge tokens) is spent, when nothing is left to expand, or
when stopped. Stopping cancels a continuation in flight through the executor's cancel (the
subject model's text is stored only once complete) and a judge call in flight; no command
starts after it, so nothing is half-written: a branch below the threshold is pruned in the
same step that scored it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loom.agent.explore import judge
from loom.agent.loop import human_typing
from loom.commands import syntax
from loom.commands.context import Actor, ExploreRequest, ExploreSummary
from loom.commands.executor import Executor
from loom.errors import LoomError
from loom.llm.base import ChatMessage, ModelError, Provider
from loom.llm.redacting import redacting
from loom.memory import operational as mem
from loom.memory.counting import count_tokens
from loom.model.sampling import Sampling
from loom.render.text import preview
from loom.store import explore_log, reader
from loom.store.feed import ChangeCursor
from loom.store.schema import Node
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)

#: The judge's reply is one line: a score and a reason.
JUDGE_TOKENS = 96
#: How often a running exploration reads the change log for a stop asked by another
#: process, and keeps its session alive (``store/sessions.SESSION_STALE_S`` is 30 s).
WATCH_S = 0.25
HEARTBEAT_S = 10.0


@dataclass
class ExploreEvent:
    """What an exploration reports as it goes: ``started``, ``made`` (new branches),
    ``scored``, ``pruned``, ``waiting`` (a branch lock or the human typing), ``failed``
    (a step that did not work: the exploration goes on) and ``done``."""

    kind: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[ExploreEvent], None]


@dataclass
class Run:
    """An exploration's place in the change log: the session it keeps alive (its run id in
    ``explore.start``/``explore.end``) and a cursor from just before its start, on which it
    sees a stop asked by another process (``explore.stop``)."""

    session: str
    cursor: ChangeCursor


@dataclass
class LockWait:
    """How long to wait for a branch someone else is generating or typing on."""

    wait_s: float = 60.0
    backoff_s: float = 0.25
    backoff_max_s: float = 2.0
    typing_window_s: float = 300.0


class Exploration:
    """One exploration of one tree, run on a thread of its own (:meth:`run`)."""

    def __init__(self, ws: Workspace, executor: Executor, actor: Actor,
                 request: ExploreRequest, provider: Callable[[], Provider], judge_name: str,
                 on_event: EventSink | None = None, locks: LockWait | None = None,
                 run: Run | None = None) -> None:
        self.ws = ws
        self.executor = executor
        self.actor = actor
        self.request = request
        self.make_provider = provider
        self.judge_name = judge_name
        self.on_event = on_event
        self.locks = locks or LockWait()
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self.made = self.scored = self.pruned = 0
        self.subject_tokens = self.judge_tokens = 0
        #: seconds the model calls themselves took (the subject's latency as recorded, the
        #: judge's calls as timed): what the exploration would cost without Loom
        self.subject_s = self.judge_s = 0.0
        self.judge_calls = 0
        self.failures: list[str] = []
        self.unscored: list[str] = []  # the branches the judge gave no score, asked twice
        self.ended: str | None = None
        self.log_run = run
        #: who stopped it from another process (a participant id), if one did
        self.stopped_by: str | None = None

    @property
    def spent(self) -> int:
        return self.subject_tokens + self.judge_tokens

    def summary(self) -> ExploreSummary:
        return ExploreSummary(
            source=self.request.source.label, made=self.made, scored=self.scored,
            pruned=self.pruned, spent=self.spent, budget=self.request.budget,
            ended=self.ended, explorer=self.actor.participant.name, judge=self.judge_name,
            failures=tuple(self.failures))

    def _emit(self, kind: str, text: str, **data: Any) -> None:
        if self.on_event is None:
            return
        data.setdefault("summary", self.summary())  # the figures so far, for progress
        try:
            self.on_event(ExploreEvent(kind, text, data))
        except Exception:  # a listener's bug must not end the exploration
            log.exception("exploration listener failed")

    def _fail(self, text: str) -> None:
        self.failures.append(text)
        self._emit("failed", text)

    # ── the run ──────────────────────────────────────────────────────────────
    def run(self) -> None:
        """The thread's body: the whole exploration, then ``done``."""
        try:
            asyncio.run(self._run())
        except Exception as err:  # the boundary: a bug ends the exploration, said once
            log.exception("exploration failed")
            self.ended = f"error: {type(err).__name__}: {err}"
        finally:
            if self.ended is None:
                self.ended = "stopped" if self.cancel.is_set() else "error"
            s = self.summary()
            self._log_end(s)
            self._emit("done", f"explored from [{s.source}]: {s.made} made, {s.scored} "
                       f"scored, {s.pruned} pruned · {s.spent:,} of {s.budget:,} tokens "
                       f"({self.ended}){self._unscored_note()}", summary=s,
                       stopped_by=self.stopped_by)
            self.finished.set()

    def _unscored_note(self) -> str:
        """`` · the judge gave no score for 2 branches ([a7x2] [b3k9])``, said in the report
        so a judge that gave up is seen where the exploration's end is (not in a log)."""
        if not self.unscored:
            return ""
        n = len(self.unscored)
        return (f" · the judge gave no score for {n} branch{'es' if n != 1 else ''} "
                f"({' '.join(f'[{x}]' for x in self.unscored)})")

    def _log_end(self, s: ExploreSummary) -> None:
        """``explore.end`` in the change log (its start was logged by ``Explorations``), so
        every process sees that it ended, and its session closed."""
        r, run = self.request, self.log_run
        if run is None:  # not started through Explorations: no start was logged
            return
        try:
            explore_log.log_end(self.ws, r.tree.id, r.source.id, self.actor.participant.id,
                                run.session, made=s.made, scored=s.scored, pruned=s.pruned,
                                spent=s.spent, budget=s.budget, ended=s.ended,
                                stopped_by=self.stopped_by)
        except Exception:  # the exploration stands without its log line (its session
            log.warning("could not log explore.end")  # closing says it ended all the same)
        with contextlib.suppress(Exception):
            self.ws.close_session(run.session)

    async def _watch(self) -> None:
        """Until the exploration ends: a stop asked from another process (``explore.stop``
        in the change log) sets its cancel, as ``→ explore end`` in this process does;
        and its session's heartbeat says it still runs."""
        run = self.log_run
        if run is None:
            return
        loop = asyncio.get_running_loop()
        beat = loop.time()
        while not self.cancel.is_set():
            await asyncio.sleep(WATCH_S)
            try:
                changes = await asyncio.to_thread(run.cursor.poll)
                asked = explore_log.stop_asked(changes, run.session)
                if asked is not None:
                    self.stopped_by = asked.actor
                    self.cancel.set()
                if loop.time() - beat >= HEARTBEAT_S:
                    beat = loop.time()
                    await asyncio.to_thread(self.ws.heartbeat, run.session)
            except Exception:  # the database away for a moment: the next read sees it
                log.warning("could not read the change log for a stop", exc_info=True)

    async def _run(self) -> None:
        watcher = asyncio.ensure_future(self._watch())
        try:
            await self._explore()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _explore(self) -> None:
        r = self.request
        self._emit("started", f"exploring from [{r.source.label}] depth:{r.depth} n:{r.n}",
                   source=r.source.id, starter=r.starter.id)
        try:
            provider = redacting(self.make_provider())
        except ModelError as err:  # the judge cannot run here (a missing extra, …)
            self._fail(f"MODEL_ERROR: the judge cannot run: {err.message}")
            self.ended = "error: no judge"
            return
        try:
            frontier = [r.source]
            for level in range(1, r.depth + 1):
                kept: list[tuple[int, Node]] = []
                scored_before = self.scored
                for parent in frontier:
                    if self._over():
                        return
                    created = await self._expand(parent)
                    if created is None:
                        return
                    for node in created:
                        if self._over():
                            return
                        verdict = await self._judge(provider, node)
                        if verdict is None:
                            continue
                        if verdict.score < r.threshold:
                            await self._prune(node)
                        else:
                            kept.append((verdict.score, node))
                if level == r.depth:
                    break
                if not kept:
                    self.ended = (f"no branch reached {r.threshold}/10 at level {level}"
                                  if self.scored > scored_before
                                  else f"no branch was scored at level {level}")
                    return
                kept.sort(key=lambda sn: -sn[0])  # stable: ties keep the order made
                frontier = [node for _, node in kept[:r.n]]
            self.ended = f"depth {r.depth} reached"
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    def _over(self) -> bool:
        """Whether to start nothing more: stopped, or the budget spent."""
        if self.cancel.is_set():
            self.ended = "stopped"
            return True
        if self.spent >= self.request.budget:
            self.ended = "budget spent"
            return True
        return False

    # ── the steps ────────────────────────────────────────────────────────────
    async def _expand(self, parent: Node) -> list[Node] | None:
        """``→ continue from PARENT n:N`` as the collaborator, once the branch is free: the
        new nodes, ``[]`` when this parent could not be continued, None to end."""
        me = self.actor.participant
        if not await self._wait_for(parent):
            return None if self.cancel.is_set() else []
        r = self.request
        cmd = syntax.Continue.model_validate({
            **(r.sampling.chosen() if r.sampling else {}), "from": parent.local_id, "n": r.n,
            "models": r.models})
        try:
            result = await asyncio.to_thread(self.executor.execute, cmd, self.actor, None,
                                             self.cancel)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.ws.release_turn, parent, me)
        if not result.ok:
            if self.cancel.is_set():
                return None
            self._fail(result.text.split("\n", 1)[0] + f" (continuing [{parent.label}])")
            if result.code == "PERMISSION_DENIED":  # every later step would be refused
                self.ended = "refused"
                return None
            return []
        ids = list(result.data.get("created", []))
        tokens, seconds = await asyncio.to_thread(_subject_usage, self.ws, ids)
        self.subject_tokens += tokens
        self.subject_s += seconds
        nodes = [await asyncio.to_thread(self.ws.node, i) for i in ids]
        self.made += len(nodes)
        self._emit("made", f"[{parent.label}] → " + " ".join(f"[{n.label}]" for n in nodes),
                   parent=parent.id, created=ids)
        return nodes

    async def _wait_for(self, node: Node) -> bool:
        """The branch's turn lock, waiting while someone else generates or types there;
        False when stopped or after ``LockWait.wait_s`` (said as a failure)."""
        me = self.actor.participant
        waited, delay, said = 0.0, self.locks.backoff_s, False
        while not self.cancel.is_set():
            typing = await asyncio.to_thread(human_typing, self.ws, node, me.id,
                                             self.locks.typing_window_s)
            why = f"{typing} is typing on [{node.label}]" if typing else None
            if why is None:
                try:
                    await asyncio.to_thread(self.ws.acquire_turn, node, me)
                    return True
                except LoomError as err:
                    if err.code != "CONFLICT":
                        raise
                    why = err.message
            if waited >= self.locks.wait_s:
                self._fail(f"CONFLICT: {why} (gave up after {waited:.0f} s)")
                return False
            if not said:
                self._emit("waiting", f"{why}: waiting", node=node.id)
                said = True
            await self._sleep(delay)
            waited += delay
            delay = min(self.locks.backoff_max_s, delay * 2)
        return False

    async def _sleep(self, seconds: float) -> None:
        """Sleep, waking early when stopped."""
        end = asyncio.get_running_loop().time() + seconds
        while not self.cancel.is_set() and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.02)

    async def _judge(self, provider: Provider, node: Node) -> judge.Verdict | None:
        """The judge's score of one new branch, stored on it; None when it gave none, asked
        a second time with the rule (small models drift into prose), and said so."""
        r = self.request
        before = await asyncio.to_thread(_text_before, self.ws, node, r.tree.mode)
        request = judge.messages(r.rubric, before, node.content)
        reply = await self._ask_judge(provider, node, request)
        if reply is None:
            return None
        verdict = judge.parse(reply)
        asked = "once (the budget is spent)" if self.spent >= r.budget else "twice"
        if verdict is None and not self.cancel.is_set() and asked == "twice":
            first = reply
            reply = await self._ask_judge(provider, node, judge.again(request, reply))
            if reply is None:
                return None
            verdict = judge.parse(reply)
            reply = f"{first} … then {reply}" if verdict is None else reply
        if self.cancel.is_set():
            return None
        me, tree = self.actor.participant, r.tree
        if verdict is None:
            shown = preview(" ".join(reply.split()), 120) or "(nothing)"
            self.unscored.append(node.label)
            self._fail(f"the judge gave no score for [{node.label}], asked {asked}: "
                       f"\"{shown}\" (left unscored and unpruned)")
            await asyncio.to_thread(_trace, self.ws, me, tree, f"→ judge {node.local_id}",
                                    False, "MODEL_ERROR", "the reply is not a score")
            return None
        await asyncio.to_thread(reader.set_judgement, self.ws, node, me, verdict.score,
                                verdict.reason, r.rubric)
        await asyncio.to_thread(_trace, self.ws, me, tree,
                                f"→ judge {node.local_id} {verdict.score}/10", True, None,
                                verdict.reason)
        self.scored += 1
        said = f" (it wrote {verdict.said:g}/10)" if verdict.said is not None else ""
        self._emit("scored", f"[{node.label}] {verdict.score}/10 — {verdict.reason}{said}",
                   node=node.id, score=verdict.score, reason=verdict.reason)
        return verdict

    async def _ask_judge(self, provider: Provider, node: Node,
                         request: list[ChatMessage]) -> str | None:
        """One call of the judge: its reply, or None when the call failed (said) or the
        exploration was stopped."""
        stop = asyncio.Event()
        bridge = asyncio.ensure_future(_bridge(self.cancel, stop))
        began = time.perf_counter()
        self.judge_calls += 1
        try:
            result = await provider.chat(request, Sampling(tokens=JUDGE_TOKENS), cancel=stop)
        except ModelError as err:
            if not self.cancel.is_set():
                self._fail(f"MODEL_ERROR: the judge did not score [{node.label}]: "
                           f"{err.message}")
            return None
        finally:
            bridge.cancel()
            self.judge_s += time.perf_counter() - began
        reply = result.completions[0].text if result.completions else ""
        used = (result.usage.prompt_tokens or 0) + (result.usage.completion_tokens or 0)
        if not used:  # the provider said nothing: estimated
            used = count_tokens("".join(m.content for m in request) + reply, exact=False)[0]
        self.judge_tokens += used
        return None if self.cancel.is_set() else reply

    async def _prune(self, node: Node) -> None:
        """``→ prune X`` as the collaborator (``→ unprune X`` undoes it)."""
        result = await asyncio.to_thread(self.executor.execute,
                                         syntax.Prune(node=node.local_id), self.actor)
        if result.ok:
            self.pruned += 1
            self._emit("pruned", f"pruned [{node.label}]", node=node.id)
        else:
            self._fail(result.text.split("\n", 1)[0] + f" (pruning [{node.label}])")


def _text_before(ws: Workspace, node: Node, mode: str) -> str:
    """The text a branch continues: its parent's path, as the subject model read it."""
    if node.parent is None:
        return ""
    parent = ws.node(node.parent)
    rows = ws.path(parent, prefer=(parent.id,))
    joiner = "" if mode == "buffer" else "\n\n"
    return joiner.join(r.content for r in rows if not r.excluded and r.kind != "annotation")


def _subject_usage(ws: Workspace, created: list[str]) -> tuple[int, float]:
    """Prompt and completion tokens the subject model spent on these nodes (one response
    shared by several completions counted once), and the seconds its requests took."""
    seen: set[tuple[Any, ...]] = set()
    total, seconds, requests = 0, 0.0, set()
    for g in ws.generations(created):
        if g.raw not in requests or g.raw is None:
            requests.add(g.raw)
            seconds += (g.latency_ms or 0) / 1000
        u = g.usage or {}
        key = (g.raw, u.get("prompt_tokens"), u.get("completion_tokens"))
        if g.raw is not None and key in seen:
            continue
        seen.add(key)
        if u.get("completion_tokens") is None:  # the provider said nothing: estimated
            total += count_tokens(ws.node(g.node).content, exact=False)[0]
        total += (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)
    return total, seconds


def _trace(ws: Workspace, who: Any, tree: Any, command: str, ok: bool, code: str | None,
           message: str) -> None:
    """The judge's step in the collaborator's trace (the writes are the executor's)."""
    try:
        mem.record(ws, who, tree, command, ok, code, message)
    except Exception:  # the score stands without its trace line
        log.warning("could not record the trace entry for %s", command)


async def _bridge(source: threading.Event, target: asyncio.Event) -> None:
    while not source.is_set():
        await asyncio.sleep(0.02)
    target.set()
