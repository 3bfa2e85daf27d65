"""The catalogue as the parser reads it, built once at import: the verb phrases keyed
for lookup (``show me`` → view), the names fuzzy matching may correct a verb to, the hint
that lists every tool, and each verb's ``Spec`` for the argument scan.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.commands.catalogue import (
    ALL_TOOLS,
    CATEGORIES,
    FILLER,
    PHRASE_FILLER,
    TOOLS,
    Tool,
    synonym_table,
)
from loom.commands.syntax import VERBS

#: Verbs whose builder explains stray words itself (the content belongs in quotes).
CONTENT_VERBS = frozenset({"respond", "annotate", "edit"})
#: Reader verbs whose builder reads the words no rule took (tags, ratings, search words,
#: a fill's bare span).
FREE_WORDS = frozenset({"tag", "untag", "rate", "search", "fill"})


def _phrase_key(phrase: str) -> tuple[str, ...]:
    words = phrase.split()
    return (words[0], *(w for w in words[1:] if w not in PHRASE_FILLER))


#: Each verb phrase of the catalogue (filler after its first word left out) → its verb.
PHRASES: dict[tuple[str, ...], str] = {
    _phrase_key(p): verb for p, verb in synonym_table().items()
}
#: Fuzzy verb targets: the verbs, and synonyms long enough not to attract noise.
VERB_CHOICES: dict[str, str] = {
    p: v for p, v in synonym_table().items() if p in VERBS or (len(p) >= 6 and " " not in p)
}

#: The hint for a verb nothing is close to: what there is, rather than a far-fetched guess.
TOOL_GROUPS = "the tools: " + " · ".join(
    f"{category}: {', '.join(t.name for t in TOOLS if t.category == category)}"
    for category in CATEGORIES
)


@dataclass(frozen=True, slots=True)
class Spec:
    """What the scan needs of a verb: its tool, the words it ignores (the catalogue's
    filler and its own), whether it reads counts (``3 continuations``, ``40 tokens``)."""

    tool: Tool
    filler: frozenset[str]
    counts: bool


#: Each tool's ``Spec``, by name.
SPECS: dict[str, Spec] = {
    t.name: Spec(t, FILLER | t.filler, t.name == "continue")
    for t in ALL_TOOLS
}
