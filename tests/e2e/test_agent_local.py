"""A real turn with the bundled local model (SmolLM2-135M-Instruct): whatever the tiny
model writes, the turn completes within its budgets and everything it did is a ✓/✗ result
in the trace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from loom.agent import Agent, ask
from loom.agent.transcript import MemoryTurnLog
from loom.app import open_app
from loom.llm.config import resolve_profile
from loom.llm.subject import configured_subject
from loom.memory import operational as mem
from tests.local_model import only_the_local_model, requires_local_model

pytestmark = requires_local_model


@pytest.fixture(autouse=True)
def local_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    only_the_local_model(monkeypatch, tmp_path)


def test_a_local_model_turn_completes(tmp_path: Path) -> None:
    app = open_app(tmp_path / "loom.db", subject=configured_subject())
    ws = app.ws
    tree = ws.create_tree("Lighthouse", "dialogue",
                          root_content="Write about a lighthouse keeper.")
    root = ws.node(tree.root)
    node = ws.add_node(tree, root, "The keeper climbed the stairs at dusk, counting them.",
                       ws.subject())
    ws.set_position(ws.human(), tree, node, node)
    profile = resolve_profile("collaborator")
    assert profile.provider == "local"
    agent = Agent(ws, app.executor, tree, profile=profile, turn_log=MemoryTurnLog())
    agent.budgets.max_iterations = 3
    events = []
    turn = asyncio.run(agent.run_turn(
        ask("Look at the latest node with → view and tell me what you think."), events.append))
    assert turn.stop_reason in ("done", "iterations"), turn.error
    assert 1 <= turn.iterations <= 3
    assert turn.calls and all(c.context_tokens <= agent.budgets.context_tokens
                              for c in turn.calls)
    assert events[-1].kind == "done"
    assert agent.turn_log.turns(agent.name) and agent.conversation_text()
    for entry in mem.trace(ws, agent.participant, limit=50):
        if entry.command == mem.THINK:
            continue
        assert entry.ok or entry.code, entry.command  # each one a ✓ or a ✗ CODE
    for cmd in turn.commands:  # every command the model wrote came back ✓ or ✗
        assert cmd.head.startswith("✗ ") is (not cmd.ok), cmd
