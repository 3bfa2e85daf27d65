"""``loom agent TREE --explore [OPTIONS]``: one exploration, headless, its progress printed
as it goes (one line a step), Ctrl-C stopping it cleanly (``→ explore end``)."""

from __future__ import annotations

import sys
import threading
from typing import Any

from loom.agent.explore.search import ExploreEvent
from loom.agent.explore.service import Explorations, Listener
from loom.agent.participant import AgentSpec
from loom.commands.context import Actor, ExploreSummary
from loom.commands.executor import Executor

#: Events printed on stdout; the rest (waiting) go to stderr as notices.
_PROGRESS = frozenset({"started", "made", "scored", "pruned"})


def printer(tree_id: str, out: Any = None, err: Any = None) -> Listener:
    """A listener that prints each event of one tree's exploration."""
    out = out or sys.stdout
    err = err or sys.stderr

    def on_event(tree: str, ev: ExploreEvent) -> None:
        if tree != tree_id:
            return
        if ev.kind in _PROGRESS:
            out.write(ev.text + "\n")
            out.flush()
        elif ev.kind == "failed":
            err.write(f"✗ {ev.text}\n")
        elif ev.kind == "done":
            err.write(ev.text + "\n")
        else:
            err.write(f"· {ev.text}\n")
        err.flush()

    return on_event


class HeldPrinter:
    """A :func:`printer` whose events wait until :meth:`release`: the exploration's thread
    starts before the command's own ``✓`` line is printed, which must come first."""

    def __init__(self, tree_id: str, out: Any = None, err: Any = None) -> None:
        self.print = printer(tree_id, out, err)
        self.held: list[tuple[str, ExploreEvent]] = []
        self.released = False
        self.lock = threading.Lock()

    def __call__(self, tree: str, ev: ExploreEvent) -> None:
        with self.lock:
            if not self.released:
                self.held.append((tree, ev))
                return
        self.print(tree, ev)

    def release(self) -> None:
        with self.lock:
            held, self.held, self.released = self.held, [], True
        for tree, ev in held:
            self.print(tree, ev)


def follow(executor: Executor, explorations: Explorations, actor: Actor,
           err: Any = None) -> ExploreSummary | None:
    """Wait for the tree's exploration in this process to end; Ctrl-C ends it as
    ``→ explore end`` does (its thread dies with the process, so a command line that
    started it must wait). Its summary, or None."""
    err = err or sys.stderr
    tree = actor.tree
    assert tree is not None
    try:
        while explorations.running(tree) is not None:
            explorations.wait(tree, 0.25)
    except KeyboardInterrupt:
        stopped = executor.execute("→ explore end", actor)
        err.write(stopped.text + "\n")
    return explorations.wait(tree)


def ran_to_its_end(done: ExploreSummary | None) -> bool:
    """Whether it ended at its depth, its budget or with nothing left (exit status 0)."""
    ended = done.ended if done is not None else "error"
    return not (ended is None or ended.startswith(("error", "refused", "stopped")))


def run_exploration(executor: Executor, explorations: Explorations, actor: Actor,
                    spec: AgentSpec, options: str, out: Any = None, err: Any = None) -> int:
    """Start ``→ explore OPTIONS`` as ``actor`` (through the executor, so its permission,
    its bounds and the collaborator rule are checked), print its progress until it ends.
    Exit status 0 when it ran to its end (depth, budget, nothing left), else 1."""
    err = err or sys.stderr
    tree = actor.tree
    assert tree is not None
    explorations.spec = spec
    explorations.add_listener(printer(tree.id, out, err))
    started = executor.execute(f"→ explore {options}".rstrip(), actor)
    if not started.ok:
        err.write(started.text + "\n")
        return 1
    err.write(started.text + "\n")
    return 0 if ran_to_its_end(follow(executor, explorations, actor, err)) else 1
