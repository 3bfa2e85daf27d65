"""Meta tools: help."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx, ModelChoices, SamplerPresets
from loom.commands.help import render_help_overview, render_help_tool, render_options
from loom.commands.results import Result
from loom.errors import LoomError


def help_(ctx: Ctx, cmd: syntax.Help) -> Result:
    if cmd.tool is None:
        # a human also sees the reader tools the editors offer (the seed's overview is an
        # agent's, and its text is kept to the letter)
        human = ctx.actor.participant.kind == "human"
        return Result.success(render_help_overview(ctx.actor.permissions, reader=human))
    tree = ctx.actor.tree
    page = render_help_tool(cmd.tool.strip().lower(),
                            buffer=tree is not None and tree.mode == "buffer")
    if page is None:
        raise LoomError("NOT_FOUND", f'no tool named "{cmd.tool}"',
                        "→ help lists the tools")
    if page.startswith("continue — "):
        page += "\n\n" + render_options("continue") + _models(ctx) + _presets(ctx)
    return Result.success(page)


def _models(ctx: Ctx) -> str:
    """The models ``model:`` can name, the default marked; those that cannot run yet say
    why."""
    if not isinstance(ctx.subject, ModelChoices):
        return ""
    choices = ctx.subject.choices()
    width = max(len(c.name) for c in choices)
    lines = [f"  {c.name:<{width}}  {c.description}"
             + (" (default)" if c.default else "") + ("" if c.ready else " (no API key)")
             for c in choices]
    return "\n\nModels (model:NAME, models:A,B):\n" + "\n".join(lines)


def _presets(ctx: Ctx) -> str:
    """The sampler presets ``preset:`` can name, with their options; where there are none,
    how to make one."""
    if not isinstance(ctx.subject, SamplerPresets):
        return ""
    try:
        presets = ctx.subject.presets()
    except LoomError as err:  # a broken config: said, the page still shown
        return f"\n\nPresets (preset:NAME): ✗ {err.message}"
    if not presets:
        return ("\n\nPresets (preset:NAME): none yet; define one as [presets.NAME] in "
                "config.toml")
    width = max(len(p.name) for p in presets)
    lines = [f"  {p.name:<{width}}  {p.description}" for p in presets]
    return "\n\nPresets (preset:NAME):\n" + "\n".join(lines)
