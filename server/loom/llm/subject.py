"""The subject model behind ``continue``: the core's ContinueRequest through a provider.

Buffer trees use the completion shape (the path's text, with the tree's system context
in front only when it has one); dialogue trees use the chat shape, n replies in parallel.
The executor runs in a worker thread, so each call gets its own event loop (SDK clients
are tied to the loop they were made on).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from loom.errors import LoomError
from loom.llm.base import ChatMessage, GenerationResult, ModelError, Usage
from loom.llm.config import ModelProfile, resolve_profile
from loom.llm.registry import make_provider

if TYPE_CHECKING:
    from loom.commands.context import ContinueRequest


class ProviderSubject:
    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.name = f"{profile.provider}:{profile.model}"

    def generate(self, request: ContinueRequest,
                 on_delta: Callable[[int, str], None] | None = None) -> GenerationResult:
        try:
            return asyncio.run(self._generate(request, on_delta))
        except ModelError as err:
            raise LoomError("MODEL_ERROR", err.message, err.hint) from err

    async def _generate(self, request: ContinueRequest,
                        on_delta: Callable[[int, str], None] | None) -> GenerationResult:
        profile = self.profile
        provider = make_provider(profile)
        cancel = asyncio.Event()
        watcher = asyncio.create_task(_bridge(request.cancel, cancel))
        sampling = request.sampling  # the profile's defaults fill its gaps: call_params
        try:
            if request.prompt is not None:
                prompt = request.prompt
                if request.system:
                    prompt = f"{request.system}\n\n{prompt}"
                return await provider.complete(prompt, sampling, on_delta=on_delta, cancel=cancel)
            messages = [ChatMessage(role="system", content=request.system)] \
                if request.system else []
            messages += [ChatMessage(role=m["role"], content=m["content"])  # type: ignore[arg-type]
                         for m in request.messages or []]
            if not messages or (messages[-1].role == "assistant" and len(messages) == 1):
                messages.append(ChatMessage(role="user", content="Continue."))

            async def one(i: int) -> GenerationResult:
                delta = (lambda piece: on_delta(i, piece)) if on_delta else None
                return await provider.chat(messages, sampling, on_delta=delta, cancel=cancel)

            results = await asyncio.gather(*(one(i) for i in range(sampling.count)))
            completions = [r.completions[0].model_copy(update={"index": i})
                           for i, r in enumerate(results)]
            usage = Usage(
                prompt_tokens=sum(r.usage.prompt_tokens or 0 for r in results) or None,
                completion_tokens=sum(r.usage.completion_tokens or 0 for r in results) or None)
            return GenerationResult(
                completions=completions, model=results[0].model, provider=results[0].provider,
                params={**results[0].params, "n": sampling.count}, usage=usage,
                latency_ms=max(r.latency_ms for r in results),
                raw=[chunk for r in results for chunk in r.raw])
        finally:
            watcher.cancel()
            close = getattr(provider, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # closing must not hide the outcome
                    await close()


async def _bridge(source: threading.Event | None, target: asyncio.Event) -> None:
    """A front end's threading.Event (set from another thread) to the provider's."""
    if source is None:
        return
    while not source.is_set():
        await asyncio.sleep(0.05)
    target.set()


def configured_subject(name: str | None = None) -> ProviderSubject:
    """The subject model from the configuration (a hosted base model when its key is set,
    else the bundled local model)."""
    return ProviderSubject(resolve_profile("subject", name))
