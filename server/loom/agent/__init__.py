"""The collaborator agent: a loom-aware model working in the tree beside the human, through
the same executor and permissions (see docs/agent.md)."""

from loom.agent.loop import AgentEvent, Budgets, LockPolicy
from loom.agent.participant import AgentSpec, ensure_agent
from loom.agent.runner import Agent, main_agent
from loom.agent.transcript import TurnRecord
from loom.agent.triggers import TurnInput, ask

__all__ = ["Agent", "AgentEvent", "AgentSpec", "Budgets", "LockPolicy", "TurnInput",
           "TurnRecord", "ask", "ensure_agent", "main_agent"]
