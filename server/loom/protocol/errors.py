"""Errors raised by the Loom Protocol codec."""

from __future__ import annotations

import json


class LoomProtocolError(ValueError):
    """Malformed Loom Protocol text. ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


class LoomEncodeError(ValueError):
    """A value that has no Loom Protocol form (NaN, infinity, a reference cycle).

    ``path`` locates the value, e.g. ``$.nodes[2].score``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.steps: list[str | int] = []

    @property
    def path(self) -> str:
        out = "$"
        for step in self.steps:
            if isinstance(step, int):
                out += f"[{step}]"
            elif step.isidentifier():
                out += f".{step}"
            else:
                out += f"[{json.dumps(step, ensure_ascii=False)}]"
        return out

    def __str__(self) -> str:
        return f"{self.message} (at {self.path})"


class LoomEncodeTypeError(LoomEncodeError, TypeError):
    """A value that is not JSON data (a set, bytes, a non-string key, ...)."""
