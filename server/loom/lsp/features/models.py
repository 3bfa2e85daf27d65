"""The model picker: which models ``continue`` can ask, and the one a participant picked
for a tree, and the sampler preset picked there (``loom.models``, ``loom.chooseModel``; the
VS Code status bar item and Neovim's ``:Loom model``). Picking goes through the executor
like every write."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import ModelChoices, SamplerPresets
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.host import Host


def models(host: Host, uri: str) -> Result:
    """The models there are (name, what it is, whether it can run here, the default) and
    the one picked for the document's tree, if any."""
    actor = host.actor(host.doc(uri) if uri else None)
    subject = host.app.executor.subject
    if not isinstance(subject, ModelChoices):
        raise LoomError("MODEL_ERROR", "this subject model serves one model",
                        "configure model profiles in config.toml")
    choices = subject.choices()
    picked = host.app.ws.model_choice(actor.participant, actor.tree) \
        if actor.tree is not None else None
    default = next((c.name for c in choices if c.default), None)
    listed = [{"name": c.name, "description": c.description, "ready": c.ready,
               "default": c.default} for c in choices]
    current = picked if picked in {c.name for c in choices} else default
    presets = _presets(subject)
    preset = host.app.ws.preset_choice(actor.participant, actor.tree) \
        if actor.tree is not None else None
    preset = preset if preset in {p["name"] for p in presets} else None
    with_preset = f" with preset {preset}" if preset else ""
    return Result.success(f"✓ continue asks {current}{with_preset}", models=listed,
                          picked=picked, current=current, presets=presets, preset=preset)


def _presets(subject: object) -> list[dict[str, str]]:
    """The sampler presets (name, what they set); none where the config cannot be read."""
    if not isinstance(subject, SamplerPresets):
        return []
    try:
        return [{"name": p.name, "description": p.description} for p in subject.presets()]
    except LoomError:
        return []


async def choose(host: Host, uri: str, profile: str | None,
                 preset: str | None = None) -> Result:
    """Pick ``profile`` (a name or the start of one; None: the default again) for the
    document's tree; or, given ``preset``, the sampler preset (``""``: none)."""
    actor = host.actor(host.doc(uri) if uri else None)
    return await host.execute(syntax.ChooseModel(profile=profile or None, preset=preset),
                              actor)
