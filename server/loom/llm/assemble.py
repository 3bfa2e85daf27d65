"""Collect streamed pieces from one or more requests into a :class:`GenerationResult`.

A :class:`Collector` owns the per-index text; each request attempt gets a :class:`Sink`
that first resets the indices it serves (so a retried request starts clean), forwards
every piece to ``on_delta`` and marks the attempt as ``streamed``. Once ``cancel`` is
set no further piece is delivered.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

from loom.llm.aio import cancelled_error
from loom.llm.base import Completion, GenerationResult, Usage
from loom.llm.retry import Attempt
from loom.redact import redact_json_text, redact_obj

_RAW = TypeAdapter(list[Any])


def raw_to_json(items: list[Any]) -> list[dict[str, Any]]:
    """Streamed chunks (SDK models or dicts) as redacted JSON-able dicts.

    One pydantic serialisation of the whole list (fields the server did not send are
    left out, as in the SDKs' ``to_dict``), one redaction pass over its text.
    """
    if not items:
        return []
    try:
        text = _RAW.dump_json(items, by_alias=True, exclude_unset=True, warnings=False).decode()
        return json.loads(redact_json_text(text))
    except (PydanticSerializationError, ValueError, TypeError):
        plain = [i.to_dict() if hasattr(i, "to_dict") else i for i in items]
        return [redact_obj(item) for item in plain]


class DeltaCallbackError(Exception):
    """An exception raised by the caller's ``on_delta``; re-raised as the original."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


class Collector:
    def __init__(
        self,
        n: int,
        on_delta: Callable[[int, str], None] | None,
        cancel: asyncio.Event | None,
    ) -> None:
        self.n = n
        self.on_delta = on_delta
        self.cancel = cancel
        self.started = time.perf_counter()
        self.texts: list[list[str]] = [[] for _ in range(n)]
        self.finish: list[str | None] = [None] * n
        self.logprobs: list[list[dict[str, Any]] | None] = [None] * n
        self.usage: list[Usage | None] = [None] * n
        self.shared_usage: dict[int, Usage] = {}
        self.raw: dict[int, list[Any]] = {}

    def begin(self, attempt: Attempt, indices: Iterable[int]) -> Sink:
        indices = list(indices)
        slot = indices[0]
        for i in indices:
            self.texts[i] = []
            self.finish[i] = None
            self.logprobs[i] = None
            self.usage[i] = None
        self.shared_usage.pop(slot, None)
        self.raw[slot] = []
        return Sink(self, attempt, indices, slot)

    def build(self, *, model: str, provider: str, params: dict[str, Any]) -> GenerationResult:
        latency_ms = (time.perf_counter() - self.started) * 1000
        completions = [
            Completion(
                index=i,
                text="".join(self.texts[i]),
                finish_reason=self.finish[i],
                logprobs=self.logprobs[i],
                usage=self.usage[i],
            )
            for i in range(self.n)
        ]
        total = Usage()
        for u in self.usage:
            if u is not None:
                total = total + u
        for u in self.shared_usage.values():
            total = total + u
        raw = [chunk for slot in sorted(self.raw) for chunk in self.raw[slot]]
        return GenerationResult(
            completions=completions,
            model=model,
            provider=provider,
            params=params,
            usage=total,
            latency_ms=latency_ms,
            raw=raw_to_json(raw),
        )


class Sink:
    """Where one request attempt writes what it receives."""

    __slots__ = ("_attempt", "_c", "_raw", "_slot", "indices", "received")

    def __init__(self, collector: Collector, attempt: Attempt, indices: list[int], slot: int):
        self._c = collector
        self._attempt = attempt
        self._slot = slot
        self._raw = collector.raw[slot]
        self.indices = indices
        self.received = 0

    def raw(self, chunk: Any) -> None:
        """Keep a chunk as received: an SDK model or a plain dict."""
        self.received += 1
        self._raw.append(chunk)

    def text(self, index: int, piece: str) -> None:
        if not piece:
            return
        c = self._c
        if c.cancel is not None and c.cancel.is_set():
            raise cancelled_error()
        c.texts[index].append(piece)
        self._attempt.streamed = True
        if c.on_delta is not None:
            try:
                c.on_delta(index, piece)
            except Exception as exc:
                raise DeltaCallbackError(exc) from exc

    def finish(self, index: int, reason: str | None) -> None:
        if reason is not None:
            self._c.finish[index] = reason

    def logprobs(self, index: int, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        current = self._c.logprobs[index]
        if current is None:
            self._c.logprobs[index] = list(items)
        else:
            current.extend(items)

    def usage(self, usage: Usage, index: int | None = None) -> None:
        """Usage of one completion (``index``) or of the whole request."""
        if index is None:
            self._c.shared_usage[self._slot] = usage
        else:
            self._c.usage[index] = usage
