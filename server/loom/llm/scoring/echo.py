"""The prompt's own log-probabilities from an OpenAI-compatible completion server.

Two shapes, asked for in turn (and the one that answered remembered per profile):

- **echo**: the legacy completions endpoint with ``echo: true`` and ``logprobs: k``
  returns the prompt's tokens in its ``logprobs`` (``tokens``, ``token_logprobs``,
  ``top_logprobs``, ``text_offset``), the first token's probability null (nothing predicts
  it): OpenAI's completion models and vLLM answer it;
- **prompt_logprobs** (vLLM's own): ``prompt_logprobs: k`` returns, for each prompt token,
  a map of token ids to ``{logprob, rank, decoded_token}`` holding the prompt's token and
  the top k; which entry is the prompt's is read from ``prompt_token_ids`` where the server
  sends them, else from which spell the prompt.

One request scores the whole text (prompt processing: no decoding); ``max_tokens`` is 1,
the least every server takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from loom.llm.aio import run_cancellable
from loom.llm.base import ModelError
from loom.llm.config import ModelProfile
from loom.llm.providers._common import log_request, malformed, sdk_errors
from loom.llm.retry import call_with_retry
from loom.llm.scoring.pieces import Piece, by_piece
from loom.model import tokens as T

ECHO, PROMPT_LOGPROBS = "echo", "prompt_logprobs"
#: What each profile's server answered (asked first next time).
_ANSWERED: dict[str, str] = {}
_READ_ERRORS = (AttributeError, KeyError, TypeError, IndexError, ValueError)


async def score_echo(profile: ModelProfile, prefix: str, pieces: Sequence[Piece], k: int,
                     cancel: asyncio.Event | None) -> list[list[T.Token]]:
    """Each wanted piece's tokens, from one request over the whole text."""
    from loom.llm.providers.openai import OpenAIProvider

    provider = OpenAIProvider(profile)
    text = prefix + "".join(p.text for p in pieces)
    try:
        found = await run_cancellable(_ask(provider, text, max(k, 1)), cancel)
    finally:
        await provider.aclose()
    return by_piece(found, pieces, len(prefix))


async def _ask(provider: Any, text: str, k: int) -> list[T.Token]:
    profile: ModelProfile = provider.profile
    shapes = [ECHO, PROMPT_LOGPROBS]
    if _ANSWERED.get(profile.name) == PROMPT_LOGPROBS:
        shapes.reverse()
    refused: list[str] = []
    for shape in shapes:
        try:
            found = await call_with_retry(lambda _a, s=shape: _once(provider, text, k, s),
                                          provider.policy)
        except ModelError as err:
            if err.kind != "bad_request":
                raise
            refused.append(f"{shape}: {err.message}")
            continue
        if found:
            _ANSWERED[profile.name] = shape
            return found
        refused.append(f"{shape}: none returned")
    raise ModelError(
        "bad_request", f"{profile.name} ({profile.provider} {profile.model}) returned no "
        f"log-probabilities of given text ({'; '.join(refused)})",
        "score with the local model (→ score model:local), or point the profile at a server "
        "that returns the prompt's log-probabilities (vLLM, OpenAI's legacy completions)")


async def _once(provider: Any, text: str, k: int, shape: str) -> list[T.Token]:
    profile: ModelProfile = provider.profile
    payload: dict[str, Any] = {"model": profile.model, "prompt": text, "max_tokens": 1,
                               "temperature": 0}
    if shape == ECHO:
        payload.update(echo=True, logprobs=k)
    else:
        payload["extra_body"] = {PROMPT_LOGPROBS: k}
    log_request(profile, "completions (score)", payload)
    with sdk_errors(profile):
        reply = await provider.client().completions.create(**payload)
    try:
        choice = reply.choices[0]
        if shape == ECHO:
            return _echoed(text, choice.logprobs)
        extra = choice.model_extra or {}
        ids = extra.get("prompt_token_ids") or (reply.model_extra or {}).get(
            "prompt_token_ids")
        return _prompt_logprobs(text, extra.get(PROMPT_LOGPROBS), ids, k)
    except _READ_ERRORS as exc:
        raise malformed(profile, f"sent prompt log-probabilities Loom cannot read "
                        f"({exc!r})") from exc


