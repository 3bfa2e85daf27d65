"""Step 2 of parsing, the builder of ``explore`` (``→ explore from a7x2 depth:3 n:2
judge:"…"``, ``→ explore end``): its options read as the catalogue declares them; their
bounds are the handler's to check (``LIMIT_EXCEEDED`` when it runs, as for ``continue``)."""

from __future__ import annotations

from collections.abc import Callable

from loom.commands.grammar.fuzzy import note_correction
from loom.commands.grammar.results import Fail, VerbArgs, usage
from loom.commands.grammar.sampling import models_named, preset_named, sampling_given
from loom.commands.grammar.scan import as_read, target_node
from loom.commands.grammar.vocabulary import Spec
from loom.commands.syntax import Command, Explore

#: Its own options read as numbers (``from`` and ``judge`` are a node and text; the models
#: and the sampling are continue's, read as continue reads them).
_NUMBERS = ("depth", "n", "budget", "threshold")


def _build_explore(a: VerbArgs, spec: Spec) -> Command | Fail:
    if "end" in a.flags:
        if a.refs or a.strings or a.opts:
            return Fail("explore end takes nothing else", hint="→ explore end")
        if "stop" in a.rest.lower().split():
            # the old spelling: it still ends the exploration, and says how it was read
            # (stop:"…" is continue's stop string, which explore passes on)
            note_correction()
        return Explore(end=True)
    if len(a.strings) > 1 or (a.strings and "judge" in a.opts):
        return Fail("explore takes one rubric", hint=usage(spec.tool))
    start = target_node(a, spec, "from")
    if isinstance(start, Fail):
        return start
    values: dict[str, object] = {}
    for name in _NUMBERS:
        if name in a.opts:
            option = spec.tool.option(name)
            assert option is not None
            got = as_read(a.opts[name], option)
            if isinstance(got, Fail):
                return got
            values[name] = got
    rubric = a.opts.get("judge") or (a.strings[0] if a.strings else None)
    if rubric is not None and not rubric.strip():
        return Fail("judge: needs the rubric in quotes",
                    hint='→ explore judge:"vivid, surprising, true to the characters"')
    models = models_named(a, "explore")
    if isinstance(models, Fail):
        return models
    sampling = sampling_given(a, spec)  # continue's, passed on to each continue
    if isinstance(sampling, Fail):
        return sampling
    preset = preset_named(a, "explore") if "preset" in a.opts else None
    if isinstance(preset, Fail):
        return preset
    return Explore.model_validate({"from": start, "judge": rubric, **values,
                                   "models": models or (), "preset": preset,
                                   "sampling": sampling})


#: ``builders.build`` looks it up with the other verbs' builders.
EXPLORE_BUILDERS: dict[str, Callable[[VerbArgs, Spec], Command | Fail]] = {
    "explore": _build_explore,
}
