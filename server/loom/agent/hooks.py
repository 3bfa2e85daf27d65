"""Seed 003's hook points of the agent loop, and the steps Loom itself runs through them.

- ``on_before_turn(messages) -> messages``: before each model call, the messages pass
  through the before-turn steps in order, and what the last one returns is sent. Loom's
  own steps are the first and the last: :func:`prune` fits the context to its budget
  (seed 000's order, ``agent/assembly.py``), and :func:`redact` removes secrets, last, so
  nothing a step adds reaches a model unredacted. Steps added with
  :meth:`Hooks.add_before_turn` run between them.
- ``on_after_turn(turn)``: once a turn has ended, with its :class:`TurnRecord` (each
  collaborator writes its turn log this way).
- ``on_tool_result(command, result)``: after each command the model wrote has run (or was
  refused before running), with the command's text and its :class:`Result`.

A before-turn step that fails stops the turn (nothing is sent: the messages might hold
what a step was there to remove); an after-turn or tool-result callback that fails is
logged and the turn goes on. The composition root (``app.App.agent_hooks``) makes the
hooks every collaborator of the process shares; ``Agent`` adds its own turn log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from loom.agent import assembly as agent_context
from loom.agent.transcript import TurnRecord
from loom.commands.results import Result
from loom.errors import LoomError
from loom.llm.base import ChatMessage
from loom.llm.redacting import redact_message

log = logging.getLogger(__name__)

BeforeTurn = Callable[[list[ChatMessage]], list[ChatMessage]]
AfterTurn = Callable[[TurnRecord], None]
ToolResult = Callable[[str, Result], None]


class Messages(list[ChatMessage]):
    """One model call's messages, with what built them: ``draft`` (so pruning can rebuild
    them at another level) and ``assembly`` (their sections and token count). A step that
    returns a plain list is fine: the steps after it then see no draft."""

    def __init__(self, items: Iterable[ChatMessage] = (),
                 draft: agent_context.Draft | None = None,
                 assembly: agent_context.Assembly | None = None) -> None:
        super().__init__(items)
        self.draft = draft
        self.assembly = assembly

    def replaced(self, items: Iterable[ChatMessage]) -> Messages:
        """Other messages, the same provenance."""
        return Messages(items, self.draft, self.assembly)


def prune(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Loom's first before-turn step: the context within its token budget. Messages the
    loop built at full size are rebuilt at the first pruning level that fits (older nodes
    as summaries, the trace compressed, earlier results dropped, the oldest nodes left
    out, with a note to the model); messages with no draft pass unchanged."""
    draft = getattr(messages, "draft", None)
    if draft is None:
        return messages
    assembly = agent_context.fit(draft, getattr(messages, "assembly", None))
    return Messages(assembly.messages, draft, assembly)


def redact(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Loom's last before-turn step: every message without secrets (API keys, tokens,
    passwords: ``loom/redact.py``). The provider door redacts again (idempotent), so a
    model never sees a secret even when called outside the loop."""
    cleaned = [redact_message(m) for m in messages]
    return messages.replaced(cleaned) if isinstance(messages, Messages) else cleaned


@dataclass
class Hooks:
    """The three hook points; each list runs in order."""

    before_turn: list[BeforeTurn] = field(default_factory=list)
    after_turn: list[AfterTurn] = field(default_factory=list)
    tool_result: list[ToolResult] = field(default_factory=list)
    #: before-turn steps that stay at the end (redaction): added steps go before them
    _last: list[BeforeTurn] = field(default_factory=list, repr=False)

    def add_before_turn(self, step: BeforeTurn) -> Hooks:
        """Run ``step`` after the earlier steps and before redaction."""
        at = len(self.before_turn)
        while at > 0 and self.before_turn[at - 1] in self._last:
            at -= 1
        self.before_turn.insert(at, step)
        return self

    def add_after_turn(self, callback: AfterTurn) -> Hooks:
        self.after_turn.append(callback)
        return self

    def add_tool_result(self, callback: ToolResult) -> Hooks:
        self.tool_result.append(callback)
        return self

    def copy(self) -> Hooks:
        """The same steps in new lists (an agent adds its own without touching the
        process's)."""
        return Hooks(list(self.before_turn), list(self.after_turn), list(self.tool_result),
                     list(self._last))

    # -- the hook points (seed 003's names) --
    def on_before_turn(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        for step in self.before_turn:
            try:
                out = step(messages)
            except LoomError:
                raise
            except Exception as err:
                log.exception("before-turn step %s failed", _name(step))
                raise LoomError("MODEL_ERROR", f"the before-turn step {_name(step)} failed "
                                f"({err}); nothing was sent to the model",
                                "fix or remove the step") from None
            if not isinstance(out, list) or not all(isinstance(m, ChatMessage) for m in out):
                raise LoomError("MODEL_ERROR", f"the before-turn step {_name(step)} returned "
                                "something other than a list of messages; nothing was sent",
                                "a step returns the messages it was given, changed or not")
            messages = out
        return messages

    def on_after_turn(self, turn: TurnRecord) -> None:
        for callback in self.after_turn:
            _guarded(callback, "after-turn", turn)

    def on_tool_result(self, command: str, result: Result) -> None:
        for callback in self.tool_result:
            _guarded(callback, "tool-result", command, result)


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _guarded(callback: Callable[..., Any], point: str, *args: Any) -> None:
    try:
        callback(*args)
    except Exception:  # an observer must not break the turn
        log.exception("%s callback %s failed", point, _name(callback))


def loom_hooks() -> Hooks:
    """The hooks Loom runs for every collaborator: pruning first, redaction last."""
    return Hooks(before_turn=[prune, redact], _last=[redact])
