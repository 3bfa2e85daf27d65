"""A process's explorations: at most one per tree, each on a thread the process owns. It is
the executor's ``explorer`` (``commands.context.Explorer``): ``→ explore`` starts one and
returns at once, ``→ explore stop`` stops it and says what it did."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from loom.agent.explore.search import EventSink, Exploration, ExploreEvent, LockWait
from loom.agent.participant import AgentSpec, ensure_agent, may_start
from loom.commands.context import Actor, ExploreRequest, ExploreSummary
from loom.commands.executor import Executor
from loom.errors import LoomError
from loom.llm.base import ModelError, Provider
from loom.llm.config import ModelProfile, resolve_profile
from loom.llm.registry import make_provider
from loom.model import permissions as perms
from loom.store.backend import storage_error
from loom.store.orm import pw
from loom.store.schema import Tree
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
        """Check who explores and with which judge, then start the thread."""
        tree = request.tree
        if self.running(tree) is not None:
            raise LoomError("CONFLICT", f'"{tree.title}" is already being explored',
                            "→ explore stop ends it")
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
        exploration = Exploration(
            self.ws, self.executor, Actor(explorer, tree), request,
            provider=lambda: factory(profile), judge_name=profile.model,
            on_event=self._sink(tree.id), locks=self.locks)
        thread = threading.Thread(target=exploration.run, daemon=True,
                                  name=f"explore-{tree.id[:8]}")
        with self._guard:
            if tree.id in self._running and not self._running[tree.id].finished.is_set():
                raise LoomError("CONFLICT", f'"{tree.title}" is already being explored',
                                "→ explore stop ends it")
            self._running[tree.id] = exploration
            self._threads[tree.id] = thread
        thread.start()
        return exploration.summary()

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
