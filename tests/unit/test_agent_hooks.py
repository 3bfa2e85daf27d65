"""Seed 003's hook points in the collaborator's loop: ``on_before_turn(messages)``,
``on_after_turn(turn)``, ``on_tool_result(command, result)``; Loom's own pruning and
redaction run as the first and last before-turn steps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loom.agent import assembly as cx
from loom.agent.hooks import Hooks, Messages, loom_hooks, prune, redact
from loom.agent.loop import Budgets, TurnLoop, TurnOptions
from loom.agent.participant import ensure_agent
from loom.agent.runner import Agent
from loom.agent.transcript import MemoryTurnLog, TurnRecord
from loom.agent.triggers import ask
from loom.commands.context import Actor
from loom.commands.results import Result
from loom.errors import LoomError
from loom.llm.base import ChatMessage, Completion, GenerationResult, Usage
from loom.llm.config import ModelProfile
from loom.redact import PLACEHOLDER

SECRET = "sk-ant-api03-" + "Abc123_-" * 11 + "xyzAA"
LONG = " ".join(f"Marie remembered the harbour, the nets and the gulls ({i})." for i in range(300))


class Scripted:
    """A chat model that answers with fixed replies and keeps what it was sent."""

    name = "scripted"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.sent: list[list[ChatMessage]] = []

    async def chat(self, messages: list[ChatMessage], sampling: Any = None, *,
                   on_delta: Any = None, **_: Any) -> GenerationResult:
        self.sent.append(list(messages))
        text = self.replies.pop(0) if self.replies else "Nothing more."
        if on_delta is not None:
            on_delta(text)
        return GenerationResult(completions=[Completion(index=0, text=text)], model="s",
                                provider="scripted", latency_ms=1.0,
                                usage=Usage(prompt_tokens=10, completion_tokens=5))

    async def complete(self, *_: Any, **__: Any) -> GenerationResult:
        raise AssertionError("the collaborator only chats")


@pytest.fixture
def story(app, clock):  # type: ignore[no-untyped-def]
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Marie", "dialogue", root_content="Let's study Marie.", author=human)
    a = ws.add_node(tree, ws.node(tree.root), LONG, human)
    b = ws.add_node(tree, a, "Her father left when she was nine.", ws.subject())
    clock.advance(60)
    agent = ensure_agent(ws)
    ws.set_position(agent, tree, b, b)
    return {"app": app, "ws": ws, "tree": tree, "a": a, "b": b, "actor": Actor(agent, tree)}


def turn(story: dict[str, Any], provider: Scripted, hooks: Hooks,
         budget: int = 16_000) -> TurnRecord:
    """One turn of the loop itself (no provider door: only the hooks redact here)."""
    loop = TurnLoop(story["app"].executor, story["actor"], provider,
                    TurnOptions(budgets=Budgets(context_tokens=budget), hooks=hooks))
    record = TurnRecord(agent="collaborator", tree=story["tree"].id, trigger="ask")
    return asyncio.run(loop.run(ask("What drives Marie?"), record))


def test_loom_prunes_first_and_redacts_last(story: dict[str, Any]) -> None:
    hooks = story["app"].agent_hooks()
    assert hooks.before_turn == [prune, redact]
    seen: list[list[ChatMessage]] = []

    def leak(messages: list[ChatMessage]) -> list[ChatMessage]:
        """An added step: sees pruned messages, and adds a secret redaction must catch."""
        seen.append(messages)
        return [*messages[:-1], messages[-1].model_copy(
            update={"content": messages[-1].content + f"\nkey: {SECRET}"})]

    provider = Scripted("Marie is driven by loss.")
    record = turn(story, provider, hooks.copy().add_before_turn(leak), budget=1_200)
    assert record.stop_reason == "done" and record.message == "Marie is driven by loss."
    # pruning ran before the added step: it saw the pruned context, with the note
    assert isinstance(seen[0], Messages) and seen[0].assembly is not None
    assert seen[0].assembly.pruned and record.pruned
    assert "Note: context was pruned to fit 1,200 tokens" in seen[0][1].content
    assert LONG not in seen[0][1].content  # the long node is a summary now
    # redaction ran after it: the model never saw the key
    sent = "\n".join(m.content for m in provider.sent[0])
    assert SECRET not in sent and f"key: {PLACEHOLDER}" in sent
    assert hooks.before_turn == [prune, redact]  # the process's hooks are unchanged


def test_pruning_as_a_step_is_what_assembly_was(story: dict[str, Any]) -> None:
    """The loop's messages (level 0, then the prune step) equal the one-call assembly."""
    def count(text: str) -> int:
        return len(text) // 4 + 1

    for budget in (600, 1_200, 16_000):
        d = cx.draft(story["ws"], story["actor"], budget, turn_input="Hi", count=count)
        full = d.build(0)
        stepped = loom_hooks().on_before_turn(Messages(full.messages, d, full))
        whole = cx.fit(cx.draft(story["ws"], story["actor"], budget, turn_input="Hi", count=count))
        assert [m.content for m in stepped] == [m.content for m in whole.messages]
    # a budget too small for what must survive is refused the same way by both
    d = cx.draft(story["ws"], story["actor"], 400, turn_input="Hi", count=count)
    full = d.build(0)
    with pytest.raises(LoomError) as stepped_err:
        loom_hooks().on_before_turn(Messages(full.messages, d, full))
    with pytest.raises(LoomError) as whole_err:
        cx.fit(cx.draft(story["ws"], story["actor"], 400, turn_input="Hi", count=count))
    assert stepped_err.value.code == whole_err.value.code == "LIMIT_EXCEEDED"


