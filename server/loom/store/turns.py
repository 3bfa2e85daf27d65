"""Collaborator turns as the store keeps them (schema v4 ``agent_turn``): the columns to
query by and the whole record as JSON. The record's shape is ``loom.agent.transcript``'s."""

from __future__ import annotations

from typing import Any

from loom.store.schema import AgentTurn
from loom.store.workspace import Workspace


def add_turn(ws: Workspace, record: dict[str, Any]) -> None:
    """Store one turn record and log an ``agent.turn`` change in the same transaction, so
    other processes (the language server's views) catch up on it."""
    agent = ws.find_participant(record["agent"])
    with ws.db.atomic():
        AgentTurn.insert(id=record["id"], agent=record["agent"], tree=record["tree"],
                         trigger=record["trigger"], input_node=record.get("input_node"),
                         started=record["started"], ended=record.get("ended"),
                         stop_reason=record["stop_reason"],
                         seen_seq=record.get("seen_seq", 0), record=record).execute()
        ws.log_change(record["tree"], "agent.turn", record["id"],
                      agent.id if agent is not None else None)


def turn_records(ws: Workspace, agent: str, tree: str | None = None,
                 limit: int | None = None) -> list[Any]:
    """The stored records of ``agent``'s turns (in ``tree``), the latest ``limit``,
    oldest first."""
    q = AgentTurn.select(AgentTurn.record).where(AgentTurn.agent == agent)
    if tree is not None:
        q = q.where(AgentTurn.tree == tree)
    q = q.order_by(AgentTurn.started.desc(), AgentTurn.id.desc())  # ids: ordered_ulid
    if limit:
        q = q.limit(limit)
    return [row.record for row in q][::-1]
