"""One retry policy for every provider, built on tenacity.

Only transport-class failures are retried (``ModelError.retryable``: timeouts,
connection errors, 429, 5xx), and only while nothing has streamed for that request —
a half-delivered continuation is never silently restarted. Waits are jittered
exponential backoff (base 2 s, capped at 60 s by default), honouring a server's
``Retry-After`` up to the cap. The SDKs' own retries are switched off (max_retries=0),
so this is the only policy. Tests scale the waits down through the profile's
``backoff_base_s`` / ``backoff_max_s``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
)

from loom.llm.base import ModelError

if TYPE_CHECKING:
    from loom.llm.config import ModelProfile

log = logging.getLogger("loom.llm")
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    base_s: float = 2.0
    max_s: float = 60.0

    @classmethod
    def from_profile(cls, profile: ModelProfile) -> RetryPolicy:
        return cls(
            max_attempts=max(1, profile.max_attempts),
            base_s=profile.backoff_base_s,
            max_s=profile.backoff_max_s,
        )


class Attempt:
    """Per-attempt state a provider updates: ``streamed`` once any text reached on_delta."""

    __slots__ = ("number", "streamed")

    def __init__(self, number: int) -> None:
        self.number = number
        self.streamed = False


def _should_retry(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.retryable and not exc.partial


class _Wait:
    """``min(base * 2**k + uniform(0, base), max)``, or a longer ``Retry-After`` (capped)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._base = policy.base_s
        self._max = policy.max_s

    def __call__(self, state: RetryCallState) -> float:
        k = min(state.attempt_number - 1, 30)
        wait = min(self._base * 2**k + random.uniform(0, self._base), self._max)
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ModelError) and exc.retry_after_s is not None:
            wait = max(wait, min(exc.retry_after_s, self._max))
        return wait


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning(
        "model call failed (attempt %d): %s; retrying in %.2fs",
        state.attempt_number,
        exc,  # ModelError messages are already redacted
        wait,
    )


async def call_with_retry(
    fn: Callable[[Attempt], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``fn`` under ``policy``; ``fn`` raises :class:`ModelError` on failure.

    A failure after ``attempt.streamed`` was set is marked ``partial`` and raised at once.
    The first attempt runs outside tenacity so the common, successful call pays nothing
    for the retry machinery; tenacity takes over from the first retryable failure.
    """
    first = Attempt(1)
    try:
        return await fn(first)
    except ModelError as exc:
        if first.streamed:
            exc.partial = True
        if policy.max_attempts <= 1 or not _should_retry(exc):
            raise
        first_error = exc

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts),
        wait=_Wait(policy),
        retry=retry_if_exception(_should_retry),
        before_sleep=_log_retry,
        sleep=sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            number = attempt.retry_state.attempt_number
            if number == 1:
                raise first_error  # replay the first failure so tenacity waits and logs
            state = Attempt(number)
            try:
                return await fn(state)
            except ModelError as exc:
                if state.streamed:
                    exc.partial = True
                raise
    raise AssertionError("unreachable")  # pragma: no cover
