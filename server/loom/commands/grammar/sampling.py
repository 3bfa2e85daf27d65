"""Step 2 of parsing, what ``continue`` and ``explore`` read alike: the models named
(``model:X``, ``models:a,b``), the sampler preset (``preset:wild``) and the sampling
options (``tokens:``, ``temperature:``…), as their declarations in the catalogue say
(``sampling=True``)."""

from __future__ import annotations

from loom.commands.grammar.results import Fail, VerbArgs
from loom.commands.grammar.scan import as_read
from loom.commands.grammar.vocabulary import Spec


def models_named(a: VerbArgs, verb: str) -> tuple[str, ...] | Fail | None:
    """The models ``model:``/``models:`` name, None when neither is given."""
    if "model" in a.opts and "models" in a.opts:
        return Fail("model: and models: both name the models", hint="use one: models:a,b")
    named = a.opts.get("model") or a.opts.get("models")
    if named is None:
        return None
    models = tuple(m.strip() for m in named.split(",") if m.strip())
    if not models:
        return Fail("model: needs a model's name", hint=f"→ help {verb} lists them")
    return models


def preset_named(a: VerbArgs, verb: str) -> str | Fail:
    """The sampler preset ``preset:`` names (it is looked up when the command runs)."""
    name = a.opts["preset"].strip()
    if not name:
        return Fail("preset: needs a preset's name", hint=f"→ help {verb} lists them")
    return name


def sampling_given(a: VerbArgs, spec: Spec) -> dict[str, object] | Fail:
    """The sampling options given, read as the verb declares them, by name."""
    values: dict[str, object] = {}
    for option in spec.tool.options:
        if option.sampling and option.name in a.opts:
            got = as_read(a.opts[option.name], option)
            if isinstance(got, Fail):
                return got
            values[option.name] = got
    return values


def generation_options(a: VerbArgs, spec: Spec) -> dict[str, object] | Fail:
    """What a verb that asks the subject model reads alike (``continue``, ``fill``): the
    sampling options, ``models`` and ``preset`` where given, by field name."""
    verb = spec.tool.name
    models = models_named(a, verb)
    if isinstance(models, Fail):
        return models
    values = sampling_given(a, spec)
    if isinstance(values, Fail):
        return values
    if models is not None:
        values["models"] = models
    if "preset" in a.opts:
        preset = preset_named(a, verb)
        if isinstance(preset, Fail):
            return preset
        values["preset"] = preset
    return values
