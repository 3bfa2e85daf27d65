"""The provider contract: what the executor and the summary queue see of any model.

Every provider streams. ``complete`` is for base models (one prompt in, n continuations
out); ``chat`` is for instruct models (one reply). Failures are raised as
:class:`ModelError`, whose ``message`` and ``hint`` are written for the user as
``✗ MODEL_ERROR: <message>`` / ``  hint: <hint>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from loom.model.sampling import Sampling

ErrorKind = Literal[
    "timeout",
    "rate_limited",
    "server",
    "auth",
    "bad_request",
    "malformed",
    "cancelled",
    "unavailable",
    "config",
]

ProviderName = Literal["anthropic", "openai", "openai-compatible", "local"]


class Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=_add(self.prompt_tokens, other.prompt_tokens),
            completion_tokens=_add(self.completion_tokens, other.completion_tokens),
        )


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class Completion(BaseModel):
    index: int
    text: str
    finish_reason: str | None = None
    # One dict per generated token: {"token", "logprob", "top_logprobs": [{"token", "logprob"}]}.
    logprobs: list[dict[str, Any]] | None = None
    usage: Usage | None = None
    #: Where one request asked several models: which made this one, and how.
    model: str | None = None
    provider: str | None = None
    params: dict[str, Any] | None = None


class GenerationResult(BaseModel):
    completions: list[Completion]
    model: str
    provider: str
    params: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float
    # Raw response bodies / stream chunks, already redacted of secrets.
    raw: list[dict[str, Any]] = Field(default_factory=list)
    #: Where one request asked several models: each that failed, and why (the others'
    #: continuations are kept).
    failures: list[str] = Field(default_factory=list)


class ImagePart(BaseModel):
    """An image sent with a message (seed 003 §4): a file on disk, read and encoded by the
    provider when the request is sent, never kept as base64 in memory or the store."""

    source: str  # a file path
    media_type: str  # image/png, image/jpeg, image/gif, image/webp
    size: int = 0  # bytes, for the text that stands for it


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str
    #: images after the text (a tool's result); only a model that sees images gets them
    images: list[ImagePart] = Field(default_factory=list)


class ModelError(Exception):
    """A model call that failed, classified so the caller can explain and decide.

    ``retryable`` says whether trying the same call again may succeed (transport
    failures, rate limits, 5xx); ``partial`` is set when output had already streamed
    when the failure happened (such a request is never retried automatically).
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        hint: str | None = None,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.hint = hint
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        self.partial = False

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"ModelError(kind={self.kind!r}, message={self.message!r}, hint={self.hint!r})"

    def render(self) -> str:
        """The two-line ``✗ MODEL_ERROR`` form used by the executor."""
        text = f"✗ MODEL_ERROR: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text


CompleteDelta = Callable[[int, str], None]
ChatDelta = Callable[[str], None]


@runtime_checkable
class Provider(Protocol):
    """A streaming model backend. Both methods are async and never block the loop."""

    name: str

    async def complete(
        self,
        prompt: str,
        sampling: Sampling | None = None,
        *,
        on_delta: CompleteDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        """``sampling.n`` continuations of ``prompt``; ``on_delta(index, piece)`` as text
        streams in. What ``sampling`` leaves unset is the profile's default."""
        ...

    async def chat(
        self,
        messages: list[ChatMessage],
        sampling: Sampling | None = None,
        *,
        on_delta: ChatDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        """One assistant reply to ``messages`` (``sampling.n`` is not read);
        ``on_delta(piece)`` as text streams in."""
        ...
