"""Filling the middle of a text (``→ fill``): the one door from the core's FillRequest to a
provider, the strategy chosen per model as ``continue`` chooses its own (a profile's
``fill``, else by provider):

- ``infill``: a fill-in-the-middle endpoint, llama.cpp's ``/infill`` (FIM-trained models:
  the model writes between the prefix and the suffix itself). The local model's default;
  a model without FIM tokens (the bundled SmolLM2) is told to fill instead (``instruct``),
  an OpenAI-compatible server without the endpoint is asked with ``suffix``.
- ``suffix``: the completions endpoint's ``suffix`` (OpenAI's instruct models; some
  compatible servers). OpenAI's own completion models' default.
- ``instruct``: a chat model told what comes before and after the gap and asked for the
  gap's text alone; its preamble, a restated edge and the joins are cut as a base model's
  text would join (:mod:`loom.llm.chat_habits`). Anthropic's, OpenAI chat's, the bundled
  model's, any chat profile's.
- ``prefix``: the fallback for a base model with neither: it continues the text before
  the span, not seeing what follows (stopped at a line break when the span has none).

Each of the ``n`` texts streams by its index (a chat model's reply as it comes; the text
stored is cut as above, and an editor shows it when the versions land).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from loom.llm.base import ChatMessage, GenerationResult, ModelError, Provider
from loom.llm.chat_habits import continuation, joined
from loom.llm.config import ModelProfile
from loom.model.sampling import Sampling

FILL_SYSTEM = ("Fill in the blank (___) in the user's text. Reply with the missing words "
               "only: no quotes, no notes, nothing repeated from around the blank.")
GAP = "___"
#: How much of the text around the gap a chat model is shown.
BEFORE_CHARS, AFTER_CHARS = 6000, 2000
# How a server says its model has no fill-in-the-middle tokens, or has no such endpoint.
_NO_INFILL = re.compile(r"infill is not supported|not_supported|not found|404|501",
                        re.IGNORECASE)
_MIN_RESTATED = 12
# A chat model's opening before the words themselves ("Sure! Here are the missing words:",
# "The missing text is:", "Answer:").
_PREAMBLE = re.compile(
    r"""\s*(?:(?:sure|certainly|of\ course|okay|ok|absolutely)[!.,]?\s*)?
        (?:here(?:'s|\ is|\ are)[^\n:]{0,80}:
          | (?:the\ )?(?:missing|blank|gap|filled)[^\n:]{0,40}(?:is|are)?:
          | (?:answer|fill|filled\ in):)[ \t]*\n*""", re.IGNORECASE | re.VERBOSE)

Delta = Callable[[int, str], None]


def fill_messages(before: str, after: str, replaced: str) -> list[ChatMessage]:
    """The conversation that asks a chat model for the gap's text."""
    words = len(replaced.split())
    about = f" About {words} word{'s' if words != 1 else ''}." if words else ""
    return [ChatMessage(role="system", content=FILL_SYSTEM + about),
            ChatMessage(role="user", content=before[-BEFORE_CHARS:] + GAP
                        + after[:AFTER_CHARS])]


def gap_text(before: str, after: str, reply: str, replaced: str) -> str:
    """A chat model's ``reply`` as the span's text: a preamble and a restated start cut
    (as a continuation's), the blank's marker and quotes around the reply dropped, the
    reply cut where it restates what follows the gap, and joined to that as a base
    model's text would be."""
    reply = reply.replace(GAP, "")
    opening = _PREAMBLE.match(reply)
    reply = reply[opening.end():] if opening else reply
    if "\n" not in replaced and "\n" in reply.strip("\n"):
        reply = reply.strip("\n").split("\n", 1)[0]
    body = reply.strip()
    if len(body) >= 2 and body[0] in "\"“'" and body[-1] in "\"”'":
        reply = body[1:-1]
    reply = _unrestated(before, reply)
    text = continuation(before, reply)
    head = after.strip()[:40]
    if len(head) >= _MIN_RESTATED:
        at = text.find(head[: max(_MIN_RESTATED, len(head) // 2)])
        if at >= 0:
            text = text[:at]
    if after[:1].isspace():
        text = text.rstrip()
    elif after[:1].isalnum() and text[-1:].isalnum():
        text += " "
    return text if before else text.lstrip()


def _unrestated(before: str, reply: str) -> str:
    """``reply`` without the end of ``before`` it starts by restating, whole words of it
    (a chat model asked for a gap's words often writes the sentence from its start)."""
    tail = before.rstrip().lower()
    for k in range(min(len(reply), 200), 3, -1):
        head = reply[:k]
        if (k == len(reply) or not reply[k].isalnum()) and head[:1].isalnum() \
                and tail.endswith(head.rstrip().lower()) and \
                (len(tail) == len(head.rstrip()) or not tail[-len(head.rstrip()) - 1].isalnum()):
            return reply[k:]
    return reply


async def fill_text(provider: Provider, profile: ModelProfile, before: str, after: str,
                    replaced: str, sampling: Sampling, on_delta: Delta | None,
                    cancel: asyncio.Event | None) -> GenerationResult:
    """``sampling.n`` texts for the gap between ``before`` and ``after``, by the profile's
    strategy (module docstring); the result's ``params`` name the strategy used."""
    strategy = profile.fill_with
    if strategy == "infill":
        try:
            return _named(await provider.fill(  # type: ignore[attr-defined]
                before, after, sampling, strategy="infill", on_delta=on_delta,
                cancel=cancel), "infill")
        except ModelError as err:
            if err.partial or not _NO_INFILL.search(f"{err.status} {err.message}"):
                raise
        strategy = "instruct" if profile.provider == "local" else "suffix"
    if strategy == "instruct":
        return _named(await _instructed(provider, before, after, replaced, sampling,
                                        on_delta, cancel), "instruct")
    if strategy == "prefix" and "\n" not in replaced and not sampling.stop:
        sampling = sampling.model_copy(update={"stop": ["\n"]})
    return _named(await provider.fill(  # type: ignore[attr-defined]
        before, after, sampling, strategy=strategy, on_delta=on_delta, cancel=cancel),
        strategy)


async def _instructed(provider: Provider, before: str, after: str, replaced: str,
                      sampling: Sampling, on_delta: Delta | None,
                      cancel: asyncio.Event | None) -> GenerationResult:
    # (imported here: the provider modules need a model extra that may be missing)
    from loom.llm.providers.strategies import replies

    raw: dict[int, list[str]] = {}

    def held(i: int, piece: str) -> None:
        raw.setdefault(i, []).append(piece)
        if on_delta is not None:  # the start as it will be stored; the rest as it comes
            shown = "".join(raw[i])
            if len(raw[i]) == 1:
                piece = joined(before, shown.lstrip()) if before else shown.lstrip()
            on_delta(i, piece)

    messages = fill_messages(before, after, replaced)
    at_once = getattr(provider, "chats_at_once", None)
    if sampling.count > 1 and at_once is not None and at_once(sampling):
        # the n replies of one request: the prompt read once (OpenAI's chat, the local
        # model's slots decoding them together), as continue's completions are
        result = await provider.chats(  # type: ignore[attr-defined]
            messages, sampling, on_delta=held if on_delta is not None else None,
            cancel=cancel)
    else:
        result = await replies(provider.chat, messages, sampling,
                               held if on_delta is not None else None, cancel)
    completions = [c.model_copy(update={"text": gap_text(before, after, c.text, replaced),
                                        "logprobs": None}) for c in result.completions]
    return result.model_copy(update={"completions": completions})


def _named(result: GenerationResult, strategy: str) -> GenerationResult:
    return result.model_copy(update={"params": {**result.params, "strategy": strategy}})