def _alts(top: Mapping[str, Any] | None) -> tuple[tuple[str, float | None], ...]:
    if not top:
        return ()
    ranked = sorted(((t, float(lp) if isinstance(lp, int | float) else None)
                     for t, lp in top.items()),
                    key=lambda kv: float("inf") if kv[1] is None else -kv[1])
    return tuple(ranked)


def _echoed(text: str, logprobs: Any) -> list[T.Token]:
    """The prompt's tokens from an echo: placed by ``text_offset`` where it is given (a
    token holding part of a character is joined to the next), else one after another."""
    if logprobs is None:
        return []
    tokens = list(logprobs.tokens or [])
    values = list(logprobs.token_logprobs or [])
    tops = list(logprobs.top_logprobs or [])
    offsets = list(getattr(logprobs, "text_offset", None) or [])
    if len(offsets) != len(tokens):
        offsets, pos = [], 0
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
    n = len(tokens)

    def value(i: int) -> float | None:
        lp = values[i] if i < len(values) else None
        return float(lp) if isinstance(lp, int | float) else None

    def clean(i: int) -> bool:
        return bool(tokens[i]) and text.startswith(tokens[i], offsets[i])

    out: list[T.Token] = []
    i = 0
    while i < n and offsets[i] < len(text):
        start, lp, j = offsets[i], value(i), i + 1
        if clean(i):
            end = start + len(tokens[i])
        else:  # part of a character: joined with the next until a token spells the text
            while j < n and offsets[j] < len(text) and not (offsets[j] > start and clean(j)):
                nxt = value(j)
                lp = None if lp is None or nxt is None else lp + nxt
                j += 1
            end = offsets[j] if j < n else len(text)
        piece = text[start:min(end, len(text))]
        if piece:
            out.append(T.Token(start, piece, lp, _alts(tops[i] if i < len(tops) else None)))
        i = j
    return out


def _prompt_logprobs(text: str, positions: Any, ids: Sequence[int] | None, k: int
                     ) -> list[T.Token]:
    """vLLM's ``prompt_logprobs`` placed over ``text``: a walk that takes, at each
    position, a candidate that spells the text there (the prompt's own token, by id when
    the server says which), backing up where a choice leads nowhere."""
    if not positions:
        return []
    n = len(positions)
    known = ids if ids is not None and len(ids) == n else None

    def options(i: int, off: int) -> list[tuple[str, float | None, dict[str, Any]]]:
        if i >= n:
            return []
        if i == 0:  # nothing predicts the first token: any length that lets the rest fit
            return [(text[off:off + size], None, {}) for size in
                    range(min(64, len(text) - off), 0, -1)]
        entry = positions[i] or {}
        if known is not None:
            cands = [entry.get(str(known[i])) or entry.get(known[i])]  # type: ignore[call-overload]
        else:
            cands = sorted(entry.values(), key=lambda c: -len(c.get("decoded_token") or ""))
        out = []
        for c in cands:
            word = (c or {}).get("decoded_token") or ""
            if word and text.startswith(word, off):
                out.append((word, c.get("logprob"), entry))
        return out

    stack = [(0, 0, options(0, 0), 0)]
    chosen: list[tuple[int, str, float | None, dict[str, Any]]] = []
    dead: set[tuple[int, int]] = set()
    while stack:
        i, off, opts, at = stack[-1]
        if i == n:
            if off == len(text):
                break
            stack.pop()
            dead.add((i, off))
            if chosen:
                chosen.pop()
            continue
        if at >= len(opts):
            stack.pop()
            dead.add((i, off))
            if chosen:
                chosen.pop()
            continue
        stack[-1] = (i, off, opts, at + 1)
        word, lp, entry = opts[at]
        if (i + 1, off + len(word)) in dead:
            continue
        chosen.append((off, word, lp, entry))
        stack.append((i + 1, off + len(word), options(i + 1, off + len(word)), 0))
    else:
        return []
    out = []
    for off, word, lp, entry in chosen:
        alts = _alts({(c or {}).get("decoded_token") or "": (c or {}).get("logprob")
                      for c in entry.values() if (c or {}).get("decoded_token")})[:k]
        out.append(T.Token(off, word, float(lp) if isinstance(lp, int | float) else None,
                           alts))
    return out
