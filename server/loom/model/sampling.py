"""How a continuation is sampled, as one record from the command to the model.

``→ continue n:3 tokens:40 temperature:0.7`` asks for three things of the subject model;
they travel together from the parsed command through the core's request to the model,
and what the command leaves out (None) is the model profile's default, filled in one
place: the providers' ``call_params``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    max_tokens: int | None = None
    temperature: float | None = None

    def for_one(self) -> dict[str, Any]:
        """The arguments of one call that makes one continuation (a chat model's reply)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature}

    def for_all(self) -> dict[str, Any]:
        """The arguments of one call that makes all ``n`` (a completion endpoint)."""
        return {"n": self.n, **self.for_one()}
