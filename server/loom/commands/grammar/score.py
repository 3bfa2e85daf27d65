"""Step 2 of parsing, the builder of ``score`` (``→ score a7x2``, ``→ score branch:a7x2
model:local``): one node, or the path through one, and the model that scores."""

from __future__ import annotations

from collections.abc import Callable

from loom.commands.grammar.results import Fail, VerbArgs, show, usage
from loom.commands.grammar.scan import ref_opt, strings_as_refs, target_node
from loom.commands.grammar.vocabulary import Spec
from loom.commands.syntax import Command, Score


def _build_score(a: VerbArgs, spec: Spec) -> Command | Fail:
    strings_as_refs(a)
    if a.strings:
        return Fail(f"score takes no text, got {show(a.strings[0])}", hint=usage(spec.tool))
    branch = ref_opt(a, "branch", spec)
    if isinstance(branch, Fail):
        return branch
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    if node is not None and branch is not None:
        return Fail("score takes a node or a branch, not both",
                    hint=f"→ score {node}, or → score branch:{branch}")
    model = a.opts.get("model")
    if model is not None and not model.strip():
        return Fail("model: needs a model's name", hint="→ help score")
    return Score(node=node, branch=branch, model=model.strip() if model else None)


#: ``builders.build`` looks it up with the other verbs' builders.
SCORE_BUILDERS: dict[str, Callable[[VerbArgs, Spec], Command | Fail]] = {"score": _build_score}
