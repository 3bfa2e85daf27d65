"""Step 2 of parsing, ``→ fill``: the node, the span (``at:12-40``, a bare ``12-40``, or
the quoted text to replace), and ``continue``'s models, preset and sampling."""

from __future__ import annotations

import re
from collections.abc import Callable

from loom.commands.grammar.results import Fail, VerbArgs, usage
from loom.commands.grammar.sampling import generation_options
from loom.commands.grammar.scan import target_node
from loom.commands.grammar.vocabulary import Spec
from loom.commands.syntax import Command, Fill

_SPAN = re.compile(r"\s*(\d+)\s*[-–:]\s*(\d+)\s*")


def _build_fill(a: VerbArgs, spec: Spec) -> Command | Fail:
    if "at" not in a.opts and len(a.refs) == 2 and _SPAN.fullmatch(a.refs[1]):
        a.opts["at"] = a.refs.pop()
    if "at" not in a.opts and a.unknown and _SPAN.fullmatch(a.unknown[0]):
        a.opts["at"] = a.unknown.pop(0)
    node = target_node(a, spec)
    if isinstance(node, Fail):
        return node
    if node is None:
        return Fail("fill needs a node", hint=usage(spec.tool))
    values: dict[str, object] = {"node": node}
    if "at" in a.opts:
        span = _SPAN.fullmatch(a.opts["at"])
        if span is None:
            return Fail(f'at: "{a.opts["at"]}" is not start-end',
                        hint=f"use → fill {node} at:12-40 (character offsets)")
        start, end = int(span.group(1)), int(span.group(2))
        if end < start:
            return Fail(f"at: the span ends ({end}) before it starts ({start})",
                        hint=f"use → fill {node} at:{end}-{start}")
        values |= {"start": start, "end": end}
        if a.strings:
            return Fail("fill takes a span or the text to replace, not both",
                        hint=usage(spec.tool))
    elif len(a.strings) == 1:
        if not a.strings[0]:
            return Fail("fill needs the text to replace", hint=usage(spec.tool))
        values["span"] = a.strings[0]
    elif a.strings:
        return Fail("fill takes one quoted text to replace", hint=usage(spec.tool))
    else:
        return Fail("fill needs the span", hint=f"use → fill {node} at:12-40, or → fill "
                    f'{node} "the words to replace"')
    if a.unknown:
        return Fail(f'unexpected "{a.unknown[0]}" for fill', hint=usage(spec.tool))
    options = generation_options(a, spec)
    if isinstance(options, Fail):
        return options
    return Fill.model_validate({**values, **options})


#: ``builders.build`` looks it up with the other verbs' builders.
FILL_BUILDERS: dict[str, Callable[[VerbArgs, Spec], Command | Fail]] = {"fill": _build_fill}
