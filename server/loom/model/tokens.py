"""Per-token data of model text: each token's text, where it sits in the node, its
probability and the top-k alternatives the model weighed there. Pure values and functions:
no storage (``store/node_tokens.py`` keeps them), no provider (``llm/logprobs.py`` reads them).

Token data is tied to a node's content: :func:`align` keeps only tokens that spell the
node's text where they say they are, :func:`split` cuts it with the node, and
:func:`through_edit` carries it into a human's edited version, where the characters the
human changed have none.

The stored form (:func:`encode`, :func:`decode`) is compact: a string table (a node's
tokens and alternatives repeat the same few hundred strings), log-probabilities in
thousandths of a nat as 16-bit integers, the columns as machine arrays, all zlib-compressed.
"""

from __future__ import annotations

import bisect
import difflib
import math
import sys
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

DEFAULT_K = 5
#: Probability buckets, confident to surprising: a token is in the first bucket whose
#: lower bound its probability reaches.
BUCKET_FLOORS: tuple[float, ...] = (0.8, 0.5, 0.2, 0.05, 0.0)
BUCKET_NAMES: tuple[str, ...] = ("probVeryHigh", "probHigh", "probMid", "probLow",
                                 "probVeryLow")

_MAGIC = b"LT\x01"
_SCALE = 1000.0  # log-probabilities are kept in thousandths of a nat
_UNKNOWN = 0xFFFF  # a token whose log-probability the provider did not give
_MAX_Q = 0xFFFE
_SWAP = sys.byteorder != "little"  # the stored columns are little-endian everywhere


@dataclass(frozen=True, slots=True)
class Token:
    """One generated token: ``text`` at ``start`` in its node, its log-probability, and
    the alternatives the model gave at that place (most likely first; the token itself
    may be among them)."""

    start: int
    text: str
    logprob: float | None
    alternatives: tuple[tuple[str, float | None], ...] = ()

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def probability(self) -> float | None:
        return None if self.logprob is None else math.exp(self.logprob)


def probability(logprob: float | None) -> float | None:
    """``exp(logprob)``, or None for an unknown one."""
    return None if logprob is None else math.exp(logprob)


def bucket(prob: float | None) -> int | None:
    """The index of ``prob``'s bucket in :data:`BUCKET_NAMES` (None for unknown)."""
    if prob is None:
        return None
    for i, floor in enumerate(BUCKET_FLOORS):
        if prob >= floor:
            return i
    return len(BUCKET_FLOORS) - 1


# ── from a provider's entries ────────────────────────────────────────────────────────


def _alternatives(entry: Mapping[str, Any], k: int) -> tuple[tuple[str, float | None], ...]:
    seen: dict[str, float | None] = {}
    for alt in entry.get("top_logprobs") or ():
        try:
            text, lp = alt["token"], alt.get("logprob")
        except (TypeError, KeyError, AttributeError):
            continue
        if isinstance(text, str) and text not in seen:
            seen[text] = float(lp) if isinstance(lp, int | float) else None
    ranked = sorted(seen.items(), key=_rank)
    return tuple(ranked[:k])


def _rank(item: tuple[str, float | None]) -> float:
    return math.inf if item[1] is None else -item[1]


def align(entries: Iterable[Mapping[str, Any]] | None, text: str,
          k: int = DEFAULT_K) -> list[Token]:
    """The provider's per-token entries (``{"token", "logprob", "top_logprobs"}``, as
    ``llm/logprobs.normalise`` makes them) laid over ``text``.

    Tokens are taken in order while they spell ``text`` from its start; at the first one
    that does not (a stop sequence cut the text, a secret was redacted, bytes of one
    character split over tokens) the rest is dropped, so every kept token is exactly the
    text at its offset. Empty tokens carry no characters and are left out."""
    out: list[Token] = []
    pos = 0
    for entry in entries or ():
        tok = entry.get("token")
        if not isinstance(tok, str):
            break
        if not tok:
            continue
        if not text.startswith(tok, pos):
            break
        lp = entry.get("logprob")
        out.append(Token(pos, tok, float(lp) if isinstance(lp, int | float) else None,
                         _alternatives(entry, k)))
        pos += len(tok)
    return out


def entries(tokens: Iterable[Token]) -> list[dict[str, Any]]:
    """Tokens back in the provider-neutral entry shape (what exports carry)."""
    return [{"token": t.text, "logprob": t.logprob, "offset": t.start,
             "top_logprobs": [{"token": a, "logprob": lp} for a, lp in t.alternatives]}
            for t in tokens]


