"""Step 2 of parsing, finding the verb: politeness skipped (``please``, ``go ahead
and``), the catalogue's phrases tried longest first (``show me`` → view, ``go to`` →
switch), then fuzzy matching of the first word. A line whose verb is unknown, ambiguous or
missing gets an error whose hint is the likely commands built from the rest of the line
(hence ``builders.build`` here).
"""

from __future__ import annotations

from loom.commands.canonical import to_text
from loom.commands.catalogue import PHRASE_FILLER, POLITE, RESERVED, TOOLS_BY_NAME
from loom.commands.grammar.builders import build
from loom.commands.grammar.fuzzy import fuzzy
from loom.commands.grammar.lexer import REF_TOKEN, Tok, norm_ref
from loom.commands.grammar.results import Fail, show
from loom.commands.grammar.vocabulary import PHRASES, TOOL_GROUPS, VERB_CHOICES


def skip_polite(toks: list[Tok]) -> int:
    """Index of the first token after the politeness (``please``, ``go ahead and``)."""
    i, n = 0, len(toks)
    while i < n and toks[i][0] is None and not toks[i][2]:
        lw = toks[i][1].lower()
        if lw == "go" and i + 1 < n and toks[i + 1][1].lower() == "ahead":
            i += 2
        elif lw in POLITE:
            i += 1
        else:
            break
    return i


def find_verb(toks: list[Tok]) -> tuple[str, int] | Fail:
    """The verb and the index of the first argument token."""
    i, n = skip_polite(toks), len(toks)
    words: list[str] = []
    idxs: list[int] = []
    j = i
    while j < n and len(words) < 3 and toks[j][0] is None and not toks[j][2]:
        lw = toks[j][1].lower()
        if not words or lw not in PHRASE_FILLER:
            words.append(lw)
            idxs.append(j)
        j += 1
    for size in range(len(words), 0, -1):
        verb = PHRASES.get(tuple(words[:size]))
        if verb is not None:
            return verb, idxs[size - 1] + 1
    if not words and i < n and toks[i][0] == REF_TOKEN:
        return Fail(
            f"no command before [{toks[i][1]}]",
            hint=_did_you_mean(("view", "switch"), toks, i),
            candidates=("view", "switch"), unsure=True,
        )
    if not words:
        if i == n:
            return Fail("no command, only politeness", hint="→ help lists the tools")
        return Fail(f"unknown command {show(toks[i][1])}", hint=TOOL_GROUPS,
                    unsure=True)
    verb, near, ambiguous = fuzzy(words[0], VERB_CHOICES)
    if verb is not None:
        return verb, idxs[0] + 1
    if ambiguous:
        return Fail(
            f'ambiguous command "{toks[idxs[0]][1]}": {" or ".join(near[:3])}?',
            hint=_did_you_mean(near[:3], toks, idxs[0] + 1),
            candidates=near[:3], unsure=True,
        )
    if words[0] not in RESERVED and norm_ref(words[0]) is not None and (
        len(toks) == i + 1 or any(c.isdigit() for c in words[0])
    ):
        return Fail(
            f"no command before {show(toks[i][1])}",
            hint=_did_you_mean(("view", "switch"), toks, i),
            candidates=("view", "switch"), unsure=True,
        )
    return Fail(
        f"unknown command {show(toks[idxs[0]][1])}",
        hint=_did_you_mean(near, toks, idxs[0] + 1) if near else TOOL_GROUPS,
        candidates=near, unsure=True,
    )


def _did_you_mean(verbs: tuple[str, ...], toks: list[Tok], start: int) -> str:
    forms: list[str] = []
    for verb in verbs:
        got = build(verb, toks, start, "")
        forms.append(to_text(got) if not isinstance(got, Fail) else TOOLS_BY_NAME[verb].forms[0])
    if len(forms) == 1:
        return f"did you mean {forms[0]}?"
    return "did you mean " + ", ".join(forms[:-1]) + f" or {forms[-1]}?"
