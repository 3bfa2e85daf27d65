"""What starts a collaborator turn.

* an explicit **ask** from the human, with an optional message;
* an **annotation addressed to it**: a human's annotation whose text starts with
  ``@collaborator`` or ``@<agent name>``, created since the agent last looked;
* opt-in **autonomous** mode: once human activity has settled (no human change-log entries
  in the tree for ``settle_s`` seconds, default 30), one turn, and no other until the
  human has been active again.

Everything is read from the change log (``Workspace.changes_since``), so a trigger written
by another process (the editor) is seen too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from loom.agent.transcript import TriggerKind
from loom.render import formats as f
from loom.render.text import plural, preview, quote
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import Workspace

DEFAULT_SETTLE_S = 30.0
ALWAYS_ADDRESSES = ("collaborator",)


@dataclass
class TurnInput:
    """The current turn input: ``text`` is what the model reads."""

    kind: TriggerKind
    text: str
    message: str = ""  # the human's words (ask message, annotation text)
    author: str | None = None
    node: str | None = None  # the annotation's label (ann-3)
    target: str | None = None  # the node it annotates (label)


def ask(message: str | None = None, author: str = "human") -> TurnInput:
    message = (message or "").strip()
    if message:
        text = f"The {author} asks: {message}" if author == "human" else \
            f"{author} asks: {message}"
    else:
        text = (f"The {author} asked for your help here, without a message. Look at where "
                "they are working and offer something useful.")
    return TurnInput("ask", text, message, author)


#: change kinds that are a human's writing, and how the autonomous nudge names them
_WROTE = {"node.continuation": "wrote", "node.version": "edited into",
          "node.annotation": "annotated"}
CHANGED_SHOWN = 6


def autonomous(settle_s: float, changed: Iterable[str] = ()) -> TurnInput:
    """The nudge of an autonomous turn; ``changed``: lines naming what the human wrote
    since the agent's last turn ("look at what changed" alone says nothing of what)."""
    lines = list(changed)
    what = ("Since your last turn they changed:\n" + "\n".join(lines) + "\n") if lines else \
        "Nothing they wrote changed since your last turn. "
    text = (f"(Autonomous turn: the human has paused for {plural(round(settle_s), 'second')}.) "
            f"{what}Look at it where they are working and add something useful: an "
            "annotation, a question, or alternatives. If there is nothing worth adding, say "
            "so in one line and issue no commands. Do not repeat earlier suggestions.")
    return TurnInput("autonomous", text)


def changed_lines(ws: Workspace, changes: dict[str, str]) -> list[str]:
    """``  wrote [a7x2] "She opened…"`` for each node a human wrote, edited or annotated
    (node id → change kind, oldest first), the latest ``CHANGED_SHOWN``."""
    out = []
    items = list(changes.items())
    for node_id, kind in items[-CHANGED_SHOWN:]:
        node = ws.find_node(node_id)
        if node is None or node.pruned:
            continue
        text = quote(preview(node.content, 100))
        if kind == "node.annotation" and node.parent:
            target = ws.find_node(node.parent)
            on = f" {f.ref(target.label)}" if target is not None else ""
            out.append(f"  annotated{on}: {f.ref(node.label)} {text}")
        elif kind == "node.version" and node.version_of:
            original = ws.find_node(node.version_of)
            was = f.ref(original.label) if original is not None else "a node"
            out.append(f"  edited {was} into {f.ref(node.label)} {text}")
        else:
            out.append(f"  wrote {f.ref(node.label)} {text}")
    if len(items) > CHANGED_SHOWN:
        out.insert(0, f"  (and {plural(len(items) - CHANGED_SHOWN, 'earlier change')})")
    return out


def addressed_to(text: str, names: Iterable[str]) -> str | None:
    """The message of an annotation addressed ``@name …`` to one of ``names``, else None."""
    stripped = text.lstrip()
    for name in names:
        m = re.match(rf"@{re.escape(name)}(?![\w-])[\s,:;.!?-]*", stripped, re.IGNORECASE)
        if m:
            return stripped[m.end():].strip()
    return None


def from_annotation(ws: Workspace, ann: Node, message: str) -> TurnInput:
    author = ws.participant_by_id(ann.author_id)
    who = author.name if author else "human"
    target = ws.find_node(ann.parent) if ann.parent else None
    on = f" on {f.ref(target.label)}" if target else ""
    text = (f"The {who} addressed you in annotation {f.ref(ann.label)}{on}: "
            f"{message or '(no message)'}")
    if who != "human":
        text = f"{who} addressed you in annotation {f.ref(ann.label)}{on}: {message}"
    return TurnInput("annotation", text, message, who, ann.label,
                     target.label if target else None)


class Triggers:
    """Polls the change log of one tree for one agent."""

    def __init__(self, ws: Workspace, agent: Participant, tree: Tree, *,
                 autonomous_mode: bool = False, settle_s: float = DEFAULT_SETTLE_S,
                 since_seq: int | None = None) -> None:
        self.ws = ws
        self.agent = agent
        self.tree = tree
        self.autonomous_mode = autonomous_mode
        self.settle_s = settle_s
        # a cursor that also catches changes parallel writers commit out of order
        self._feed = ws.follow(since_seq, tree.id)
        self.last_human: float | None = None  # time of the latest human change seen
        self._unsettled = False  # human activity since the last autonomous turn
        self._humans: set[str] = set()
        #: what the humans wrote since the agent's last turn: node id → change kind
        self._changed: dict[str, str] = {}

    @property
    def cursor(self) -> int:
        """The change-log position read up to (stored with each turn, to resume from)."""
        return self._feed.seen

    @cursor.setter
    def cursor(self, seq: int) -> None:
        self._feed.seen = seq

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.agent.name, *ALWAYS_ADDRESSES)))

    def _is_human(self, participant_id: str | None) -> bool:
        if participant_id is None:
            return False
        if participant_id not in self._humans:
            p = self.ws.participant_by_id(participant_id)
            if p is None or p.kind != "human":
                return False
            self._humans.add(participant_id)
        return True

    def poll(self) -> list[TurnInput]:
        """Inputs that arrived since the last poll, oldest first; at most one autonomous."""
        inputs: list[TurnInput] = []
        for change in self._feed.poll():
            if change.actor == self.agent.id or not self._is_human(change.actor):
                continue
            self.last_human = change.created
            self._unsettled = True
            if change.kind in _WROTE:
                self._changed.pop(change.entity, None)
                self._changed[change.entity] = change.kind
            if change.kind != "node.annotation":
                continue
            ann = self.ws.find_node(change.entity)
            if ann is None or ann.kind != "annotation":
                continue
            message = addressed_to(ann.content, self.names)
            if message is not None:
                inputs.append(from_annotation(self.ws, ann, message))
        if inputs:
            self._unsettled = False  # answering the human is this settle's turn
            self._changed.clear()
        elif self.autonomous_mode and self.settled():
            self._unsettled = False
            inputs.append(autonomous(self.settle_s, changed_lines(self.ws, self._changed)))
            self._changed.clear()
        return inputs

    def settled(self) -> bool:
        return (self._unsettled and self.last_human is not None
                and self.ws.clock() - self.last_human >= self.settle_s)