# ── following the node's content ─────────────────────────────────────────────────────


def split(tokens: Sequence[Token], at: int) -> tuple[list[Token], list[Token]]:
    """Token data of the two halves of a node cut at ``at``: the tokens wholly before the
    cut, and those wholly after it (shifted to the second half's offsets). A token the cut
    goes through belongs to neither."""
    head = [t for t in tokens if t.end <= at]
    tail = [replace(t, start=t.start - at) for t in tokens if t.start >= at]
    return head, tail


def through_edit(tokens: Sequence[Token], original: str, edited: str) -> list[Token]:
    """Token data of ``edited`` (a human's version of ``original``): the tokens whose
    characters the human left untouched, at their new offsets."""
    if original == edited:
        return list(tokens)
    out: list[Token] = []
    matcher = difflib.SequenceMatcher(None, original, edited, autojunk=False)
    starts = [t.start for t in tokens]
    for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
        if tag != "equal":
            continue
        for t in tokens[bisect.bisect_left(starts, i1):]:
            if t.start >= i2:
                break
            if t.end <= i2:
                out.append(replace(t, start=t.start - i1 + j1))
    return out


def token_at(tokens: Sequence[Token], offset: int) -> Token | None:
    """The token covering character ``offset``, or None."""
    i = bisect.bisect_right([t.start for t in tokens], offset) - 1
    if i >= 0 and tokens[i].start <= offset < tokens[i].end:
        return tokens[i]
    return None


def runs(tokens: Sequence[Token]) -> list[tuple[int, int, int]]:
    """``(start, end, bucket)`` for colouring: adjacent tokens of one bucket as one run;
    tokens of unknown probability are left out."""
    out: list[tuple[int, int, int]] = []
    for t in tokens:
        b = bucket(t.probability)
        if b is None:
            continue
        if out and out[-1][2] == b and out[-1][1] == t.start:
            out[-1] = (out[-1][0], t.end, b)
        else:
            out.append((t.start, t.end, b))
    return out


# ── the least likely spans ───────────────────────────────────────────────────────────

#: A token less likely than this (1 in 1,000) is surprising: the editors mark runs of
#: them. (A small model finds most of a writer's tokens under 1%: marks at 1% covered
#: every other word.)
SURPRISING = 0.001


@dataclass(frozen=True, slots=True)
class Surprise:
    """A run of adjacent surprising tokens: where it sits, its log-probability (the sum of
    its tokens'), and its first token (where the model's own choice would branch)."""

    start: int
    end: int
    logprob: float
    first: Token

    @property
    def probability(self) -> float:
        return math.exp(self.logprob)


def surprises(tokens: Sequence[Token], below: float = SURPRISING,
              limit: int | None = None) -> list[Surprise]:
    """The runs of adjacent tokens each less likely than ``below``, least likely first
    (at most ``limit``); tokens of unknown probability end a run."""
    floor = math.log(below)
    found: list[Surprise] = []
    run: list[Token] = []

    def close() -> None:
        if run:
            found.append(Surprise(run[0].start, run[-1].end,
                                  sum(t.logprob or 0.0 for t in run), run[0]))
            run.clear()

    for t in tokens:
        if t.logprob is not None and t.logprob < floor and (not run or run[-1].end == t.start):
            run.append(t)
            continue
        close()
        if t.logprob is not None and t.logprob < floor:
            run.append(t)
    close()
    found.sort(key=lambda s: (s.logprob, s.start))
    return found if limit is None else found[:limit]


def model_choice(tok: Token) -> tuple[str, float | None] | None:
    """The alternative the model liked best at ``tok``'s place, when it is not ``tok``."""
    for text, lp in tok.alternatives:
        if text and text != tok.text:
            return text, lp
        if text == tok.text:
            return None  # the model's first choice was the token itself
    return None


def mean_probability(tokens: Sequence[Token]) -> float | None:
    """The geometric mean of the known tokens' probabilities (``exp`` of the mean
    log-probability): how likely the text was, a token at a time."""
    known = [t.logprob for t in tokens if t.logprob is not None]
    return math.exp(sum(known) / len(known)) if known else None


# ── the stored form ──────────────────────────────────────────────────────────────────


def _q(logprob: float | None) -> int:
    if logprob is None or logprob != logprob:  # unknown, or NaN
        return _UNKNOWN
    q = round(-logprob * _SCALE)
    return 0 if q < 0 else (q if q < _MAX_Q else _MAX_Q)


def _lp(q: int) -> float | None:
    return None if q == _UNKNOWN else -q / _SCALE


