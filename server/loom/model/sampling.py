"""How the model is asked to sample, as one record from the command to the provider.

``→ continue n:3 tokens:40 temperature:0.7`` asks three things of the subject model; they
travel together, under the names the command gives them, from the parsed command
(``syntax.Continue`` carries these fields) through the core's request to the provider, which
puts them into its API's own words. A field left None is the model profile's default,
filled in one place: ``llm/providers/_common.call_params``.

A new sampling option is a field here, its declaration among ``→ continue``'s options in
``commands/catalogue.py`` (``sampling=True``: the grammar, completion, help, canonical
text and the limit check read it there), and its name in the API of each provider that
takes it (a provider that lacks it refuses it by name before anything is asked).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

#: The fields the model APIs, and so a generation's stored parameters, name otherwise.
API_NAMES: Mapping[str, str] = MappingProxyType({"tokens": "max_tokens",
                                                  "dry": "dry_multiplier"})

#: Request keys ``extra:`` may not set: what Loom itself sends and relies on to read the
#: answer and keep its guards (how many, streaming, token data, which model, where and as
#: whom, the prompt itself, the prefill's mechanics, the local model's prompt cache for a
#: seed), and any key an option sets (said with the option to use instead).
EXTRA_RESERVED: frozenset[str] = frozenset({
    "model", "prompt", "messages", "system", "suffix", "input_prefix", "input_suffix",
    "input_extra", "n", "n_cmpl", "best_of", "stream", "stream_options", "echo",
    "logprobs", "top_logprobs", "n_probs", "post_sampling_probs", "return_tokens",
    "response_fields", "return_progress", "timings_per_token", "api_key", "key",
    "authorization", "base_url", "url", "headers", "extra_body", "extra_headers",
    "extra_query", "cache_prompt", "id_slot", "slot_id", "continue_final_message",
    "add_generation_prompt", "tools", "tool_choice", "functions", "function_call",
    "parse_tool_calls", "n_predict", "max_completion_tokens", "stop_sequences", "temp",
})
#: At most this many keys, and this much JSON, in one ``extra:``.
EXTRA_MAX_KEYS = 32
EXTRA_MAX_BYTES = 4096
_EXTRA_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


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
    #: Sample only among this many likeliest tokens.
    top_k: int | None = None
    #: Locally typical sampling: keep the tokens closest to the expected surprise, up to
    #: this probability mass.
    typical_p: float | None = None
    #: Divide the logits of tokens already in the recent text by this (1: off).
    repeat_penalty: float | None = None
    #: Lower a token's logit by this times how often it has appeared, and by this once it
    #: has appeared at all (OpenAI's two penalties, -2 to 2).
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    #: DRY ("don't repeat yourself"): the multiplier of the penalty on a token that would
    #: extend a repeated sequence (0: off), its base, and the repeat length let through.
    dry: float | None = None
    dry_base: float | None = None
    dry_allowed_length: int | None = None
    #: XTC ("exclude top choices"): with this probability, drop every token above the
    #: threshold but the least likely of them.
    xtc_probability: float | None = None
    xtc_threshold: float | None = None
    #: Mirostat (1 or 2; 0: off) keeps the text's surprise near tau, learning at eta.
    mirostat: int | None = None
    mirostat_tau: float | None = None
    mirostat_eta: float | None = None
    #: Strings whose tokens are never sampled (each as written and after a space).
    banned: list[str] | None = None
    #: A GBNF grammar every continuation must match (llama.cpp's servers).
    grammar: str | None = None
    #: Strings that end a continuation where they appear.
    stop: list[str] | None = None
    #: The sampler's seed (continuation ``i`` of ``n`` is sampled with ``seed + i``, so
    #: each can be made again on its own).
    seed: int | None = None
    #: Token id (as text) → a bias added to its logit, -100 (never) to 100 (always).
    logit_bias: dict[str, float] | None = None
    #: Any other request key the backend takes, sent as it is (``EXTRA_RESERVED`` aside).
    extra: dict[str, Any] | None = None
    #: How many alternatives per token to report with their probabilities.
    logprobs: int | None = None

    @field_validator("extra")
    @classmethod
    def _extra_allowed(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            problem = extra_problem(value)
            if problem is not None:
                raise ValueError(problem[0])
        return value

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

    def over(self, base: Sampling) -> Sampling:
        """``base`` (a preset) with these fields, where given, in its place."""
        return Sampling(**{**base.chosen(), **self.chosen()})


def _option_of(key: str) -> str | None:
    """The option that sets request key ``key``, if one does."""
    named = {api: ours for ours, api in API_NAMES.items()}
    ours = named.get(key, key)
    if ours in Sampling.model_fields and ours not in ("extra", "logprobs", "n"):
        return ours
    return {"temp": "temperature", "n_predict": "tokens", "max_completion_tokens": "tokens",
            "stop_sequences": "stop"}.get(key)


def extra_problem(extra: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why ``extra:`` may not be sent as it is (message, hint), or None: a key Loom sets
    itself or an option sets, a key that is no plain name, or too much of it."""
    if len(extra) > EXTRA_MAX_KEYS:
        return (f"extra: has {len(extra)} keys (at most {EXTRA_MAX_KEYS})",
                "pass only the keys the backend needs")
    for key in extra:
        if not isinstance(key, str) or not _EXTRA_KEY.fullmatch(key):
            return (f"extra: {key!r} is not a request key", 'use extra:"key:value,…"')
        option = _option_of(key)
        if option is not None:
            return (f"extra: {key} is set by {option}:", f"use {option}: instead")
        if key.lower() in EXTRA_RESERVED:
            return (f"extra: {key} is Loom's own to set",
                    "leave it out: extra: passes the backend's other keys (Loom sets the "
                    "model, the prompt, n, streaming, token data and the key itself)")
    try:
        size = len(json.dumps(dict(extra), ensure_ascii=False))
    except (TypeError, ValueError):
        return ("extra: values must be JSON (numbers, text, true/false, lists, tables)",
                'use extra:"key:value,…"')
    if size > EXTRA_MAX_BYTES:
        return (f"extra: is {size:,} bytes of JSON (at most {EXTRA_MAX_BYTES:,})",
                "pass only the keys the backend needs")
    return None


def extra_text(extra: Mapping[str, Any]) -> str:
    """``extra:``'s keys as the option's value is written: ``key:JSON,…`` (the grammar
    reads it back the same)."""
    return ",".join(f"{k}:{json.dumps(v, ensure_ascii=False, separators=(',', ':'))}"
                    for k, v in extra.items())
