"""socketteer/loom's per-token records ↔ Loom's token entries.

socketteer keeps a generation's tokens in the file's ``model_responses[id]``
(``gpt.py``'s response dictionary, commit 91ca920551120ad4508540e8da057c0b94067afc):
``completions[index].tokens`` = ``[{"generatedToken": {"token", "logprob"},
"position": {"start", "end"}, "counterfactuals": {token: logprob} | None}]``, positions
in the node's text. Loom's entries (``model.tokens.entries``) are ``{"token", "logprob",
"offset", "top_logprobs": [{"token", "logprob"}]}``.
"""

from __future__ import annotations

from typing import Any


def to_socketteer(entries: list[Any]) -> tuple[list[dict[str, Any]], int]:
    """socketteer's token records of Loom's entries, and how many were left out: a token
    without a known log-probability or offset (socketteer's dialog takes ``exp()`` of
    every token's logprob)."""
    out: list[dict[str, Any]] = []
    unknown = 0
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("token"), str):
            continue
        start, lp = e.get("offset"), e.get("logprob")
        if not isinstance(start, int) or isinstance(start, bool) or \
                not isinstance(lp, int | float) or isinstance(lp, bool):
            unknown += 1
            continue
        alts = {a["token"]: a["logprob"] for a in e.get("top_logprobs") or ()
                if isinstance(a, dict) and isinstance(a.get("token"), str)
                and isinstance(a.get("logprob"), int | float)}
        out.append({"generatedToken": {"token": e["token"], "logprob": lp},
                    "position": {"start": start, "end": start + len(e["token"])},
                    "counterfactuals": alts})
    return out, unknown


def from_socketteer(response: Any, index: Any) -> list[dict[str, Any]] | None:
    """Loom's entries of completion ``index`` of a socketteer response, or None when the
    file holds no tokens there. (For the importer: ``model_responses[generation.id]``,
    ``generation.index``.)"""
    if not isinstance(response, dict) or not isinstance(index, int) or index < 0:
        return None
    completions = response.get("completions")
    if not isinstance(completions, list) or index >= len(completions):
        return None
    completion = completions[index]
    tokens = completion.get("tokens") if isinstance(completion, dict) else None
    if not isinstance(tokens, list) or not tokens:
        return None
    out: list[dict[str, Any]] = []
    for t in tokens:
        gen = t.get("generatedToken") if isinstance(t, dict) else None
        if not isinstance(gen, dict) or not isinstance(gen.get("token"), str):
            continue
        position = t.get("position")
        # An int position is the token's end (completions) or its index (chat): no offset
        start = position.get("start") if isinstance(position, dict) else None
        lp = gen.get("logprob")
        alts = t.get("counterfactuals")
        entry: dict[str, Any] = {
            "token": gen["token"], "logprob": lp if isinstance(lp, int | float) else None,
            "top_logprobs": [{"token": k, "logprob": v} for k, v in alts.items()]
            if isinstance(alts, dict) else []}
        if isinstance(start, int) and not isinstance(start, bool):
            entry["offset"] = start
        out.append(entry)
    return out or None
