"""A three-way merge of prose, for re-applying a human's unsaved edit of a node onto the
version someone else made of it meanwhile.

The texts are compared as words, runs of spaces and single punctuation marks (difflib, no
dependency): the changes ``base → mine`` and ``base → theirs`` merge when no change of one
side overlaps or touches a change of the other (the same change on both sides counts
once). Anything else is a conflict, and the caller keeps both texts whole. Pure logic.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")

Hunk = tuple[int, int, tuple[str, ...]]  # base tokens [start, end) become these tokens


def tokens(text: str) -> list[str]:
    """``text`` as words, whitespace runs and single other characters (joined: ``text``)."""
    return _TOKEN.findall(text)


def _hunks(base: list[str], other: list[str]) -> list[Hunk]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, tuple(other[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"]


def merge3(base: str, mine: str, theirs: str) -> str | None:
    """``theirs`` with the changes ``base → mine`` re-applied, or None when they conflict
    with the changes ``base → theirs``."""
    if mine in (base, theirs):
        return theirs
    if theirs == base:
        return mine
    b = tokens(base)
    ours, others = _hunks(b, tokens(mine)), _hunks(b, tokens(theirs))
    for a in ours:
        for c in others:
            # touching counts: an insertion where the other side replaced is ambiguous
            if a != c and a[0] <= c[1] and c[0] <= a[1]:
                return None
    out: list[str] = []
    at = 0
    for start, end, new in sorted(set(ours) | set(others), key=lambda h: (h[0], h[1])):
        out += b[at:start]
        out += new
        at = end
    out += b[at:]
    return "".join(out)
