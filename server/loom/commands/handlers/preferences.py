"""The tree settings of the preference log: ``shuffle`` (sibling order randomised in
pickers and suggestions per showing, the shown order recorded) and ``blind`` (model names
hidden until the writer has chosen among the siblings)."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Ctx
from loom.commands.results import Result
from loom.model import preferences as prefs
from loom.render import formats as f


def tree_settings(ctx: Ctx, cmd: syntax.TreeSettings) -> Result:
    """Set (or, with nothing asked, say) the actor's tree's settings."""
    tree = ctx.tree
    extra = dict(tree.extra or {})
    settings = prefs.settings_of(extra)
    asked = {name: value for name, value in ((prefs.SHUFFLE, cmd.shuffle),
                                             (prefs.BLIND, cmd.blind)) if value is not None}
    if asked and any(settings[k] != v for k, v in asked.items()):
        settings.update(asked)
        extra[prefs.SETTINGS] = settings
        ctx.ws.update_tree(tree, ctx.me, extra=extra)
    shown = " · ".join(f"{name} {'on' if on else 'off'}" for name, on in settings.items())
    return Result.success(f.ok(f'tree "{tree.title}": {shown}'), tree=tree.id,
                          settings=settings)
