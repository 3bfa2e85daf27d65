"""Scoring a writer's words: the log-probability a model gives each token of text it did
not write (``→ score``). The one door is :func:`score_text`; the routes behind it:

- the bundled local model (``local``): teacher forcing through llama-server
  (:mod:`.forced`), exact to the digit: the probabilities it gives text the model wrote
  are those it reported while writing it;
- OpenAI-compatible completion servers (``openai``, ``openai-compatible``): the prompt's
  own log-probabilities (:mod:`.echo`: legacy completions' ``echo`` with ``logprobs``,
  else vLLM's ``prompt_logprobs``);
- the rest cannot, and say why (:func:`refusal`): Anthropic's API gives no token
  probabilities at all; a chat API gives them only for the tokens it writes.

What is sent is redacted like every model request (``loom.redact``); the tokens of a
piece redaction changed are carried back to the piece's own text, and those that spelled
what was redacted are left unscored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from loom.llm.base import ModelError
from loom.llm.config import ModelProfile
from loom.llm.scoring.pieces import Piece, Progress

__all__ = ["Piece", "Scored", "refusal", "score_text", "scorer_name"]
from loom.model import tokens as T
from loom.redact import redact


@dataclass(frozen=True)
class Scored:
    """The tokens of each wanted piece (offsets in its own text; the first token of the
    whole text, which nothing predicts, has no probability), and who scored them."""

    tokens: list[list[T.Token]]
    scorer: str  # what the store and the editor name: "local (SmolLM2-135M-Instruct)"
    k: int
    latency_ms: float


def scorer_name(profile: ModelProfile) -> str:
    """How a score names its model: the profile and the model's short name."""
    return f"{profile.name} ({profile.model.rsplit('/', 1)[-1]})"


def refusal(profile: ModelProfile) -> ModelError | None:
    """Why ``profile``'s model cannot score text, or None when it can."""
    who = f"{profile.name}: {profile.provider} {profile.model}"
    hint = ("score with the local model (→ score model:local) or a completion server that "
            "returns the prompt's log-probabilities (vLLM, OpenAI's legacy completions)")
    if profile.provider == "anthropic":
        return ModelError("bad_request", f"{who} cannot score text: Anthropic's API gives "
                          "no token probabilities", hint)
    if profile.provider != "local" and profile.continue_with != "completion":
        return ModelError("bad_request", f"{who} cannot score text: a chat API gives the "
                          "log-probabilities of the tokens it writes, never of given text",
                          hint)
    return None


async def score_text(profile: ModelProfile, prefix: str, pieces: Sequence[Piece], *,
                     cancel: asyncio.Event | None = None,
                     on_progress: Progress | None = None) -> Scored:
    """The tokens of each wanted piece of ``pieces``, read after ``prefix`` (the text
    before them, the system context in front), with their probabilities and the top-k
    alternatives the profile asks for (``logprobs``, default 5)."""
    why = refusal(profile)
    if why is not None:
        raise why
    k = profile.logprobs if profile.logprobs is not None else 0
    sent = [Piece(redact(p.text), p.wanted) for p in pieces]
    started = time.monotonic()
    if profile.provider == "local":
        from loom.llm.scoring.forced import score_local

        found = await score_local(profile, redact(prefix), sent, k, cancel, on_progress)
    else:
        from loom.llm.scoring.echo import score_echo

        found = await score_echo(profile, redact(prefix), sent, k, cancel)
    wanted = [(p, s) for p, s in zip(pieces, sent, strict=True) if p.wanted]
    tokens = [got if s.text == p.text else T.through_edit(got, s.text, p.text)
              for (p, s), got in zip(wanted, found, strict=True)]
    return Scored(tokens, scorer_name(profile), k,
                  round((time.monotonic() - started) * 1000, 1))
