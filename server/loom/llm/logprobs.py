"""Normalise token log-probabilities into ``{"token", "logprob", "top_logprobs"}`` dicts.

Handles the legacy completions shape (``tokens`` / ``token_logprobs`` / ``top_logprobs``
as parallel lists, the latter a list of ``{token: logprob}`` maps), which both OpenAI's
completions endpoint and llama-cpp-python return, and the chat shape (``content``: a list
of ``{token, logprob, top_logprobs: [{token, logprob}]}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def normalise(data: Any) -> list[dict[str, Any]]:
    """Per-token entries from either shape; ``[]`` when there is nothing to read."""
    if data is None:
        return []
    if not isinstance(data, Mapping):
        data = data.model_dump() if hasattr(data, "model_dump") else dict(data)
    if data.get("content") is not None:
        return [_chat_entry(item) for item in data["content"]]
    tokens = data.get("tokens") or []
    values = data.get("token_logprobs") or []
    tops = data.get("top_logprobs") or []
    out: list[dict[str, Any]] = []
    for i, token in enumerate(tokens):
        entry: dict[str, Any] = {
            "token": token,
            "logprob": values[i] if i < len(values) else None,
        }
        top = tops[i] if i < len(tops) else None
        if top:
            entry["top_logprobs"] = [{"token": t, "logprob": lp} for t, lp in top.items()]
        out.append(entry)
    return out


def _chat_entry(item: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": item["token"], "logprob": item.get("logprob")}
    top = item.get("top_logprobs")
    if top:
        entry["top_logprobs"] = [{"token": t["token"], "logprob": t.get("logprob")} for t in top]
    return entry
