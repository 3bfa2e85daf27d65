"""Asyncio helpers: stopping a call when a cancel event fires, and an all-or-nothing gather."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from loom.llm.base import ModelError

T = TypeVar("T")


def cancelled_error() -> ModelError:
    return ModelError("cancelled", "generation cancelled", None, retryable=False)


async def run_cancellable(coro: Coroutine[Any, Any, T], cancel: asyncio.Event | None) -> T:
    """Await ``coro``; if ``cancel`` is set first, stop it and raise ``cancelled``.

    ``coro`` runs in the caller's task; a small watcher task cancels that task when the
    event fires, so a stalled server does not keep the caller waiting and the HTTP
    stream is closed. Nothing the coroutine built is returned once ``cancel`` fired.
    """
    if cancel is None:
        return await coro
    if cancel.is_set():
        coro.close()
        raise cancelled_error()
    current = asyncio.current_task()
    if current is None:  # pragma: no cover - always inside a task under asyncio
        return await coro
    fired = False

    async def watch() -> None:
        nonlocal fired
        await cancel.wait()
        fired = True
        current.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        result = await coro
    except asyncio.CancelledError:
        if fired:
            current.uncancel()
            raise cancelled_error() from None
        raise
    finally:
        watcher.cancel()
    if fired:  # the coroutine swallowed the cancellation and finished anyway
        current.uncancel()
        raise cancelled_error()
    return result


async def gather_all(aws: list[Awaitable[T]]) -> list[T]:
    """Like ``asyncio.gather`` but the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
