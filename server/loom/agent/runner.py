"""The collaborator: :class:`Agent` ties participant, context, loop, triggers and turn log
together (``loom agent``, the command line around it, is :mod:`loom.agent.cli`).

No self-invocation: the agent's own model is called only by its turn loop; ``→ continue``
goes through the executor to the executor's subject model, never to the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from loom.agent.assembly import HistoryItem
from loom.agent.hooks import Hooks, loom_hooks
from loom.agent.loop import (
    AgentEvent,
    Approver,
    Budgets,
    EventSink,
    LockPolicy,
    Summarizer,
    TurnLoop,
    TurnOptions,
    refused_by_database,
)
from loom.agent.participant import AgentSpec, ensure_agent, may_start
from loom.agent.transcript import (
    SqliteTurnLog,
    TurnLog,
    TurnRecord,
    render_conversation,
    usage_line,
    written,
)
from loom.agent.triggers import DEFAULT_SETTLE_S, Triggers, TurnInput, ask
from loom.commands import syntax
from loom.commands.context import Actor
from loom.commands.executor import Executor
from loom.errors import LoomError
from loom.llm.base import Provider
from loom.llm.config import ModelProfile, resolve_profile
from loom.llm.redacting import redacting
from loom.llm.registry import make_provider
from loom.llm.service.client import SEQ_CTX
from loom.render.formats import error as error_text
from loom.store.backend import storage_error
from loom.store.orm import pw
from loom.store.schema import Participant, Tree
from loom.store.workspace import Workspace

if TYPE_CHECKING:
    from loom.agent.outside.tools import Outside

log = logging.getLogger(__name__)
ProviderFactory = Callable[[ModelProfile], Provider]


def budgets_for(profile: ModelProfile) -> Budgets:
    """The bundled local model has a 2,048-token window: a small context and short replies;
    hosted models get the defaults (replies of at least 1,024 tokens)."""
    if profile.provider == "local":
        reply = min(320, max(profile.max_tokens, 128))
        return Budgets(context_tokens=SEQ_CTX - reply - 528, reply_tokens=reply)
    return Budgets(reply_tokens=max(profile.max_tokens, 1_024))


class Agent:
    """One collaborator working in one tree."""

    def __init__(self, ws: Workspace, executor: Executor, tree: Tree, *,
                 spec: AgentSpec | None = None, profile: ModelProfile | None = None,
                 provider_factory: ProviderFactory | None = None,
                 budgets: Budgets | None = None, locks: LockPolicy | None = None,
                 approve: Approver | None = None, turn_log: TurnLog | None = None,
                 system_prompt: str | None = None, autonomous: bool = False,
                 settle_s: float = DEFAULT_SETTLE_S, summarize: Summarizer | None = None,
                 early_stop: bool = True, hooks: Hooks | None = None,
                 starter: Participant | None = None, outside: Outside | bool = True) -> None:
        """``starter``: who starts it (the person at the terminal, the editor session's
        participant). It may not start a collaborator that can do more than it can
        (:func:`~loom.agent.participant.may_start`, checked here and before each turn);
        without one (tests, tools) nobody is checked. ``outside``: the MCP servers whose
        tools it may call: True, those config.toml names (connected once per process,
        in the background, from now); False, none; or these."""
        if isinstance(executor.subject, Agent):
            raise LoomError("CONFLICT", "the collaborator cannot be its own subject model",
                            "configure a subject model for → continue")
        self.ws = ws
        self.executor = executor
        self.starter = starter
        try:
            if starter is not None:
                may_start(ws, starter, spec)
            self.participant = ensure_agent(ws, spec, by=starter)
        except pw.DatabaseError as err:  # a role that may not make or change it
            raise storage_error(err) from None
        self.profile = profile or resolve_profile("collaborator", self.participant.profile)
        self.provider_factory = provider_factory or make_provider
        self.budgets = budgets or budgets_for(self.profile)
        self.locks = locks or LockPolicy()
        self.approve = approve
        self.system_prompt = system_prompt
        self.summarize = summarize
        self.early_stop = early_stop
        self.actor = Actor(self.participant, tree, context_budget=self.budgets.context_tokens)
        self.turn_log: TurnLog = turn_log or SqliteTurnLog(ws)
        # The loop's hook points (seed 003): the process's (pruning, redaction, anything
        # the embedding program added), then this agent's turn log, first after a turn.
        self.hooks = (hooks if hooks is not None else loom_hooks()).copy()
        self.hooks.after_turn.insert(0, self.turn_log.append)
        if outside is True:
            from loom.agent.outside.tools import shared_outside

            self.outside: Outside | None = shared_outside()
        else:
            self.outside = outside or None
        last = self.turn_log.turns(self.name, tree.id, limit=1)
        self.triggers = Triggers(ws, self.participant, tree, autonomous_mode=autonomous,
                                 settle_s=settle_s,
                                 since_seq=last[0].seen_seq if last else None)
        self._cancel = threading.Event()
        self._busy = False

    @property
    def name(self) -> str:
        return self.participant.name

    @property
    def tree(self) -> Tree:
        return self.actor.tree

    @property
    def busy(self) -> bool:
        return self._busy

    def stop(self) -> None:
        """Stop the running turn (from any thread): it ends cleanly, nothing half-written."""
        self._cancel.set()

    def history(self, limit: int = 3) -> list[HistoryItem]:
        return [HistoryItem(t.input, t.message, written(t))
                for t in self.turn_log.turns(self.name, self.tree.id, limit=limit)]

    def check_starter(self) -> None:
        """The starter's rule again, with both permissions as they are now (either may
        have changed since the agent was made, in this process or another): the turn acts
        with what the agent holds now, and only if the starter holds all of it."""
        if self.starter is None:
            return
        try:
            self.participant.permissions = self.ws.participant(self.name).permissions
            starter = self.ws.participant(self.starter.name)
        except pw.DatabaseError as err:
            raise storage_error(err) from None
        may_start(self.ws, starter, AgentSpec(name=self.name))

    def _place(self) -> None:
        """A newcomer starts where the human most recently was, not at the first leaf."""
        tree = self.tree
        if self.ws.has_position(self.participant, tree):
            return
        latest = self.ws.latest_position(tree, kind="human")
        if latest is not None:
            node, tip = latest
            placed = self.executor.execute(syntax.Switch(node=node.local_id, tip=tip.local_id),
                                           self.actor)
            if refused_by_database(placed):  # nothing this turn would write could be kept
                raise LoomError("PERMISSION_DENIED", placed.message or "", placed.hint)

    async def run_turn(self, turn_input: TurnInput | str | None = None,
                       on_event: EventSink | None = None,
                       cancel: threading.Event | None = None) -> TurnRecord:
        """One turn; never raises for model or command failures (they are in the record).
        Raises ``CONFLICT`` while a turn runs, and ``PERMISSION_DENIED`` when the starter
        may not run it (:meth:`check_starter`): then nothing is written."""
        if self._busy:
            raise LoomError("CONFLICT", f"{self.name} is already taking a turn",
                            "wait for it, or stop it")
        self.check_starter()
        if turn_input is None or isinstance(turn_input, str):
            turn_input = ask(turn_input)
        self._busy = True
        if cancel is None:
            self._cancel.clear()
            cancel = self._cancel
        else:
            self._cancel = cancel
        record = TurnRecord(agent=self.name, tree=self.tree.id, trigger=turn_input.kind,
                            input=turn_input.message, input_author=turn_input.author,
                            input_node=turn_input.node, input_target=turn_input.target,
                            started=self.ws.clock(),
                            seen_seq=self.ws.last_change())
        provider: Provider | None = None
        try:
            await asyncio.to_thread(self._place)
            # Redacted both ways whatever the factory makes (the turn record, the
            # printed deltas and the tree only ever see redacted replies); outgoing
            # messages are redacted by the last before-turn step already.
            provider = redacting(self.provider_factory(self.profile))
            options = TurnOptions(budgets=self.budgets, locks=self.locks,
                                  approve=self.approve, on_event=on_event, cancel=cancel,
                                  system_prompt=self.system_prompt, history=self.history(),
                                  summarize=self.summarize, early_stop=self.early_stop,
                                  model_name=self.profile.model, hooks=self.hooks,
                                  outside=self.outside, sees_images=self.profile.sees_images)
            loop = TurnLoop(self.executor, self.actor, provider, options)
            await loop.run(turn_input, record)
        except (LoomError, pw.DatabaseError) as raised:
            # a LoomError the loop does not catch (placing a newcomer, say), or the
            # database refusing this role's write there: said, not a traceback
            err = raised if isinstance(raised, LoomError) else storage_error(raised)
            record.stop_reason = "error"
            record.error = error_text(err.code, err.message, err.hint)
        except Exception as err:  # the boundary: a bug ends the turn, not the front end
            log.exception("collaborator turn failed")
            record.stop_reason = "error"
            record.error = f"✗ INTERNAL: {type(err).__name__}: {err}"
        finally:
            if provider is not None:
                close = getattr(provider, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()
            self._busy = False
        record.ended = self.ws.clock()
        with contextlib.suppress(Exception):
            node, _tip = self.ws.position(self.participant, self.tree)
            record.position, record.depth = node.label, node.depth
        self.hooks.on_after_turn(record)
        if on_event is not None:
            with contextlib.suppress(Exception):
                on_event(AgentEvent("done", usage_line(record), {"turn": record}))
        return record

    def pending(self) -> list[TurnInput]:
        """Inputs waiting in the change log (annotations addressed to the agent, an
        autonomous turn), minus annotations already answered."""
        answered = {t.input_node for t in self.turn_log.turns(self.name, self.tree.id)
                    if t.trigger == "annotation"}
        return [i for i in self.triggers.poll() if i.node is None or i.node not in answered]

    async def watch(self, on_event: EventSink | None = None, poll_s: float = 1.0,
                    stop: threading.Event | None = None,
                    max_turns: int | None = None) -> list[TurnRecord]:
        """Take a turn for every trigger until ``stop`` is set (or ``max_turns``)."""
        stop = stop or threading.Event()
        done: list[TurnRecord] = []
        while not stop.is_set():
            for turn_input in await asyncio.to_thread(self.pending):
                if stop.is_set():
                    break
                done.append(await self.run_turn(turn_input, on_event))
                if max_turns is not None and len(done) >= max_turns:
                    return done
            await asyncio.sleep(poll_s)
        return done

    def conversation_text(self) -> str:
        """The ``loom://conversation/<agent>`` view."""
        turns = self.turn_log.turns(self.name, self.tree.id)
        return render_conversation(turns, self.name, self.tree.title, self.ws.clock())
