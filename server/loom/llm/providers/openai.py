"""OpenAI and OpenAI-compatible servers (llama.cpp server, vLLM, Ollama, OpenRouter…).

``complete`` uses the legacy completions endpoint (base models) with native ``n`` and
demultiplexes streamed choices by ``choice.index``; when the profile says
``supports_n = false`` it sends n parallel requests instead. ``chat`` uses chat
completions. Both stream. For ``openai-compatible`` profiles the key is optional.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import openai

from loom.llm.aio import gather_all
from loom.llm.assemble import Collector, Sink
from loom.llm.base import (
    ChatDelta,
    ChatMessage,
    CompleteDelta,
    GenerationResult,
    ModelError,
    Usage,
)
from loom.llm.logprobs import normalise
from loom.llm.media import openai_message
from loom.llm.providers._common import (
    SDKProvider,
    call_params,
    extra_of,
    log_request,
    malformed,
    missing_key,
    payload_of,
    run,
    sdk_errors,
)
from loom.llm.providers.strategies import complete_by_chat
from loom.llm.retry import Attempt, call_with_retry
from loom.model.sampling import Sampling

#: The request parameters each endpoint takes, ours → its (``call_params``'s names);
#: ``extra`` is any other key, sent in the body as it is.
_CHAT = MappingProxyType({
    "max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p",
    "stop": "stop", "seed": "seed", "logit_bias": "logit_bias",
    "frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty",
    "extra": "extra",
})
_COMPLETIONS = MappingProxyType({**_CHAT, "logprobs": "logprobs"})
# Sampler options OpenAI's own API lacks and compatible servers take, under llama.cpp's
# names (its server is the local model's, and the one most looms run); the SDK sends them
# in the request body as they are. ``banned`` goes as llama.cpp's logit_bias by text.
_EXTRA = MappingProxyType({name: name for name in (
    "min_p", "top_k", "typical_p", "repeat_penalty", "dry_multiplier", "dry_base",
    "dry_allowed_length", "xtc_probability", "xtc_threshold", "mirostat", "mirostat_tau",
    "mirostat_eta", "grammar")})
_LLAMA = MappingProxyType({**_EXTRA, "banned": "logit_bias"})
# OpenAI's newer models only take max_completion_tokens; compatible servers mostly know
# max_tokens.
_CHAT_OPENAI = MappingProxyType({**_CHAT, "max_tokens": "max_completion_tokens"})

#: llama.cpp's native names where its OpenAI routes' differ (``/infill``).
_NATIVE = MappingProxyType({"max_tokens": "n_predict", "logprobs": "n_probs"})

_NO_KEY = "no-key"  # sent to compatible servers that need none (the SDK insists on one)
_READ_ERRORS = (AttributeError, KeyError, TypeError, IndexError, ValueError)


class OpenAIProvider(SDKProvider):
    def _key(self) -> str:
        """The resolved key; compatible servers that need none get a placeholder."""
        secret = self.profile.api_key()
        if secret is None:
            if self.profile.provider == "openai":
                raise missing_key(self.profile)
            return _NO_KEY
        return secret.get_secret_value()

    def _make_client(self, key: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
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
        if self.profile.continue_with != "completion":  # a chat model as a base model
            return await complete_by_chat(self.chat, self.profile.continue_with, prompt,
                                          sampling or Sampling(), on_delta, cancel)
        return await self._completions(prompt, sampling, on_delta, cancel)

    async def fill(self, prefix: str, suffix: str, sampling: Sampling | None = None, *,
                   strategy: str, on_delta: CompleteDelta | None = None,
                   cancel: asyncio.Event | None = None) -> GenerationResult:
        """``sampling.n`` texts between ``prefix`` and ``suffix`` (``→ fill``): by the
        server's fill-in-the-middle endpoint (``infill``), the completions endpoint's
        ``suffix``, or a continuation of ``prefix`` alone (``prefix``)."""
        if strategy == "infill":
            return await self._infill(prefix, suffix, sampling, on_delta, cancel)
        return await self._completions(prefix, sampling, on_delta, cancel,
                                       suffix=suffix if strategy == "suffix" else None)

    async def _completions(self, prompt: str, sampling: Sampling | None,
                           on_delta: CompleteDelta | None, cancel: asyncio.Event | None,
                           suffix: str | None = None, infill: bool = False
                           ) -> GenerationResult:
        params = call_params(self.profile, sampling)
        n = params["n"]
        collector = Collector(n, on_delta, cancel)
        # a seed makes each continuation a request of its own, so each can be made again;
        # the infill endpoint makes one a request
        size = self.batch_size(n) if params.get("seed") is None and not infill else 1
        groups = [range(i, min(i + size, n)) for i in range(0, n, size)]
        once = self._infill_once if infill else self._complete_once

        async def body() -> None:
            client = self.client()
            calls = [
                call_with_retry(
                    lambda a, g=group: once(client, prompt, params, collector, a, g, suffix),
                    self.policy,
                )
                for group in groups
            ]
            if self.sequential(params):
                for call in calls:
                    await call
            else:
                await (calls[0] if len(calls) == 1 else gather_all(calls))

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    def batch_size(self, n: int) -> int:
        """Continuations per request: all n where the server takes ``n``, else one each
        (the requests then run in parallel)."""
        return n if self.profile.supports_n else 1

    def sequential(self, params: dict[str, Any]) -> bool:
        """Whether the requests of one call run one after another (a seeded call on a
        server whose parallel decoding changes the numbers: the local model)."""
        return False

    def takes(self, chat: bool) -> Mapping[str, str]:
        if self.profile.provider == "openai":
            return _CHAT_OPENAI if chat else _COMPLETIONS
        return {**(_CHAT if chat else _COMPLETIONS), **_LLAMA}

    def _payload(self, params: dict[str, Any], *, chat: bool) -> dict[str, Any]:
        """The call's parameters in the request's words; those OpenAI's API lacks, and
        ``extra:``'s keys, go in the body as they are (``extra_body``)."""
        names = {k: v for k, v in self.takes(chat).items() if k != "banned"}
        payload = payload_of(params, names)
        if params.get("banned") and "banned" in self.takes(chat):
            payload["logit_bias"] = banned_bias(payload.get("logit_bias"), params["banned"])
        body = {k: payload.pop(k) for k in _EXTRA.values() if k in payload}
        extra = {**extra_of(params, {**payload, **body}), **body}
        return {**payload, "extra_body": extra} if extra else payload

    async def _infill(self, prefix: str, suffix: str, sampling: Sampling | None,
                      on_delta: CompleteDelta | None,
                      cancel: asyncio.Event | None) -> GenerationResult:
        return await self._completions(prefix, sampling, on_delta, cancel, suffix=suffix,
                                       infill=True)

    async def _infill_once(self, client: openai.AsyncOpenAI, prefix: str,
                           params: dict[str, Any], collector: Collector, attempt: Attempt,
                           indices: Iterable[int], suffix: str | None) -> None:
        """One text from llama.cpp's ``/infill`` (beside the OpenAI routes, at the
        server's root), streamed in its native shape."""
        sink = collector.begin(attempt, indices)
        (index,) = sink.indices
        flat = self._payload(params, chat=False)
        flat = {**flat.pop("extra_body", {}), **flat}
        body: dict[str, Any] = {
            **{_NATIVE.get(k, k): v for k, v in flat.items()},
            "input_prefix": prefix, "input_suffix": suffix or "", "prompt": "",
            "stream": True, "cache_prompt": params.get("seed") is None,
        }
        if params.get("seed") is not None:
            body["seed"] = params["seed"] + index
        url = (self.profile.base_url if self.profile.provider != "local"
               else str(client.base_url)) or ""
        url = re.sub(r"/v1/?$", "", url.rstrip("/")) + "/infill"
        log_request(self.profile, "infill", body)
        with sdk_errors(self.profile):
            try:
                stream = await client.post(url, body=body, cast_to=object, stream=True,
                                           stream_cls=openai.AsyncStream[object])
            except openai.APIStatusError as exc:
                if exc.status_code not in (404, 405, 501):
                    raise
                raise ModelError(  # no endpoint, or a model without FIM tokens: said once
                    "bad_request", f"{self.profile.provider} has no infill for "
                    f"{self.profile.model} ({exc.status_code}): {_message(exc)}",
                    "set fill = \"instruct\" (or \"suffix\") in the profile",
                    status=exc.status_code) from exc
            async with stream:
                async for chunk in stream:
                    self._on_native_chunk(chunk, sink, index)
        if sink.received == 0:
            raise malformed(self.profile, "sent no infill data")

    def _on_native_chunk(self, chunk: Any, sink: Sink, index: int) -> None:
        sink.raw(chunk)
        try:
            if not isinstance(chunk, dict):
                raise TypeError("an infill chunk is not an object")
            text = chunk.get("content") or ""
            if type(text) is not str:
                raise TypeError("content is not a string")
            probs = [{"token": p["token"], "logprob": p.get("logprob"),
                      "top_logprobs": [{"token": t["token"], "logprob": t.get("logprob")}
                                       for t in p.get("top_logprobs") or []]}
                     for p in chunk.get("completion_probabilities") or []]
            stop = bool(chunk.get("stop"))
            timing = chunk.get("timings") or {}
            usage = Usage(prompt_tokens=timing.get("prompt_n"),
                          completion_tokens=chunk.get("tokens_predicted")) if stop else None
        except _READ_ERRORS as exc:
            raise malformed(self.profile, f"sent a chunk Loom cannot read ({exc!r})") from exc
        if probs:
            sink.logprobs(index, probs)
        if text:
            sink.text(index, text)
        if stop:
            if usage is not None:
                sink.usage(usage, index)
            sink.finish(index, str(chunk.get("stop_type") or "stop"))

    async def _complete_once(
        self,
        client: openai.AsyncOpenAI,
        prompt: str,
        params: dict[str, Any],
        collector: Collector,
        attempt: Attempt,
        indices: Iterable[int],
        suffix: str | None = None,
    ) -> None:
        sink = collector.begin(attempt, indices)
        offset = sink.indices[0]
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "prompt": prompt,
            **({"suffix": suffix} if suffix is not None else {}),
            "n": len(sink.indices),
            **self._payload(params, chat=False),
            "stream": True,
        }
        if params.get("seed") is not None:  # continuation i of n is sampled with seed + i
            payload["seed"] = params["seed"] + offset
        if self.profile.provider in ("openai", "local"):
            payload["stream_options"] = {"include_usage": True}
        log_request(self.profile, "completions", payload)
        with sdk_errors(self.profile):
            stream = await client.completions.create(**payload)
            async with stream:
                async for chunk in stream:
                    self._on_completion_chunk(chunk, sink, offset)
        if sink.received == 0:
            raise malformed(self.profile, "sent no completion data")

    def _on_completion_chunk(self, chunk: Any, sink: Sink, offset: int) -> None:
        # Parse first (any surprise is "malformed"), then deliver: a caller's on_delta
        # error must not be mistaken for a bad reply. Kept lean: it runs once per token.
        # The SDK builds chunks without validation, so absent fields read as None.
        sink.raw(chunk)
        try:
            choices = chunk.choices
            if type(choices) is not list:
                raise TypeError("chunk has no choices list")
            pieces = []
            for choice in choices:
                index = offset + choice.index
                if index not in sink.indices:
                    raise ValueError(f"choice index {choice.index} out of range")
                text = choice.text or ""
                if type(text) is not str:
                    raise TypeError("choice text is not a string")
                lp = choice.logprobs
                pieces.append((index, text, choice.finish_reason, normalise(lp) if lp else None))
            usage = _usage(chunk.usage)
        except _READ_ERRORS as exc:
            raise malformed(self.profile, f"sent a chunk Loom cannot read ({exc!r})") from exc
        if usage is not None:
            # llama-server reports each choice's usage with that choice's last chunk;
            # OpenAI, the request's in a chunk of its own.
            one = len(pieces) == 1 and pieces[0][2] is not None
            sink.usage(usage, pieces[0][0] if one else None)
        for index, text, finish, lp in pieces:
            if lp:
                sink.logprobs(index, lp)
            if text:
                sink.text(index, text)
            if finish is not None:
                sink.finish(index, finish)

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
        collector = Collector(1, None if on_delta is None else _chat_delta(on_delta), cancel)

        async def body() -> None:
            client = self.client()
            await call_with_retry(
                lambda a: self._chat_once(client, messages, params, collector, a), self.policy
            )

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    def chats_at_once(self, sampling: Sampling | None) -> bool:
        """Whether ``chats`` asks for ``sampling.n`` replies in one request (the API's
        ``n``: the prompt read once); not with a seed (each reply its own, as
        ``complete``'s) or where the profile says the server takes no ``n``."""
        return self.profile.supports_n and (sampling is None or sampling.seed is None)

    async def chats(self, messages: list[ChatMessage], sampling: Sampling | None = None, *,
                    on_delta: CompleteDelta | None = None,
                    cancel: asyncio.Event | None = None) -> GenerationResult:
        """``sampling.n`` replies to ``messages`` from one request, streamed by index
        (``→ fill`` asks a chat model so; see :meth:`chats_at_once`)."""
        params = call_params(self.profile, sampling)
        params.pop("logprobs")
        n = params["n"]
        collector = Collector(n, on_delta, cancel)

        async def body() -> None:
            client = self.client()
            await call_with_retry(lambda a: self._chat_once(
                client, messages, params, collector, a, range(n)), self.policy)

        await run(body(), cancel)
        return collector.build(model=self.profile.model, provider=self.name, params=params)

    async def _chat_once(
        self,
        client: openai.AsyncOpenAI,
        messages: list[ChatMessage],
        params: dict[str, Any],
        collector: Collector,
        attempt: Attempt,
        indices: Iterable[int] = (0,),
    ) -> None:
        sink = collector.begin(attempt, indices)
        payload: dict[str, Any] = {
            "model": self.profile.model,
            "messages": [openai_message(m) for m in messages],
            **({"n": len(sink.indices)} if len(sink.indices) > 1 else {}),
            **self._payload(params, chat=True),
            "stream": True,
        }
        if messages and messages[-1].role == "assistant":  # a prefill: continue it
            payload["extra_body"] = {**payload.get("extra_body", {}),
                                     "continue_final_message": True,
                                     "add_generation_prompt": False}
        if self.profile.provider in ("openai", "local"):
            payload["stream_options"] = {"include_usage": True}
        log_request(self.profile, "chat.completions", payload)
        with sdk_errors(self.profile):
            stream = await client.chat.completions.create(**payload)
            async with stream:
                async for chunk in stream:
                    self._on_chat_chunk(chunk, sink)
        if sink.received == 0:
            raise malformed(self.profile, "sent no chat data")

    def _on_chat_chunk(self, chunk: Any, sink: Sink) -> None:
        sink.raw(chunk)
        try:
            choices = chunk.choices
            if type(choices) is not list:
                raise TypeError("chunk has no choices list")
            pieces = []
            for choice in choices:
                if choice.index not in sink.indices:
                    continue
                delta = choice.delta
                text = (delta.content if delta is not None else None) or ""
                if type(text) is not str:
                    raise TypeError("delta content is not a string")
                pieces.append((choice.index, text, choice.finish_reason))
            usage = _usage(chunk.usage)
        except _READ_ERRORS as exc:
            raise malformed(self.profile, f"sent a chunk Loom cannot read ({exc!r})") from exc
        if usage is not None:
            sink.usage(usage)
        for index, text, finish in pieces:
            if text:
                sink.text(index, text)
            if finish is not None:
                sink.finish(index, finish)


def banned_bias(bias: Mapping[str, float] | None,
                banned: list[str]) -> list[list[Any]]:
    """llama.cpp's logit_bias as pairs: the token biases (``logit_bias:``), then each
    banned string, as written and after a space, whose tokens are never sampled."""
    pairs: list[list[Any]] = [[int(k), v] for k, v in (bias or {}).items()]
    for text in banned:
        for variant in dict.fromkeys((text, text if text.startswith(" ") else f" {text}")):
            pairs.append([variant, False])
    return pairs


def _message(exc: Any) -> str:
    """What a server said in an error reply (its ``error.message``, else the SDK's)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"].strip()
    return str(getattr(exc, "message", exc))


def _usage(data: Any) -> Usage | None:
    if data is None:
        return None
    return Usage(prompt_tokens=data.prompt_tokens, completion_tokens=data.completion_tokens)


def _chat_delta(on_delta: ChatDelta) -> CompleteDelta:
    return lambda _index, piece: on_delta(piece)
