"""Teacher forcing through llama-server: the exact probability of each given token.

llama-server (llama.cpp as vendored in llama-cpp-python 0.3.36) reports log-probabilities
only of tokens it samples, never of a prompt's own (its OpenAI endpoint refuses ``echo``),
so each token of the text is a request of its own: the prompt is the token ids before it,
``logit_bias`` makes the sampler pick exactly that token, and ``logprobs`` reports its
probability and the top-k alternatives before sampling, the numbers a generation reports.
The server keeps the slot's cache, so a step evaluates one token: scoring ``n`` tokens
costs ``n`` single-token evaluations, as generating them does (``bench/bench_models.py``
measures the two). Two steps are in flight at once, so the server never waits for the
next request. A token that ends inside a character (an emoji's bytes) is the exception:
the server reports nothing of a sampled token like that, so its probability is read from
the distribution at its place, a whole token sampled instead (dearer: the likeliest 256
alternatives are asked for, and all of them where it is not among those).

It runs in the local model's process of one slot (the one seeded requests use): nothing is
decoded in a batch beside it, so text the model wrote scores as the model reported it while
writing it (``tests/e2e/test_score_local.py`` checks it to 1e-3). A text longer than the
slot's context is read through a window: the prompt keeps the last half of the context or
more, shifted half a window at a time, so the cache is reused between shifts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from loom.llm.aio import gather_all, run_cancellable
from loom.llm.config import ModelProfile
from loom.llm.providers._common import malformed, sdk_errors
from loom.llm.providers.local import LocalProvider
from loom.llm.scoring.pieces import Piece, Progress
from loom.llm.service import client as service
from loom.llm.service.record import ServiceRecord
from loom.model import tokens as T

#: Requests in flight at once (the server takes them one after another).
PIPELINE = 2
#: A bias no logit outweighs: the sampler takes the given token.
FORCE = 100
_READ_ERRORS = (AttributeError, KeyError, TypeError, IndexError, ValueError)

R = TypeVar("R")
Step = dict[str, Any]  # the server's entry for one forced token


class _Service(LocalProvider):
    """The local model's process of one slot, for the scorer's own requests."""

    def __init__(self, profile: ModelProfile) -> None:
        super().__init__(profile, exclusive=True)

    async def run(self, call: Callable[[Any, ServiceRecord], Awaitable[R]]) -> R:
        return await self._served(lambda: call(self.client(), self._record))  # type: ignore[arg-type]


async def score_local(profile: ModelProfile, prefix: str, pieces: Sequence[Piece], k: int,
                      cancel: asyncio.Event | None, on_progress: Progress | None
                      ) -> list[list[T.Token]]:
    """Each wanted piece's tokens with their probabilities, read after ``prefix``."""
    svc = _Service(profile)
    try:
        return await run_cancellable(svc.run(
            lambda client, record: _force(client, record, profile, prefix, pieces, k,
                                          on_progress)), cancel)
    finally:
        await svc.aclose()


async def _force(client: Any, record: ServiceRecord, profile: ModelProfile, prefix: str,
                 pieces: Sequence[Piece], k: int, on_progress: Progress | None
                 ) -> list[list[T.Token]]:
    with sdk_errors(profile):
        context = await _tokenize(client, record, prefix, special=True) if prefix else []
        parts = [await _tokenize(client, record, p.text, special=False) for p in pieces]
    seq = [tid for tid, _ in context]
    whole: set[int] = set()  # positions whose token is a whole character or more
    wanted: list[int] = []  # positions in seq to score
    for p, toks in zip(pieces, parts, strict=True):
        if p.wanted:
            wanted += range(len(seq), len(seq) + len(toks))
        for tid, raw in toks:
            if _whole(raw):
                whole.add(len(seq))
            seq.append(tid)
    filler = (await _tokenize(client, record, ".", special=False))[0][0] \
        if len(whole) < len(wanted) else 0
    limit = max(16, service.CTX - 8)
    done = 0

    async def step(pos: int, gate: asyncio.Semaphore) -> Step | None:
        nonlocal done
        if pos == 0:  # the text's first token: nothing before it predicts it
            return None
        async with gate:
            start = _window(pos, limit)
            with sdk_errors(profile):
                if pos in whole:
                    entry = await _forced(client, seq[start:pos], seq[pos], k)
                else:
                    entry = await _weighed(client, record, seq[start:pos], seq[pos],
                                           filler, k)
        if entry is None:
            raise malformed(profile, "did not give the given token's probability")
        done += 1
        if on_progress is not None:
            on_progress(done, len(wanted))
        return entry

    gate = asyncio.Semaphore(PIPELINE)
    steps = dict(zip(wanted, await gather_all([step(pos, gate) for pos in wanted]),
                     strict=True))
    out: list[list[T.Token]] = []
    pos = len(context)
    for p, toks in zip(pieces, parts, strict=True):
        if p.wanted:
            out.append(_tokens(p.text, [(b, steps[pos + i]) for i, (_, b) in
                                        enumerate(toks)], k))
        pos += len(toks)
    return out


