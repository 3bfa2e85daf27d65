"""The one error type of the core; the executor turns it into a ``✗ CODE: message`` result."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "NOT_FOUND",
    "PERMISSION_DENIED",
    "INVALID_SYNTAX",
    "LIMIT_EXCEEDED",
    "CROSS_TREE",
    "CONFLICT",
    "MODEL_ERROR",
]


class LoomError(Exception):
    def __init__(self, code: ErrorCode, message: str, hint: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
        self.hint = hint


def not_found(message: str, hint: str | None = None) -> LoomError:
    return LoomError("NOT_FOUND", message, hint)


class CrossTree(LoomError):
    """A node reference that names a node of another tree. The default hint is seed 000's
    ``switch``; a command that can reach it differently (``link`` with ``tree:"…"
    node:…``) rewrites the hint from ``node`` and ``tree_title``."""

    def __init__(self, node: str, tree_title: str, label: str | None = None) -> None:
        super().__init__("CROSS_TREE", f'node [{label or node}] is in tree "{tree_title}"',
                         f'use → switch to {node} in tree:"{tree_title}" (requires cross-tree '
                         "permission)")
        self.node = node
        self.tree_title = tree_title
