"""A generation cancelled as the model finishes writes nothing (the editor's cancel may
arrive between the last token and the commit)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from loom.commands import syntax
from loom.commands.context import Actor
from loom.demo import create_demo


class CancelledAtTheEnd:
    """A subject whose caller cancels just as it returns its completions."""

    def generate(self, request: Any, on_delta: Any = None) -> Any:
        request.cancel.set()
        comps = [SimpleNamespace(index=0, text=" Too late.", finish_reason="stop",
                                 logprobs=None, usage=None)]
        return SimpleNamespace(completions=comps, model="fake", provider="fake", params={},
                               usage={}, latency_ms=1.0, raw=[])


def test_a_generation_cancelled_as_it_finishes_writes_nothing(app: Any) -> None:
    ws = app.ws
    tree = create_demo(ws)
    human = ws.human()
    _node, tip = ws.position(human, tree)
    nodes = ws.node_count(tree)
    app.executor.subject = CancelledAtTheEnd()
    cmd = syntax.Continue.model_validate({"from": tip.id, "n": 1})
    result = app.executor.execute(cmd, Actor(human, tree), None, threading.Event())
    assert not result.ok and result.code == "MODEL_ERROR"
    assert "cancelled" in result.text
    assert ws.node_count(tree) == nodes
    assert ws.foreign_locks(tree.id, ws.subject()) == []  # and the turn was released
