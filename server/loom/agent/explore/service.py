"""A process's explorations: at most one per tree, each on a thread the process owns. It is
the executor's ``explorer`` (``commands.context.Explorer``): ``→ explore`` starts one and
returns at once, ``→ explore end`` stops it and says what it did."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from loom.agent.explore.search import EventSink, Exploration, ExploreEvent, LockWait, Run
from loom.agent.participant import AgentSpec, ensure_agent, may_start
from loom.commands.context import Actor, ExploreRequest, ExploreSummary
from loom.commands.executor import Executor
from loom.errors import LoomError
from loom.llm.base import ModelError, Provider
from loom.llm.config import ModelProfile, agent_model_caveat, resolve_profile
from loom.llm.registry import make_provider
from loom.model import permissions as perms
from loom.render.text import quote
from loom.store import explore_log
from loom.store.backend import storage_error
from loom.store.orm import pw
from loom.store.schema import Participant, Tree
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)
ProviderFactory = Callable[[ModelProfile], Provider]
#: How long ``stop`` waits for the exploration's step in flight to end.
STOP_WAIT_S = 30.0
#: Listeners get the tree's id with each event (the editor's progress, the CLI's lines).
Listener = Callable[[str, ExploreEvent], None]


class Explorations:
    """Runs ``→ explore`` for one workspace, as the collaborator ``spec`` names (by default
    ``collaborator``), its judge the collaborator's model (``profile``, else the
    participant's profile, else the ``collaborator`` purpose of config.toml)."""

    def __init__(self, ws: Workspace, executor: Executor, *,
                 spec: AgentSpec | None = None, profile: ModelProfile | None = None,
                 provider_factory: ProviderFactory | None = None,
                 locks: LockWait | None = None) -> None:
        self.ws = ws
        self.executor = executor
        self.spec = spec or AgentSpec()
        self.profile = profile
        self.provider_factory = provider_factory or make_provider
        self.locks = locks
        self.listeners: list[Listener] = []
        self._running: dict[str, Exploration] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._guard = threading.Lock()

    def add_listener(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def _sink(self, tree_id: str) -> EventSink:
        def emit(event: ExploreEvent) -> None:
            for listener in list(self.listeners):
                try:
                    listener(tree_id, event)
                except Exception:
                    log.exception("exploration listener failed")
        return emit

    def running(self, tree: Tree) -> Exploration | None:
        with self._guard:
            found = self._running.get(tree.id)
        return found if found is not None and not found.finished.is_set() else None

    def latest(self, tree: Tree) -> Exploration | None:
        """The tree's latest exploration, running or ended (its figures: the bench's)."""
        with self._guard:
            return self._running.get(tree.id)

    def start(self, request: ExploreRequest) -> ExploreSummary:
        """Check who explores and with which judge, log the start (one exploration a tree
        across processes), then start the thread."""
        tree = request.tree
        here = self.running(tree)
        if here is not None:
            raise _already(here.request.source.label, here.actor.participant.name, tree)
        try:
            elsewhere = explore_log.live_runs(self.ws, tree.id)
        except pw.DatabaseError as err:
            raise storage_error(err) from None
        if elsewhere:
            raise _already(elsewhere[0].label, elsewhere[0].explorer, tree)
        try:  # the collaborator may not do more than the person starting it
            may_start(self.ws, request.starter, self.spec)
            explorer = ensure_agent(self.ws, self.spec, by=request.starter)
        except pw.DatabaseError as err:
            raise storage_error(err) from None
        missing = perms.missing_for(perms.LOOM_GENERATE, perms.effective(
            explorer.permissions or []))
        if missing:
            raise LoomError("PERMISSION_DENIED", f"{explorer.name} does not hold {missing}",
                            f"grant it: loom users grant {explorer.name} {missing}")
        try:
            profile = self.profile or resolve_profile("collaborator", explorer.profile)
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err
        factory = self.provider_factory
        with self._guard:
            if tree.id in self._running and not self._running[tree.id].finished.is_set():
                other = self._running[tree.id]
                raise _already(other.request.source.label, other.actor.participant.name, tree)
            run = self._log_start(request, explorer)
            exploration = Exploration(
                self.ws, self.executor, Actor(explorer, tree), request,
                provider=lambda: factory(profile), judge_name=profile.model,
                on_event=self._sink(tree.id), locks=self.locks, run=run)
            thread = threading.Thread(target=exploration.run, daemon=True,
                                      name=f"explore-{tree.id[:8]}")
            self._running[tree.id] = exploration
            self._threads[tree.id] = thread
        thread.start()
        return replace(exploration.summary(), caveat=agent_model_caveat(profile))

    def _log_start(self, request: ExploreRequest, explorer: Participant) -> Run:
        """``explore.start`` in the change log, under a session of its own that the
        exploration keeps alive; CONFLICT when another process logged a start of this tree
        first (the two checked the log at the same moment)."""
        ws, tree, source = self.ws, request.tree, request.source
        try:
            cursor = ws.follow(tree=tree.id)  # before the start: a stop after it is seen
            session = ws.open_session(explorer)
            live = explore_log.log_start_alone(
                ws, tree.id, source.id, explorer.id, session, explorer=explorer.name,
                starter=request.starter.name, **{"from": source.label}, depth=request.depth,
                n=request.n, budget=request.budget, threshold=request.threshold,
                rubric=request.rubric, models=list(request.models),
                sampling=request.sampling.chosen() if request.sampling else {})
        except pw.DatabaseError as err:
            raise storage_error(err) from None
        mine = next((r for r in live if r.run == session), None)
        first = next((r for r in live if mine is None or r.seq < mine.seq), None)
        if first is not None and first.run != session:
            with contextlib.suppress(Exception):
                explore_log.log_end(ws, tree.id, source.id, explorer.id, session,
                                    ended="refused: another exploration started first")
                ws.close_session(session)
            raise _already(first.label, first.explorer, tree)
        return Run(session, cursor)

    def stop(self, tree: Tree) -> ExploreSummary | None:
        """Stop the tree's exploration, wait for its step in flight to end, say what it
        did; None when none is running."""
        exploration = self.running(tree)
        if exploration is None:
            return None
        exploration.cancel.set()
        self.wait(tree, STOP_WAIT_S)
        return exploration.summary()

    def wait(self, tree: Tree, timeout: float | None = None) -> ExploreSummary | None:
        """Wait for the tree's latest exploration to end (``loom agent --explore``)."""
        with self._guard:
            exploration = self._running.get(tree.id)
            thread = self._threads.get(tree.id)
        if exploration is None or thread is None:
            return None
        if thread is not threading.current_thread():
            thread.join(timeout)
        return exploration.summary()

    def stop_all(self, timeout: float = STOP_WAIT_S) -> None:
        """Stop every exploration (the process is ending)."""
        with self._guard:
            running = list(self._running.values())
            threads = list(self._threads.values())
        for exploration in running:
            exploration.cancel.set()
        for thread in threads:
            thread.join(timeout)


def _already(label: str, explorer: str, tree: Tree) -> LoomError:
    return LoomError("CONFLICT", f"{explorer} is already exploring [{label}] in "
                     f"{quote(tree.title)}", "→ explore end ends it")