def test_steps_without_a_draft_pass_through() -> None:
    plain = [ChatMessage(role="user", content=f"my key is {SECRET}")]
    assert prune(plain) is plain
    cleaned = redact(plain)
    assert type(cleaned) is list and cleaned[0].content == f"my key is {PLACEHOLDER}"


def test_after_turn_and_tool_results(story: dict[str, Any]) -> None:
    results: list[tuple[str, Result]] = []
    turns: list[TurnRecord] = []
    log = MemoryTurnLog()
    hooks = loom_hooks().add_tool_result(lambda c, r: results.append((c, r)))
    hooks.add_after_turn(lambda t: turns.append(t))
    b = story["b"]
    provider = Scripted(f"→ view {b.local_id}\n→ view zzzzzz\n", "Seen it.")
    agent = Agent(story["ws"], story["app"].executor, story["tree"],
                  profile=ModelProfile(name="fake", provider="openai-compatible",
                                       base_url="http://127.0.0.1:9", model="fake"),
                  provider_factory=lambda _profile: provider, turn_log=log, hooks=hooks)
    record = asyncio.run(agent.run_turn(ask("Look at b")))
    assert [(c, r.ok, r.code) for c, r in results] == [
        (f"→ view {b.local_id}", True, None), ("→ view zzzzzz", False, "NOT_FOUND")]
    assert results[0][1].text.startswith(f"[{b.local_id}]")
    assert turns == [record] and record.message == "Seen it."
    # the agent's own after-turn step, first: its turn log
    assert [t.message for t in log.turns(agent.name, story["tree"].id)] == ["Seen it."]
    assert agent.hooks.after_turn[0] == log.append and log.append not in hooks.after_turn


def test_a_failing_before_turn_step_sends_nothing(story: dict[str, Any]) -> None:
    def broken(messages: list[ChatMessage]) -> list[ChatMessage]:
        raise RuntimeError("disk full")

    provider = Scripted("never")
    record = turn(story, provider, loom_hooks().add_before_turn(broken))
    assert provider.sent == [] and record.stop_reason == "error"
    assert record.error is not None and record.error.startswith(
        "✗ MODEL_ERROR: the before-turn step "
        "test_a_failing_before_turn_step_sends_nothing.<locals>.broken failed (disk full); "
        "nothing was sent to the model")
    wrong = turn(story, provider, loom_hooks().add_before_turn(lambda m: "text"))  # type: ignore[arg-type,return-value]
    assert provider.sent == [] and wrong.error is not None
    assert "returned something other than a list of messages" in wrong.error


def test_a_failing_observer_does_not_break_the_turn(story: dict[str, Any]) -> None:
    def boom(*_: Any) -> None:
        raise RuntimeError("observer bug")

    hooks = loom_hooks().add_tool_result(boom).add_after_turn(boom)
    provider = Scripted(f"→ view {story['b'].local_id}\n", "Done.")
    record = turn(story, provider, hooks)
    assert record.stop_reason == "done" and record.message == "Done."
    assert [c.ok for c in record.commands] == [True] and len(provider.sent) == 2
    hooks.on_after_turn(record)  # logged, not raised


def test_added_steps_go_before_redaction() -> None:
    def one(m: list[ChatMessage]) -> list[ChatMessage]:
        return m

    def two(m: list[ChatMessage]) -> list[ChatMessage]:
        return m

    hooks = loom_hooks().add_before_turn(one).add_before_turn(two)
    assert hooks.before_turn == [prune, one, two, redact]
    copy = hooks.copy().add_before_turn(one)
    assert hooks.before_turn == [prune, one, two, redact]
    assert copy.before_turn == [prune, one, two, one, redact]