async def _forced(client: Any, prompt: list[int], token: int, k: int) -> Step | None:
    """The server's entry for ``token`` after ``prompt``: sampled because it is forced."""
    reply = await client.post("/completions", cast_to=object, body={
        "prompt": prompt, "max_tokens": 1, "logprobs": max(k, 1), "temperature": 0,
        "logit_bias": {str(token): FORCE}, "cache_prompt": True})
    try:
        entry: Step = reply["choices"][0]["logprobs"]["content"][0]
        ok = entry["id"] == token and isinstance(entry["logprob"], int | float)
    except _READ_ERRORS:
        return None
    return entry if ok else None


#: Alternatives asked for first where a token is part of a character (then all of them).
_WIDE_FIRST = 256
_EVERY = 1 << 20  # more than any vocabulary: the server gives them all


async def _weighed(client: Any, record: ServiceRecord, prompt: list[int], token: int,
                   filler: int, k: int) -> Step | None:
    """The entry for ``token`` (a part of a character) after ``prompt``, read from the
    distribution there: the server reports nothing of a sampled token that ends inside a
    character, so a whole one (``filler``) is sampled instead, and ``token`` found among
    the alternatives (the likeliest few first, else all of them)."""
    for wide in (_WIDE_FIRST, _EVERY):
        reply = await client.post(f"{record.root_url}/completion", cast_to=object, body={
            "prompt": prompt, "n_predict": 1, "n_probs": wide, "temperature": 0,
            "logit_bias": [[filler, FORCE]], "cache_prompt": True})
        try:
            top = reply["completion_probabilities"][0]["top_logprobs"]
            found = next((e for e in top if e["id"] == token), None)
        except _READ_ERRORS:
            return None
        if found is not None:
            whole = [e for e in top if _whole(bytes(e.get("bytes") or b""))]
            return {"id": token, "logprob": found["logprob"], "top_logprobs": whole[:k]}
    return None


def _whole(raw: bytes) -> bool:
    """Whether a token's bytes are whole characters."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _window(pos: int, limit: int) -> int:
    """Where the prompt of the token at ``pos`` starts: 0 while the text before it fits
    the context, then half a context further each time it would not (the cache is reused
    between shifts)."""
    if pos <= limit:
        return 0
    half = limit // 2
    return ((pos - limit) // half + 1) * half


async def _tokenize(client: Any, record: ServiceRecord, text: str, *, special: bool
                    ) -> list[tuple[int, bytes]]:
    """``text``'s token ids and each token's bytes, as the server tokenizes it."""
    reply = await client.post(f"{record.root_url}/tokenize", cast_to=object, body={
        "content": text, "add_special": special, "with_pieces": True})
    out = []
    for tok in reply["tokens"]:
        piece = tok["piece"]
        out.append((int(tok["id"]), piece.encode("utf-8") if isinstance(piece, str)
                    else bytes(piece)))
    return out


def _ranked(alts: list[dict[str, Any]], k: int) -> tuple[tuple[str, float | None], ...]:
    """The alternatives as the server ranked them (likeliest first), each text once."""
    seen: dict[str, float | None] = {}
    for a in alts:
        lp = a["logprob"]
        seen.setdefault(a["token"], float(lp) if isinstance(lp, int | float) else None)
    return tuple(seen.items())[:k]


def _tokens(text: str, steps: list[tuple[bytes, Step | None]], k: int) -> list[T.Token]:
    """A piece's tokens from their bytes and steps: tokens that hold part of a character
    join the next until the character is whole (their log-probabilities summed, the first
    one's alternatives kept); a token is kept only where it spells ``text``."""
    out: list[T.Token] = []
    pos = 0
    i = 0
    while i < len(steps):
        raw, first = steps[i]
        lp = _lp(first)
        j = i + 1
        while True:
            try:
                piece = raw.decode("utf-8")
                break
            except UnicodeDecodeError:
                if j >= len(steps) or len(raw) > 8:
                    piece = None
                    break
                raw += steps[j][0]
                nxt = _lp(steps[j][1])
                lp = None if lp is None or nxt is None else lp + nxt
                j += 1
        if piece is None:
            break  # bytes that never make a character: the rest cannot be placed
        if piece and text.startswith(piece, pos):
            out.append(T.Token(pos, piece, lp, _ranked(_alts(first), k)))
        pos += len(piece)
        i = j
    return out


def _lp(step: Step | None) -> float | None:
    return None if step is None else float(step["logprob"])


def _alts(entry: Step | None) -> list[dict[str, Any]]:
    out = []
    for alt in (entry or {}).get("top_logprobs") or ():
        try:
            out.append({"token": bytes(alt["bytes"]).decode("utf-8"),
                        "logprob": alt.get("logprob")})
        except (KeyError, TypeError, ValueError):
            continue  # a part of a character: no text to offer
    return out
