"""The local model (the bundled SmolLM2, or any .gguf profile) through its model service.

The model runs in a process of its own (:mod:`loom.llm.service`): llama.cpp's
``llama-server``, built portably, shared by every Loom process of the user and stopped when
idle. This provider starts it on demand and speaks to it like any OpenAI-compatible server:
``n`` continuations are decoded together in the server's parallel slots and stream as they
come; logprobs with top-k alternatives come from the server's sampling, not from keeping
every prompt token's logits. When the model process dies or hangs, the request gets a
``✗ MODEL_ERROR`` that says what happened, this process lives on, and the next request
starts a fresh model process. Transport retries are off: retrying a dead local process
only delays the explanation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai

from loom.llm.base import ChatDelta, ChatMessage, CompleteDelta, GenerationResult, ModelError
from loom.llm.config import ModelProfile
from loom.llm.providers.openai import OpenAIProvider
from loom.llm.service import client as service
from loom.llm.service.record import ServiceRecord
from loom.model.sampling import Sampling

#: Failures that may be the service's fault (a refused or cut connection, a timeout, a
#: reply that stopped making sense); others (a prompt too long) are the request's.
_SERVICE_KINDS = frozenset({"server", "timeout", "unavailable", "malformed"})

T = TypeVar("T")


class LocalProvider(OpenAIProvider):
    """``exclusive``: the provider of seeded requests (see ``_seeded``)."""

    def __init__(self, profile: ModelProfile, *, exclusive: bool = False) -> None:
        super().__init__(profile.model_copy(update={"max_attempts": 1}))
        self.name = profile.provider
        self._record: ServiceRecord | None = None
        self._parallel = 1 if exclusive else service.PARALLEL
        self._exclusive: LocalProvider | None = None

    def batch_size(self, n: int) -> int:
        return min(n, self._parallel)

    def sequential(self, params: dict[str, Any]) -> bool:
        # Decoded beside others in the server's parallel slots, a continuation's numbers
        # differ from the same continuation decoded alone, and so does its text: seeded
        # continuations are decoded one at a time, so that each can be made again exactly.
        return params.get("seed") is not None

    def _seeded(self, sampling: Sampling | None) -> LocalProvider | None:
        """Where a seeded request goes: a model process of one slot, shared by every Loom
        process of the user, so that no other client's request (another editor, the
        collaborator, a second test worker) is decoded in the same batch and changes the
        numbers. There a seed makes the same text again (``→ regenerate``)."""
        if sampling is None or sampling.seed is None or self._parallel == 1:
            return None
        if self._exclusive is None:
            self._exclusive = LocalProvider(self.profile, exclusive=True)
        return self._exclusive

    def _payload(self, params: dict[str, Any], *, chat: bool) -> dict[str, Any]:
        payload = super()._payload(params, chat=chat)
        if params.get("seed") is not None:  # the prompt evaluated afresh, as the first time
            payload["extra_body"] = {**payload.get("extra_body", {}), "cache_prompt": False}
        return payload

    def _key(self) -> str:
        assert self._record is not None
        return self._record.api_key

    def _make_client(self, key: str) -> openai.AsyncOpenAI:
        assert self._record is not None
        return openai.AsyncOpenAI(api_key=key, base_url=self._record.base_url,
                                  timeout=self.profile.timeout_s, max_retries=0)

    async def complete(self, prompt: str, sampling: Sampling | None = None, *,
                       on_delta: CompleteDelta | None = None,
                       cancel: asyncio.Event | None = None) -> GenerationResult:
        if (alone := self._seeded(sampling)) is not None:
            return await alone.complete(prompt, sampling, on_delta=on_delta, cancel=cancel)
        return await self._served(lambda: super(LocalProvider, self).complete(
            prompt, sampling, on_delta=on_delta, cancel=cancel))

    async def fill(self, prefix: str, suffix: str, sampling: Sampling | None = None, *,
                   strategy: str, on_delta: CompleteDelta | None = None,
                   cancel: asyncio.Event | None = None) -> GenerationResult:
        if (alone := self._seeded(sampling)) is not None:
            return await alone.fill(prefix, suffix, sampling, strategy=strategy,
                                    on_delta=on_delta, cancel=cancel)
        return await self._served(lambda: super(LocalProvider, self).fill(
            prefix, suffix, sampling, strategy=strategy, on_delta=on_delta, cancel=cancel))

    async def chats(self, messages: list[ChatMessage], sampling: Sampling | None = None, *,
                    on_delta: CompleteDelta | None = None,
                    cancel: asyncio.Event | None = None) -> GenerationResult:
        return await self._served(lambda: super(LocalProvider, self).chats(
            messages, sampling, on_delta=on_delta, cancel=cancel))

    async def chat(self, messages: list[ChatMessage], sampling: Sampling | None = None, *,
                   on_delta: ChatDelta | None = None,
                   cancel: asyncio.Event | None = None) -> GenerationResult:
        if (alone := self._seeded(sampling)) is not None:
            return await alone.chat(messages, sampling, on_delta=on_delta, cancel=cancel)
        return await self._served(lambda: super(LocalProvider, self).chat(
            messages, sampling, on_delta=on_delta, cancel=cancel))

    async def aclose(self) -> None:
        if self._exclusive is not None:
            await self._exclusive.aclose()
        await super().aclose()

    async def _served(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` against a live service; a failure the service caused, explained."""
        spec = service.spec_for(self.profile.model, self._parallel)
        record = await asyncio.to_thread(service.ensure_running, spec)
        if self._record is None or record.instance != self._record.instance:
            await self.aclose()  # a new service: a new client for its port and key
            self._record = record
        files = service.files_of(spec)
        files.touch_used()
        started = time.monotonic()
        try:
            try:
                return await call()
            except ModelError as err:
                if err.kind not in _SERVICE_KINDS:
                    raise
                why = await asyncio.to_thread(
                    service.explain, record, files, round(time.monotonic() - started, 1))
                if why is not None:
                    why.partial = err.partial
                    raise why from err
                if err.kind != "unavailable" or err.partial:
                    raise
            # The connection failed and the service answers its health check: a blip (a
            # request between busy slots), not a death. Once more, as nothing streamed.
            return await call()
        finally:
            files.touch_used()

