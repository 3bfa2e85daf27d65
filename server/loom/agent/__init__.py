"""The collaborator agent: a loom-aware model working in the tree beside the human, through
the same executor and permissions (see docs/agent.md).

Names are imported on first use, so ``loom.agent.cli`` (the argument parser) stays cheap to
import for the command line.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "loom.agent.runner",
    "main_agent": "loom.agent.cli",
    "AgentEvent": "loom.agent.loop",
    "Budgets": "loom.agent.loop",
    "LockPolicy": "loom.agent.loop",
    "AgentSpec": "loom.agent.participant",
    "ensure_agent": "loom.agent.participant",
    "TurnRecord": "loom.agent.transcript",
    "TurnInput": "loom.agent.triggers",
    "ask": "loom.agent.triggers",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'loom.agent' has no attribute {name!r}")
