"""How the model is asked to sample, as one record from the command to the provider.

``→ continue n:3 tokens:40 temperature:0.7`` asks three things of the subject model; they
travel together, under the names the command gives them, from the parsed command
(``ast.Continue`` carries these fields) through the core's request to the provider, which
puts them into its API's own words. A field left None is the model profile's default,
filled in one place: ``llm/providers/_common.call_params``.

A new sampling option is a field here, its declaration among ``→ continue``'s options in
``commands/catalogue.py`` (``sampling=True``: the grammar, completion, help, canonical
text and the limit check read it there), and its name in the API of each provider that
takes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict

#: The fields the model APIs, and so a generation's stored parameters, name otherwise.
API_NAMES: Mapping[str, str] = MappingProxyType({"tokens": "max_tokens"})


class Sampling(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: How many continuations (one call makes all of them where the API can).
    n: int | None = None
    #: The most tokens each may have.
    tokens: int | None = None
    temperature: float | None = None
    #: Sample only among the likeliest tokens whose probabilities add up to this.
    top_p: float | None = None
    #: Leave out tokens less likely than this share of the likeliest one.
    min_p: float | None = None
    #: Strings that end a continuation where they appear.
    stop: list[str] | None = None
    #: The sampler's seed (continuation ``i`` of ``n`` is sampled with ``seed + i``, so
    #: each can be made again on its own).
    seed: int | None = None
    #: Token id (as text) → a bias added to its logit, -100 (never) to 100 (always).
    logit_bias: dict[str, float] | None = None
    #: How many alternatives per token to report with their probabilities.
    logprobs: int | None = None

    @property
    def count(self) -> int:
        """How many continuations: ``n``, one when unset."""
        return 1 if self.n is None else self.n

    def sampling(self) -> Sampling:
        """These fields alone (a command or an editor's arguments carry them among
        others)."""
        return Sampling(**self.chosen())

    @classmethod
    def asked_in(cls, params: Mapping[str, Any]) -> Sampling:
        """The sampling a generation's stored parameters record (``call_params``'s)."""
        return cls(**{f: params.get(API_NAMES.get(f, f)) for f in cls.model_fields})

    def chosen(self) -> dict[str, Any]:
        """The fields that were given a value, by name."""
        return {k: v for k in Sampling.model_fields if (v := getattr(self, k)) is not None}
