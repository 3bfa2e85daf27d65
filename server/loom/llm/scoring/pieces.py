"""What the scoring routes share: the text's pieces, and tokens placed in them."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loom.model import tokens as T

#: ``(done, total)`` tokens, as scoring goes.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Piece:
    """A node's text in the order the model reads it; ``wanted``: score it (else it is
    only read, as context)."""

    text: str
    wanted: bool = True


def spans(pieces: Sequence[Piece], base: int) -> list[tuple[int, int]]:
    """Where each piece sits in the whole text (its pieces after ``base`` characters)."""
    out, pos = [], base
    for p in pieces:
        out.append((pos, pos + len(p.text)))
        pos += len(p.text)
    return out


def by_piece(found: Sequence[T.Token], pieces: Sequence[Piece], base: int
             ) -> list[list[T.Token]]:
    """Tokens placed in the whole text (``base``: the prefix's length), as each wanted
    piece's own (offsets in its text); a token across a piece's edge belongs to none."""
    out: list[list[T.Token]] = []
    starts = [t.start for t in found]
    for p, (s, e) in zip(pieces, spans(pieces, base), strict=True):
        if not p.wanted:
            continue
        mine = []
        for t in found[bisect.bisect_left(starts, s):]:
            if t.start >= e:
                break
            if t.end <= e:
                mine.append(T.Token(t.start - s, t.text, t.logprob, t.alternatives))
        out.append(mine)
    return out