def encode(tokens: Sequence[Token], k: int) -> bytes:
    """The compact stored form of a node's token data (see the module docstring)."""
    strings: dict[str, int] = {}
    index = strings.setdefault
    q = _q
    gaps, idx, qs = array("I"), array("I"), array("H")
    n_alts, alt_idx, alt_qs = array("B"), array("I"), array("H")
    pos = 0
    for t in tokens:
        gaps.append(t.start - pos)
        pos = t.start + len(t.text)
        idx.append(index(t.text, len(strings)))
        qs.append(q(t.logprob))
        alts = t.alternatives[:255]
        n_alts.append(len(alts))
        for text, lp in alts:
            alt_idx.append(index(text, len(strings)))
            alt_qs.append(q(lp))
    raw = [s.encode("utf-8", "surrogatepass") for s in strings]
    lengths = array("I", [len(b) for b in raw])
    head = array("I", [min(k, 255), len(raw), len(tokens), len(alt_idx)])
    columns = (head, lengths, gaps, idx, qs, n_alts, alt_idx, alt_qs)
    if _SWAP:
        for c in columns:
            c.byteswap()
    body = b"".join(c.tobytes() for c in columns) + b"".join(raw)
    return _MAGIC + zlib.compress(body, 6)


def decode(data: bytes) -> tuple[int, list[Token]]:
    """``(k, tokens)`` from :func:`encode`'s bytes; ValueError for anything else."""
    k, strings, (gaps, idx, qs, n_alts, alt_idx, alt_qs) = _columns(data)
    out: list[Token] = []
    start = a = 0
    for i in range(len(idx)):
        text = strings[idx[i]]
        start += gaps[i]
        m = n_alts[i]
        alts = tuple((strings[alt_idx[j]], _lp(alt_qs[j])) for j in range(a, a + m))
        a += m
        out.append(Token(start, text, _lp(qs[i]), alts))
        start += len(text)
    return k, out


#: The largest stored log-probability (in thousandths of a nat) of each bucket.
_Q_CEILINGS: tuple[int, ...] = tuple(
    _MAX_Q if floor <= 0 else math.floor(-math.log(floor) * _SCALE) for floor in BUCKET_FLOORS)


def decode_runs(data: bytes) -> list[tuple[int, int, int]]:
    """:func:`runs` straight from the stored form, without building the tokens and their
    alternatives (colouring a long buffer needs only this)."""
    _k, strings, (gaps, idx, qs, _n, _ai, _aq) = _columns(data)
    lengths = [len(s) for s in strings]
    ceilings = _Q_CEILINGS
    out: list[tuple[int, int, int]] = []
    start = 0
    last_b, last_start, last_end = -1, 0, -1
    for gap, i, q in zip(gaps, idx, qs, strict=True):
        start += gap
        end = start + lengths[i]
        if q != _UNKNOWN:
            b = 0
            while q > ceilings[b]:
                b += 1
            if b == last_b and start == last_end:
                last_end = end
            else:
                if last_b >= 0:
                    out.append((last_start, last_end, last_b))
                last_b, last_start, last_end = b, start, end
        start = end
    if last_b >= 0:
        out.append((last_start, last_end, last_b))
    return out


_Columns = tuple[array, array, array, array, array, array]


def _columns(data: bytes) -> tuple[int, list[str], _Columns]:
    if not data.startswith(_MAGIC):
        raise ValueError("not Loom token data")
    try:
        body = zlib.decompress(data[len(_MAGIC):])
        head = array("I")
        head.frombytes(body[:16])
        if _SWAP:
            head.byteswap()
        k, n_strings, n, n_alt = head
        pos = 16
        cols = []
        for code, count in (("I", n_strings), ("I", n), ("I", n), ("H", n), ("B", n),
                            ("I", n_alt), ("H", n_alt)):
            col = array(code)
            size = col.itemsize * count
            col.frombytes(body[pos:pos + size])
            if _SWAP:
                col.byteswap()
            if len(col) != count:
                raise ValueError("truncated")
            cols.append(col)
            pos += size
        lengths = cols[0]
        strings = []
        for length in lengths:
            strings.append(body[pos:pos + length].decode("utf-8", "surrogatepass"))
            pos += length
        if max(cols[2], default=-1) >= n_strings or max(cols[5], default=-1) >= n_strings \
                or sum(cols[4]) != n_alt:
            raise ValueError("indices out of range")
    except (zlib.error, UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"damaged token data: {err}") from err
    return k, strings, tuple(cols[1:])  # type: ignore[return-value]
