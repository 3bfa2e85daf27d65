"""The one door every model call goes through: requests and replies are redacted here.

:func:`loom.llm.registry.make_provider` wraps every provider it makes in
:class:`RedactingProvider`, and the call sites that accept a provider factory (the
collaborator, the summary worker) wrap what the factory returns, so no provider, present
or future, can send or return a secret:

- out: the prompt, every chat message (the system prompt included) and the stop
  sequences are redacted before the provider sees them, for hosted and local models alike;
- back: streamed pieces pass through a :class:`~loom.llm.redact_stream.StreamRedactor` per
  continuation (a key split over chunks is held until it can be redacted whole), the
  stored text is what was released, token logprobs lose the tokens that spelled a secret,
  and the raw chunks are scrubbed across chunk boundaries too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from loom.llm.base import (
    ChatDelta,
    ChatMessage,
    CompleteDelta,
    Completion,
    GenerationResult,
    ModelError,
    Provider,
)
from loom.llm.redact_stream import StreamRedactor
from loom.model.sampling import Sampling
from loom.redact import may_hold_secret, redact, redact_obj, redact_pieces


class RedactingProvider:
    """A provider whose traffic is redacted both ways; anything else is the inner one's."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:  # profile, aclose, policy… of the inner provider
        return getattr(self.inner, name)

    async def complete(
        self,
        prompt: str,
        sampling: Sampling | None = None,
        *,
        on_delta: CompleteDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        sampling = sampling or Sampling()
        streams = [StreamRedactor() for _ in range(max(sampling.count, 1))]
        try:
            result = await self.inner.complete(
                redact(prompt),
                _redacted(sampling),
                on_delta=None if on_delta is None else _released(streams, on_delta),
                cancel=cancel,
            )
        except ModelError as err:
            _release_on_failure(err, streams, on_delta)
            raise
        return _finish(result, streams if on_delta is not None else None, on_delta)

    async def fill(self, prefix: str, suffix: str, sampling: Sampling | None = None, *,
                   strategy: str, on_delta: CompleteDelta | None = None,
                   cancel: asyncio.Event | None = None) -> GenerationResult:
        """``→ fill``'s texts between ``prefix`` and ``suffix``, both redacted as a prompt
        is, the texts as a completion's."""
        sampling = sampling or Sampling()
        streams = [StreamRedactor() for _ in range(max(sampling.count, 1))]
        try:
            result = await self.inner.fill(  # type: ignore[attr-defined]
                redact(prefix), redact(suffix), _redacted(sampling), strategy=strategy,
                on_delta=None if on_delta is None else _released(streams, on_delta),
                cancel=cancel)
        except ModelError as err:
            _release_on_failure(err, streams, on_delta)
            raise
        return _finish(result, streams if on_delta is not None else None, on_delta)

    def chats_at_once(self, sampling: Sampling | None) -> bool:
        at_once = getattr(self.inner, "chats_at_once", None)
        return bool(at_once(sampling)) if at_once is not None else False

    async def chats(self, messages: list[ChatMessage], sampling: Sampling | None = None, *,
                    on_delta: CompleteDelta | None = None,
                    cancel: asyncio.Event | None = None) -> GenerationResult:
        """``sampling.n`` replies from one request, redacted as ``chat``'s are."""
        sampling = sampling or Sampling()
        streams = [StreamRedactor() for _ in range(max(sampling.count, 1))]
        try:
            result = await self.inner.chats(  # type: ignore[attr-defined]
                [redact_message(m) for m in messages], _redacted(sampling),
                on_delta=None if on_delta is None else _released(streams, on_delta),
                cancel=cancel)
        except ModelError as err:
            _release_on_failure(err, streams, on_delta)
            raise
        return _finish(result, streams if on_delta is not None else None, on_delta)

    async def chat(
        self,
        messages: list[ChatMessage],
        sampling: Sampling | None = None,
        *,
        on_delta: ChatDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        streams = [StreamRedactor()]
        deliver: CompleteDelta | None = None
        if on_delta is not None:
            chat_delta = on_delta
            deliver = lambda _index, piece: chat_delta(piece)  # noqa: E731
        try:
            result = await self.inner.chat(
                [redact_message(m) for m in messages],
                _redacted(sampling or Sampling()),
                on_delta=None if deliver is None else _chat_released(streams[0], deliver),
                cancel=cancel,
            )
        except ModelError as err:
            _release_on_failure(err, streams, deliver)
            raise
        return _finish(result, streams if deliver is not None else None, deliver)


def redacting(provider: Provider) -> Provider:
    """``provider`` behind the redaction door (once: wrapping twice changes nothing)."""
    if isinstance(provider, RedactingProvider):
        return provider
    return RedactingProvider(provider)


def redact_message(message: ChatMessage) -> ChatMessage:
    cleaned = redact(message.content)
    return message if cleaned == message.content else message.model_copy(
        update={"content": cleaned})


def _redacted(sampling: Sampling) -> Sampling:
    """``sampling`` with its text (the stop strings) redacted."""
    texts: dict[str, Any] = {}
    for key, value in sampling.chosen().items():
        if isinstance(value, str):
            texts[key] = redact(value)
        elif isinstance(value, list):
            texts[key] = [redact(s) if isinstance(s, str) else s for s in value]
        elif key == "extra":
            texts[key] = redact_obj(value)
    return sampling.model_copy(update=texts) if texts else sampling


def _released(streams: list[StreamRedactor], on_delta: CompleteDelta) -> CompleteDelta:
    def deliver(index: int, piece: str) -> None:
        out = streams[index].feed(piece)
        if out:
            on_delta(index, out)

    return deliver


def _chat_released(stream: StreamRedactor, deliver: CompleteDelta) -> ChatDelta:
    def on_piece(piece: str) -> None:
        out = stream.feed(piece)
        if out:
            deliver(0, out)

    return on_piece


def _release_on_failure(
    err: ModelError, streams: list[StreamRedactor], on_delta: CompleteDelta | None
) -> None:
    """A stream cut by a failure (not a cancel: nothing is delivered after one) still
    shows all it received, redacted; the caller's error is the failure, not a delta's."""
    if on_delta is None or err.kind == "cancelled":
        return
    for index, stream in enumerate(streams):
        tail = stream.flush()
        if tail:
            with contextlib.suppress(Exception):
                on_delta(index, tail)


def _finish(
    result: GenerationResult,
    streams: list[StreamRedactor] | None,
    on_delta: Callable[[int, str], None] | None,
) -> GenerationResult:
    """The result with redacted text (the streamed pieces and the rest of each stream
    delivered first), logprobs and raw chunks."""
    completions: list[Completion] = []
    for completion in result.completions:
        stream = None
        if streams is not None and 0 <= completion.index < len(streams):
            stream = streams[completion.index]
        if stream is not None:
            tail = stream.flush()
            if tail and on_delta is not None:
                on_delta(completion.index, tail)
            # What was shown is what is stored, unless the provider's text is not the
            # streamed text (then its own text, redacted whole).
            text = stream.text if stream.received == completion.text else None
        else:
            text = None
        if text is None:
            text = redact(completion.text, final=True)
        completions.append(completion.model_copy(update={
            "text": redact(text),  # idempotent: a last check, normally a no-op
            "logprobs": scrub_logprobs(completion.logprobs),
        }))
    return result.model_copy(update={"completions": completions, "raw": scrub_raw(result.raw)})


def scrub_logprobs(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Token logprobs with the tokens that spell a secret redacted (and their
    alternatives dropped: near a secret they could spell it too)."""
    if not entries:
        return entries
    tokens = [e.get("token") if isinstance(e.get("token"), str) else "" for e in entries]
    cleaned, touched = redact_pieces(tokens)
    if not any(touched):
        return entries
    return [
        {**entry, "token": token, "top_logprobs": []} if hit else entry
        for entry, token, hit in zip(entries, cleaned, touched, strict=True)
    ]


_TEXT_KEYS = ("text", "content")
_Ref = tuple[dict[str, Any], str, dict[str, Any]]


def scrub_raw(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Raw stream chunks with secrets removed, including one split over several chunks.

    The text pieces of one continuation (``choices[i].text``, ``delta.content``, Anthropic's
    ``delta.text``…) are redacted as one text; a chunk whose piece held part of a secret
    also loses its logprobs (their tokens spell the same text). Every other string is
    redacted on its own. Clean chunks (the usual case) are returned as they are.
    """
    if not raw:
        return raw
    groups: dict[Any, list[_Ref]] = {}
    others: set[str] = set()
    for chunk in raw:
        _collect(chunk, chunk, 0, groups, others)
    for refs in groups.values():
        cleaned, touched = redact_pieces([holder[key] for holder, key, _owner in refs])
        for (holder, key, owner), value, hit in zip(refs, cleaned, touched, strict=True):
            if hit:
                holder[key] = value
                if owner.get("logprobs") is not None:
                    owner["logprobs"] = None
    if others and may_hold_secret("\x00".join(others)):
        return [redact_obj(chunk) for chunk in raw]
    return raw


def _collect(obj: Any, owner: dict[str, Any], group: Any, groups: dict[Any, list[_Ref]],
             others: set[str]) -> None:
    """Gather the text pieces in ``obj`` by continuation (a choice's index, else one group;
    ``group`` None: not text, as inside logprobs) and every other string (keys included)
    into ``others``."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            others.add(key)
            if isinstance(value, str):
                if group is not None and key in _TEXT_KEYS:
                    groups.setdefault(group, []).append((obj, key, owner))
                else:
                    others.add(value)
            elif key == "choices" and group is not None and isinstance(value, list):
                for choice in value:
                    if isinstance(choice, dict):
                        index = choice.get("index")
                        _collect(choice, choice, ("choice", index if isinstance(index, int)
                                                  else 0), groups, others)
                    else:
                        _collect(choice, owner, None, groups, others)
            elif isinstance(value, dict | list):
                # Logprobs are strings to check, not pieces of the text.
                _collect(value, owner, None if key == "logprobs" else group, groups, others)
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, str):
                others.add(item)
            else:
                _collect(item, owner, group, groups, others)
