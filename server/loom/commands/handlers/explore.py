"""``→ explore`` and ``→ explore end``: the collaborator exploring a tree on its own.

The handler checks what can be checked at once (the bounds, the node, that there is a
subject model and something to run the exploration) and hands it to the executor's
``explorer`` (``agent/explore``), which runs it in the background as the collaborator,
every step a command through this executor. It returns at once."""

from __future__ import annotations

import time

from loom.commands import syntax
from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.context import Ctx, ExploreRequest, ExploreSummary
from loom.commands.handlers import content
from loom.commands.results import Result
from loom.errors import LoomError
from loom.render import formats as f
from loom.render.text import plural, quote, thousands
from loom.store import explore_log

DEFAULT_DEPTH = 3
DEFAULT_N = 2
DEFAULT_BUDGET = 20_000
DEFAULT_THRESHOLD = 5
DEFAULT_RUBRIC = ("a vivid, coherent continuation that follows from the text and opens "
                  "somewhere worth going")
#: How long a stop asked of another process's exploration waits to see it end.
STOP_ELSEWHERE_WAIT_S = 30.0


def summary_line(s: ExploreSummary) -> str:
    """``3 nodes made, 3 scored, 1 pruned · 1,234 of 20,000 tokens``."""
    return (f"{plural(s.made, 'node')} made, {s.scored} scored, {s.pruned} pruned · "
            f"{thousands(s.spent)} of {thousands(s.budget)} tokens")


def explore(ctx: Ctx, cmd: syntax.Explore) -> Result:
    tree = ctx.tree
    if cmd.end:
        return _stop(ctx)
    if ctx.me.kind == "model":  # no self-invocation: the judge is the collaborator's model
        raise LoomError("PERMISSION_DENIED", "a model cannot start an exploration",
                        "ask the human to → explore")
    # its own options (continue's sampling ones are checked as continue checks them, below)
    content.check_limits(cmd, (o for o in TOOLS_BY_NAME["explore"].options if not o.sampling))
    preset = content.preset_for(ctx, cmd.preset)
    sampling = cmd.sampling if preset is None else cmd.sampling.over(preset.sampling)
    content.within_limits(sampling)
    source = ctx.text_node(cmd.from_, "explore from the node it annotates: → explore from {on}")
    if ctx.subject is None:
        raise LoomError("MODEL_ERROR", "no subject model is configured",
                        "set up the local model (loom model setup) or configure a profile")
    if ctx.explorer is None:
        raise LoomError("MODEL_ERROR", "this front end cannot run explorations",
                        "run it from the editor or with loom agent TREE --explore")
    models = content.named_models(ctx, cmd.models)  # each continue asks these by name
    n = cmd.n or DEFAULT_N
    if n * max(1, len(models)) > content.MAX_N:
        raise LoomError("LIMIT_EXCEEDED", f"each continue would make {n * len(models)} "
                        f"({len(models)} models × n:{n}); at most {content.MAX_N}",
                        f"use n:{content.MAX_N // len(models)} or fewer models")
    request = ExploreRequest(
        tree=tree, source=source, depth=cmd.depth or DEFAULT_DEPTH, n=n,
        rubric=(cmd.judge or DEFAULT_RUBRIC).strip(),
        budget=cmd.budget or DEFAULT_BUDGET,
        threshold=DEFAULT_THRESHOLD if cmd.threshold is None else cmd.threshold,
        starter=ctx.me, models=models, sampling=sampling)
    started = ctx.explorer.start(request)
    caveat = ([f"! {started.caveat[0]}", f"  hint: {started.caveat[1]}"]
              if started.caveat else [])
    return Result.success(
        f.ok(f"exploring from {f.ref(source.label)} depth:{request.depth} n:{request.n} "
             f"budget:{thousands(request.budget)} tokens, as {started.explorer}",
             f"judge: {started.judge}, {quote(request.rubric)}; branches below "
             f"{request.threshold}/10 are pruned (→ unprune brings one back)",
             "→ explore end ends it", *caveat),
        source=source.id, explorer=started.explorer, depth=request.depth, n=request.n,
        budget=request.budget, threshold=request.threshold)


def _stop(ctx: Ctx) -> Result:
    tree = ctx.tree
    done = ctx.explorer.stop(tree) if ctx.explorer is not None else None
    if done is None:
        return _stop_elsewhere(ctx)
    lines = [f"✗ {x}" for x in done.failures[-5:]]
    stopped = done.ended in (None, "stopped")
    said = (f"stopped exploring from {f.ref(done.source)}" if stopped else
            f"the exploration from {f.ref(done.source)} {_ended_on_its_own(done.ended)}")
    return Result.success(
        f.ok(f"{said}: {summary_line(done)}", *lines),
        stopped=stopped, made=done.made, scored=done.scored, pruned=done.pruned,
        spent=done.spent, ended=done.ended)


def _ended_on_its_own(reason: object) -> str:
    """What a stop says of an exploration that ended before the stop reached it (its last
    step was ending as the stop was asked)."""
    return f"had ended before the stop ({reason})"


def _stop_elsewhere(ctx: Ctx) -> Result:
    """No exploration of the tree runs in this process: one running in another process
    (the change log says so) is asked to stop with an ``explore.stop`` change, which it
    reads between its steps; this waits a while to say what it did."""
    tree = ctx.tree
    live = explore_log.live_runs(ctx.ws, tree.id)
    if not live:
        return Result.success(f.ok(f"no exploration is running in {quote(tree.title)}"),
                              stopped=False)
    run = live[-1]
    after = ctx.ws.last_change()
    explore_log.log_stop(ctx.ws, run, tree.id, ctx.me.id)
    asked = (f"asked the exploration from {f.ref(run.label)} running in another process "
             "to stop")
    deadline = time.monotonic() + STOP_ELSEWHERE_WAIT_S
    end = explore_log.ended(ctx.ws, tree.id, run.run, after)
    while end is None and time.monotonic() < deadline and not _cancelled(ctx):
        time.sleep(0.1)
        end = explore_log.ended(ctx.ws, tree.id, run.run, after)
    if end is None:
        return Result.success(f.ok(asked, "it stops once its step in flight ends"),
                              stopped=True, elsewhere=True, ended=None)
    figures = ExploreSummary(source=run.label, made=_int(end, "made"),
                             scored=_int(end, "scored"), pruned=_int(end, "pruned"),
                             spent=_int(end, "spent"), budget=_int(end, "budget"))
    reason = end.get("ended")
    stopped = reason in (None, "stopped")
    said = "it stopped" if stopped else f"it {_ended_on_its_own(reason)}"
    return Result.success(
        f.ok(f"{asked}: {said}, {summary_line(figures)}"), stopped=stopped, elsewhere=True,
        made=figures.made, scored=figures.scored, pruned=figures.pruned,
        spent=figures.spent, ended=reason)


def _cancelled(ctx: Ctx) -> bool:
    return ctx.cancel is not None and ctx.cancel.is_set()


def _int(payload: dict[str, object], key: str) -> int:
    value = payload.get(key)
    return value if isinstance(value, int) else 0
