"""Where a human changed a text, at word granularity: a word typed over another is the
human's as a whole. A diff by characters matched the letters the two words share
("said" → "whispered" read as `whi` `s` `pere` `d`, alternately human and model)."""

from __future__ import annotations

import difflib
import itertools
import re

#: a word, a run of whitespace, or one other character
_PIECE = re.compile(r"\w+|\s+|[^\w\s]")


def pieces(text: str) -> list[str]:
    """``text`` as words, whitespace runs and single other characters (joined: ``text``)."""
    return _PIECE.findall(text)


def changed(original: str, edited: str) -> tuple[tuple[int, int], ...]:
    """Character ranges of ``edited`` that are not ``original``'s (inserted or replaced),
    whole words at a time."""
    a, b = pieces(original), pieces(edited)
    starts = [0, *itertools.accumulate(len(p) for p in b)]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return tuple((starts[j1], starts[j2]) for tag, _i1, _i2, j1, j2 in sm.get_opcodes()
                 if tag in ("replace", "insert") and j2 > j1)
