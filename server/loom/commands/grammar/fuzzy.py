"""Step 3 of parsing, fuzzy matching (rapidfuzz, optimal string alignment): an unknown
verb, flag, option name or choice is compared with the known ones and accepted only when one
candidate is clearly best; otherwise the near ones go into the error. An accepted correction
is noted in ``CORRECTED`` so that ``parse_noting`` can say the line was read as something
it does not spell.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar

from rapidfuzz import process
from rapidfuzz.distance import OSA

_CONFIDENT = 0.75  # one edit in four letters
_MARGIN = 0.1  # the runner-up must be this much worse
_NEAR = 0.5  # close enough to count as a candidate (an ambiguity needs two confident ones)
_SUGGEST = 0.7  # close enough to be named in a hint: one edit in four letters, two in seven


def _rank(word: str, choices: Mapping[str, str]) -> list[tuple[str, float]]:
    """Canonical values near ``word``, best first, with their scores."""
    best: dict[str, float] = {}
    for choice, score, _ in process.extract(
        word.lower(), list(choices), scorer=OSA.normalized_similarity, limit=6,
        score_cutoff=_NEAR,
    ):
        value = choices[choice]
        best[value] = max(best.get(value, 0.0), score)
    return sorted(best.items(), key=lambda kv: -kv[1])


def fuzzy(word: str, choices: Mapping[str, str]) -> tuple[str | None, tuple[str, ...], bool]:
    """The one choice ``word`` clearly means (or None), the near candidates (only those
    similar enough to be worth suggesting), and whether several candidates were confident
    (an ambiguity, not a miss). An accepted correction is noted for :func:`parse_noting`."""
    ranked = _rank(word, choices) if choices else []
    if not ranked:
        return None, (), False
    top = ranked[0][1]
    if top < _CONFIDENT:
        return None, tuple(v for v, score in ranked[:2] if score >= _SUGGEST), False
    close = tuple(v for v, score in ranked if score > top - _MARGIN)
    if len(close) == 1:
        if word.lower() not in choices:
            note_correction()
        return close[0], close, False
    return None, close, True


#: Set while :func:`parse_noting` runs: whether a typo was corrected on the way.
CORRECTED: ContextVar[list[bool] | None] = ContextVar("_CORRECTED", default=None)


def note_correction() -> None:
    seen = CORRECTED.get()
    if seen is not None:
        seen.append(True)
