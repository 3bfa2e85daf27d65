"""A chat model continuing a text as a base model would (a profile's ``strategy``).

``prefill`` begins the model's reply with the text itself (the last message is the
assistant's, which Anthropic's Messages API and most compatible servers continue);
``instruct`` gives the text as the user's message under an instruction to continue it.
Either way the ``n`` continuations are ``n`` chat calls at once, and each reply is cut to
start exactly where the text stops (:mod:`loom.llm.chat_habits`): what streams is what is
stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from loom.llm.aio import gather_all
from loom.llm.base import ChatMessage, CompleteDelta, GenerationResult, Usage
from loom.llm.chat_habits import StartCutter
from loom.llm.providers._common import CONTINUE_SYSTEM
from loom.model.sampling import Sampling

#: The user's turn before a prefilled reply (the Messages API opens with the user).
PREFILL_ASK = "Continue the text."

Chat = Callable[..., Awaitable[GenerationResult]]


def messages_for(strategy: str, prompt: str) -> list[ChatMessage]:
    """The conversation that asks a chat model to continue ``prompt``."""
    if strategy == "prefill":
        # the API refuses a prefill ending in whitespace: the cut puts it back
        return [ChatMessage(role="system", content=CONTINUE_SYSTEM),
                ChatMessage(role="user", content=PREFILL_ASK),
                ChatMessage(role="assistant", content=prompt.rstrip())]
    return [ChatMessage(role="system", content=CONTINUE_SYSTEM),
            ChatMessage(role="user", content=prompt)]


async def replies(chat: Chat, messages: list[ChatMessage], sampling: Sampling,
                  on_delta: CompleteDelta | None, cancel: asyncio.Event | None,
                  cut_after: str | None = None) -> GenerationResult:
    """``sampling.n`` replies to ``messages`` from ``chat`` at once, reply i sampled with
    seed + i, as one result; ``cut_after``: each reply cut to continue that text."""
    n = sampling.count
    texts: list[list[str]] = [[] for _ in range(n)]

    def deliver(i: int) -> Callable[[str], None]:
        def out(piece: str) -> None:
            texts[i].append(piece)
            if on_delta is not None:
                on_delta(i, piece)
        return out

    cutters = [StartCutter(cut_after, deliver(i)) if cut_after is not None else None
               for i in range(n)]

    async def one(i: int) -> GenerationResult:
        seed = sampling.seed
        asked = sampling if seed is None else sampling.model_copy(update={"seed": seed + i})
        cutter = cutters[i]
        result = await chat(messages, asked, on_delta=cutter.feed if cutter else deliver(i),
                            cancel=cancel)
        if cutter is not None:
            cutter.flush()
        return result

    results = [await one(0)] if n == 1 else await gather_all([one(i) for i in range(n)])
    completions = [r.completions[0].model_copy(update={
        "index": i, **({"text": "".join(texts[i])} if cut_after is not None else {})})
        for i, r in enumerate(results)]
    usage = Usage()
    for r in results:
        usage = usage + r.usage
    return GenerationResult(
        completions=completions, model=results[0].model, provider=results[0].provider,
        params={**results[0].params, "n": n,
                **({} if sampling.seed is None else {"seed": sampling.seed})},
        usage=usage, latency_ms=max(r.latency_ms for r in results),
        raw=[chunk for r in results for chunk in r.raw])


async def complete_by_chat(chat: Chat, strategy: str, prompt: str, sampling: Sampling,
                           on_delta: CompleteDelta | None,
                           cancel: asyncio.Event | None) -> GenerationResult:
    """``sampling.n`` continuations of ``prompt`` from ``chat`` (a provider's own)."""
    result = await replies(chat, messages_for(strategy, prompt), sampling, on_delta, cancel,
                           cut_after=prompt)
    return result.model_copy(update={"params": {**result.params, "strategy": strategy}})
