"""Meta tools: help."""

from __future__ import annotations

from loom.commands import ast
from loom.commands.context import Ctx
from loom.commands.help import render_help_overview, render_help_tool
from loom.commands.results import Result
from loom.errors import LoomError


def help_(ctx: Ctx, cmd: ast.Help) -> Result:
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
    return Result.success(page)
