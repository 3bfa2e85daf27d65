"""Anthropic Messages API through the official SDK, streamed with ``create(stream=True)``.

``chat`` maps system messages to the ``system`` parameter. Anthropic has no base-model
completion endpoint, and assistant prefill is not accepted by every model, so
``complete`` is an honest approximation: the prompt is sent as the user message under
the system instruction "Continue the text exactly where it stops; output only the
continuation." ``n`` is served by parallel requests; logprobs are not available.
Temperature is not sent: the Messages API version that SDK 2.x speaks (2026-10-21)
rejects ``temperature``/``top_p``/``top_k`` on every model, so the result's ``params``
record ``temperature: None``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import anthropic

from loom.llm.assemble import Collector, Sink
from loom.llm.base import (
    ChatDelta,
    ChatMessage,
    CompleteDelta,
    GenerationResult,
    ModelError,
    Usage,
)
from loom.llm.errors import make_error
from loom.llm.media import anthropic_message
from loom.llm.providers._common import (
    SDKProvider,
    call_params,
    error_context,
    extra_of,
    log_request,
    malformed,
    payload_of,
    run,
    sdk_errors,
)
from loom.llm.providers.strategies import complete_by_chat
from loom.llm.retry import Attempt, call_with_retry
from loom.model.sampling import Sampling

#: The request parameters the Messages API takes, ours → its (``call_params``'s names);
#: temperature is not among them (see the module docstring).
_MESSAGES = MappingProxyType({"max_tokens": "max_tokens", "stop": "stop_sequences",
                              "extra": "extra"})
# How the Messages API refuses a prefilled reply on a model that takes none.
_REFUSED_PREFILL = re.compile(r"prefill|final assistant|assistant message", re.IGNORECASE)
_READ_ERRORS = (AttributeError, KeyError, TypeError, IndexError, ValueError)


class AnthropicProvider(SDKProvider):
    def _make_client(self, key: str) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=key,
            base_url=self.profile.base_url,
            timeout=self.profile.timeout_s,
            max_retries=0,  # tenacity in loom.llm.retry is the only retry policy
        )

    async def complete(
        self,
        prompt: str,
        sampling: Sampling | None = None,
        *,
        on_delta: CompleteDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        strategy = self.profile.continue_with
        try:
            return await complete_by_chat(self.chat, strategy, prompt, sampling or Sampling(),
                                          on_delta, cancel)
        except ModelError as err:
            if strategy != "prefill" or err.kind != "bad_request" or err.partial \
                    or not _REFUSED_PREFILL.search(err.message):
                raise
        # a model that takes no prefill: told to continue instead
        return await complete_by_chat(self.chat, "instruct", prompt, sampling or Sampling(),
                                      on_delta, cancel)

    def takes(self, chat: bool) -> Mapping[str, str]:
        return _MESSAGES

    async def chat(
        self,
        messages: list[ChatMessage],
        sampling: Sampling | None = None,
        *,
        on_delta: ChatDelta | None = None,
        cancel: asyncio.Event | None = None,
    ) -> GenerationResult:
        params = call_params(self.profile, (sampling or Sampling()).model_copy(
            update={"n": None}))
        params.pop("logprobs")
        params["temperature"] = None  # rejected by the Messages API (see module docstring)
        system = "\n\n".join(m.content for m in messages if m.role == "system") or None
        turns = [m for m in messages if m.role != "system"]
        if not turns:
            raise make_error(
                "bad_request",
                "a chat needs at least one user message",
                **error_context(self.profile),
            )
        delta = None if on_delta is None else (lambda _i, piece: on_delta(piece))
        collector = Collector(1, delta, cancel)

        async def body() -> None:
            client = self.client()
            await call_with_retry(
                lambda a: self._once(client, system, turns, params, collector, a, 0,
                                     cache=True),
                self.policy,
            )

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    async def _once(
        self,
        client: anthropic.AsyncAnthropic,
        system: str | None,
        messages: list[ChatMessage],
        params: dict[str, Any],
        collector: Collector,
        attempt: Attempt,
        index: int,
        cache: bool = False,
    ) -> None:
        sink = collector.begin(attempt, [index])
        turns = [anthropic_message(m) for m in messages]
        if cache and turns:
            # prompt caching: a breakpoint after the system prompt and one at the end of
            # the conversation so far, so the next call of a collaborator's turn (the same
            # messages and more) reads them from the cache
            last = turns[-1]
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "messages": turns,
            **payload_of(params, _MESSAGES),
            "stream": True,
        }
        if system:
            payload["system"] = [{"type": "text", "text": system,
                                  "cache_control": {"type": "ephemeral"}}] if cache else system
        extra = extra_of(params, payload)
        if extra:
            payload["extra_body"] = extra
        log_request(self.profile, "messages", payload)
        state = _StreamState()
        with sdk_errors(self.profile):
            stream = await client.messages.create(**payload)
            async with stream:
                async for event in stream:
                    self._on_event(event, sink, index, state)
        if sink.received == 0 or not state.started:
            raise malformed(self.profile, "sent no message stream")
        if not state.stopped:
            raise make_error(
                "server",
                f"{self.profile.provider} stream ended before message_stop",
                **error_context(self.profile),
            )
        sink.usage(
            Usage(prompt_tokens=state.input_tokens, completion_tokens=state.output_tokens), index
        )

    def _on_event(self, event: Any, sink: Sink, index: int, state: _StreamState) -> None:
        # The SDK builds events without validation, so absent fields read as None.
        sink.raw(event)
        text = ""
        try:
            kind = event.type
            if kind == "message_start":
                state.started = True
                usage = event.message.usage
                # what the prompt cost in all: read from the cache, written to it, and not
                state.input_tokens = (sum(getattr(usage, k, None) or 0 for k in (
                    "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
                    if usage is not None and usage.input_tokens is not None else None)
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text = delta.text
                    if type(text) is not str:
                        raise TypeError("text_delta text is not a string")
            elif kind == "message_delta":
                state.stop_reason = event.delta.stop_reason
                usage = event.usage
                if usage is not None and usage.output_tokens is not None:
                    state.output_tokens = usage.output_tokens
            elif kind == "message_stop":
                state.stopped = True
            elif kind is None:
                raise ValueError("event without a type")
        except _READ_ERRORS as exc:
            raise malformed(self.profile, f"sent an event Loom cannot read ({exc!r})") from exc
        if text:
            sink.text(index, text)
        if state.stop_reason is not None:
            sink.finish(index, state.stop_reason)


class _StreamState:
    __slots__ = ("input_tokens", "output_tokens", "started", "stop_reason", "stopped")

    def __init__(self) -> None:
        self.started = False
        self.stopped = False
        self.stop_reason: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
