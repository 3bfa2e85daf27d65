"""``loom agent TREE --explore [OPTIONS]``: one exploration, headless, its progress printed
as it goes (one line a step), Ctrl-C stopping it cleanly (``→ explore end``)."""

from __future__ import annotations

import sys
from typing import Any

from loom.agent.explore.search import ExploreEvent
from loom.agent.explore.service import Explorations, Listener
from loom.agent.participant import AgentSpec
from loom.commands.context import Actor
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
    try:
        while explorations.running(tree) is not None:
            explorations.wait(tree, 0.25)
    except KeyboardInterrupt:
        stopped = executor.execute("→ explore end", actor)
        err.write(stopped.text + "\n")
    done = explorations.wait(tree)
    ended = done.ended if done is not None else "error"
    return 1 if ended is None or ended.startswith(("error", "refused", "stopped")) else 0
