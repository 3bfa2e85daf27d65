"""``→ explore`` and ``→ explore stop``: the collaborator exploring a tree on its own.

The handler checks what can be checked at once (the bounds, the node, that there is a
subject model and something to run the exploration) and hands it to the executor's
``explorer`` (``agent/explore``), which runs it in the background as the collaborator,
every step a command through this executor. It returns at once."""

from __future__ import annotations

from loom.commands import ast
from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.context import Ctx, ExploreRequest, ExploreSummary
from loom.commands.results import Result
from loom.errors import LoomError
from loom.render import formats as f
from loom.render.text import plural, quote, thousands

DEFAULT_DEPTH = 3
DEFAULT_N = 2
DEFAULT_BUDGET = 20_000
DEFAULT_THRESHOLD = 5
DEFAULT_RUBRIC = ("a vivid, coherent continuation that follows from the text and opens "
                  "somewhere worth going")


def _within_limits(cmd: ast.Explore) -> None:
    for option in TOOLS_BY_NAME["explore"].options:
        value = getattr(cmd, option.name, None) if option.limits else None
        if value is None or option.limits is None:
            continue
        low, high = option.limits
        if not low <= value <= high:
            raise LoomError("LIMIT_EXCEEDED", f"{option.name} must be between {low:,.0f} and "
                            f"{high:,.0f}", option.limit_hint or None)


def summary_line(s: ExploreSummary) -> str:
    """``3 nodes made, 3 scored, 1 pruned · 1,234 of 20,000 tokens``."""
    return (f"{plural(s.made, 'node')} made, {s.scored} scored, {s.pruned} pruned · "
            f"{thousands(s.spent)} of {thousands(s.budget)} tokens")


def explore(ctx: Ctx, cmd: ast.Explore) -> Result:
    tree = ctx.tree
    if cmd.stop:
        return _stop(ctx)
    if ctx.me.kind == "model":  # no self-invocation: the judge is the collaborator's model
        raise LoomError("PERMISSION_DENIED", "a model cannot start an exploration",
                        "ask the human to → explore")
    _within_limits(cmd)
    source = ctx.resolve(cmd.from_)
    if source.kind == "annotation":
        raise LoomError("NOT_FOUND", f"[{source.label}] is an annotation",
                        "explore from the node it annotates")
    if ctx.subject is None:
        raise LoomError("MODEL_ERROR", "no subject model is configured",
                        "set up the local model (loom model setup) or configure a profile")
    if ctx.explorer is None:
        raise LoomError("MODEL_ERROR", "this front end cannot run explorations",
                        "run it from the editor or with loom agent TREE --explore")
    request = ExploreRequest(
        tree=tree, source=source, depth=cmd.depth or DEFAULT_DEPTH, n=cmd.n or DEFAULT_N,
        rubric=(cmd.judge or DEFAULT_RUBRIC).strip(),
        budget=cmd.budget or DEFAULT_BUDGET,
        threshold=DEFAULT_THRESHOLD if cmd.threshold is None else cmd.threshold,
        starter=ctx.me)
    started = ctx.explorer.start(request)
    return Result.success(
        f.ok(f"exploring from {f.ref(source.label)} depth:{request.depth} n:{request.n} "
             f"budget:{thousands(request.budget)} tokens, as {started.explorer}",
             f"judge: {started.judge}, {quote(request.rubric)}; branches below "
             f"{request.threshold}/10 are pruned (→ unprune brings one back)",
             "→ explore stop ends it"),
        source=source.id, explorer=started.explorer, depth=request.depth, n=request.n,
        budget=request.budget, threshold=request.threshold)


def _stop(ctx: Ctx) -> Result:
    tree = ctx.tree
    done = ctx.explorer.stop(tree) if ctx.explorer is not None else None
    if done is None:
        return Result.success(f.ok(f"no exploration is running in {quote(tree.title)}"),
                              stopped=False)
    lines = [f"✗ {x}" for x in done.failures[-5:]]
    return Result.success(
        f.ok(f"stopped exploring from {f.ref(done.source)}: {summary_line(done)}", *lines),
        stopped=True, made=done.made, scored=done.scored, pruned=done.pruned,
        spent=done.spent, ended=done.ended)
