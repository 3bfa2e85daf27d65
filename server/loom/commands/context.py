"""What a command runs with: the workspace, who is acting, and in which tree."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from loom.errors import LoomError
from loom.model import permissions as perms
from loom.render.text import relative_time
from loom.store.schema import Node, Participant, Tree
from loom.store.workspace import NodeRow, Workspace

if TYPE_CHECKING:  # pydantic, which `loom trees` need not load
    from loom.model.sampling import Sampling


@dataclass
class ContinueRequest:
    """A subject-model request built by the core: prose for buffer trees, messages for
    dialogue trees (annotations and excluded nodes already left out)."""

    tree: Tree
    source: Node
    sampling: Sampling
    prompt: str | None = None
    messages: list[dict[str, str]] | None = None
    system: str | None = None
    cancel: threading.Event | None = None  # set by the front end to stop a generation
    #: The models to ask, by profile name (``n`` each, at once); empty: the default one.
    models: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return self.sampling.count


@dataclass
class FillRequest:
    """A fill built by the core: ``n`` texts for the span of ``node`` between ``before``
    (the path's text up to the span) and ``after`` (the node's text after it, then the
    path's below it), to be written as versions of the node."""

    tree: Tree
    node: Node
    sampling: Sampling
    before: str
    after: str
    #: The text the span holds now (what each version replaces).
    replaced: str
    system: str | None = None
    cancel: threading.Event | None = None
    models: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return self.sampling.count


@runtime_checkable
class Filler(Protocol):
    """A subject model that can fill the middle of a text (``→ fill``)."""

    def fill(self, request: FillRequest,
             on_delta: Callable[[int, str], None] | None = None) -> Any:
        """As ``SubjectModel.generate``: each completion's ``text`` is a span's new text,
        ``params`` say how it was made (``strategy``)."""
        ...


@dataclass(frozen=True)
class NamedModel:
    """A model ``continue`` can be asked for by name (``model:NAME``)."""

    name: str
    #: What it is: provider and model (``anthropic claude-haiku-4-5``).
    description: str
    #: False when it cannot run here yet (a hosted model without its key).
    ready: bool = True
    #: The subject model's default.
    default: bool = False


@runtime_checkable
class ModelChoices(Protocol):
    """A subject model that serves several models, chosen per request."""

    def choices(self) -> list[NamedModel]:
        """The models there are, the default first."""
        ...


@dataclass(frozen=True)
class PresetChoice:
    """A named sampler preset ``continue`` can be asked with (``preset:NAME``)."""

    name: str
    #: Its options as a person reads them (``temperature 1.3 · top_k 100``).
    description: str
    sampling: Sampling


@runtime_checkable
class SamplerPresets(Protocol):
    """A subject model whose configuration names sampler presets."""

    def presets(self) -> list[PresetChoice]:
        """The presets there are, in the order the configuration gives them."""
        ...


class SubjectModel(Protocol):
    """The subject model behind ``continue`` (never the collaborator itself)."""

    def generate(self, request: ContinueRequest,
                 on_delta: Callable[[int, str], None] | None = None) -> Any:
        """Returns an object with ``completions`` (each ``.text``, ``.index``,
        ``.finish_reason``, ``.logprobs``), ``model``, ``provider``, ``params``, ``usage``,
        ``latency_ms`` and ``raw``; raises ``LoomError("MODEL_ERROR", …)`` on failure."""
        ...


@dataclass
class ScoreRequest:
    """Text to score, built by the core: ``prefix`` (the system context and the path
    before the first piece, as a continuation's prompt has them), then each piece (a
    node's text) with whether to score it or only read it."""

    tree: Tree
    prefix: str
    pieces: list[tuple[str, bool]]
    #: the profile that scores, by name; None: the subject model's default
    model: str | None = None
    cancel: threading.Event | None = None
    on_progress: Callable[[int, int], None] | None = None


@runtime_checkable
class Scorer(Protocol):
    """A subject model that can score given text (``→ score``)."""

    def score(self, request: ScoreRequest) -> Any:
        """Returns an object with ``tokens`` (a list of ``loom.model.tokens.Token`` for
        each wanted piece, offsets in its text), ``scorer`` (the model's name) and ``k``;
        raises ``LoomError("MODEL_ERROR", …)`` where the model cannot."""
        ...


@dataclass(frozen=True)
class ExploreRequest:
    """An exploration as ``→ explore`` asks for it, with the defaults filled in."""

    tree: Tree
    source: Node
    depth: int
    n: int
    rubric: str
    budget: int
    threshold: int
    #: who asked (the collaborator that explores may hold no more than they do)
    starter: Participant
    #: what each ``→ continue`` of it asks beyond ``n``: the models (``model:``/``models:``)
    #: and the sampling (``tokens:``, ``temperature:``…), as ``continue`` reads them
    models: tuple[str, ...] = ()
    sampling: Sampling | None = None


@dataclass(frozen=True)
class ExploreSummary:
    """Where a tree's exploration stands: what it made, scored and pruned."""

    source: str  # the label it started from
    made: int
    scored: int
    pruned: int
    spent: int  # tokens, subject and judge together
    budget: int
    #: why it ended ("depth", "budget", "stopped", "nothing left to expand", an error…),
    #: or None while it runs
    ended: str | None = None
    #: who explores (the collaborator's name) and which model judges
    explorer: str = ""
    judge: str = ""
    failures: tuple[str, ...] = ()
    #: what the start must say about the judge's model (message, hint): the bundled one
    #: is too small to judge
    caveat: tuple[str, str] | None = None


class Explorer(Protocol):
    """What runs explorations in the background (``agent/explore``, wired in by the shells):
    the core only starts and stops them."""

    def start(self, request: ExploreRequest) -> ExploreSummary:
        """Start exploring (``CONFLICT`` while the tree has one running); returns at once."""
        ...

    def stop(self, tree: Tree) -> ExploreSummary | None:
        """Stop the tree's exploration and wait for it to end cleanly; None if none ran."""
        ...


@dataclass
class Actor:
    """Who runs a command, and the tree they are in (``switch … in tree:`` changes it)."""

    participant: Participant
    tree: Tree | None  # None until there is a tree (``new``, ``import``)
    #: a collaborator's context budget in tokens (what ``→ memory`` counts against)
    context_budget: int | None = None

    @property
    def permissions(self) -> set[str]:
        return perms.effective(self.participant.permissions or [])


@dataclass
class Ctx:
    ws: Workspace
    actor: Actor
    #: the subject model, asked for only by the commands that use one (``subject``)
    subject_of: Callable[[], SubjectModel | None] | None = None
    on_delta: Callable[[int, str], None] | None = None
    now: float = 0.0
    cancel: threading.Event | None = None
    explorer: Explorer | None = None  # what runs → explore (None: this front end has none)
    _names: dict[str, str] = field(default_factory=dict)

    @property
    def subject(self) -> SubjectModel | None:
        """The model behind ``continue`` (the executor looks it up on first need)."""
        return self.subject_of() if self.subject_of is not None else None

    @property
    def tree(self) -> Tree:
        if self.actor.tree is None:
            raise LoomError("NOT_FOUND", "there is no tree yet",
                            'create one: loom new "Title" (or import one)')
        return self.actor.tree

    @property
    def me(self) -> Participant:
        return self.actor.participant

    def name(self, participant_id: str) -> str:
        if participant_id not in self._names:
            p = self.ws.participant_by_id(participant_id)
            self._names[participant_id] = p.name if p else "unknown"
        return self._names[participant_id]

    def when(self, t: float) -> str:
        return relative_time(t, self.now)

    def position(self) -> tuple[Node, Node]:
        return self.ws.position(self.me, self.tree)

    def resolve(self, ref: str | None) -> Node:
        """A node reference, or the current position when none is given."""
        if ref is None or ref.strip() == "":
            return self.position()[0]
        return self.ws.resolve(self.tree, ref)

    def text_node(self, ref: str | None, instead: str) -> Node:
        """A node of the text (``resolve``), for a tool that needs one: an annotation is
        ``INVALID_SYNTAX`` saying what it is, whatever the tool, with ``instead`` (a hint in
        which ``{on}`` is the node it annotates) for what to name instead. It exists, so it
        is not ``NOT_FOUND``."""
        node = self.resolve(ref)
        if node.kind == "annotation":
            on = self.ws.node(node.parent).label if node.parent else "?"
            raise LoomError("INVALID_SYNTAX", f"[{node.label}] is an annotation, not a node",
                            instead.format(on=on, ann=node.label))
        return node

    def require(self, permission: str, action: str) -> None:
        missing = perms.missing_for(permission, self.actor.permissions)
        if missing:
            raise LoomError("PERMISSION_DENIED", f"{missing} not enabled",
                            f"request elevated permissions or ask the human to {action}")

    def guard(self, node: Node, *, extends: bool) -> None:
        """``CONFLICT`` when another participant is generating on this node's branch
        (``extends``: the write adds below the node; else it changes the node)."""
        self.ws.check_branch(node, self.me, extends=extends)

    def guarded(self, *checks: tuple[Node, bool]) -> contextlib.AbstractContextManager[None]:
        """The write's transaction, entered after :meth:`guard` passed for each ``(node,
        extends)`` with the tree's other writers held off (so, across processes and
        machines, no branch lock is taken between the check and the write)."""
        return self.ws.guarded_write(self.tree.id, self.me, checks)

    def choices(self) -> tuple[str, ...]:
        """The version-family members this participant chose to see on their paths
        (``→ switch to`` an original, or a version, by its id): every path walked for
        them prefers these, so a prompt reads what the editor shows."""
        return self.ws.path_choices(self.me, self.tree)

    def current_path(self) -> list[NodeRow]:
        node, tip = self.position()
        return self.ws.path(tip, prefer=(node.id, tip.id, *self.choices()))

    def branch_path(self, through: Node) -> list[NodeRow]:
        """The path through a node: the current path when it is on it, else its ancestors and
        the first continuations below it."""
        current = self.current_path()
        if any(n.id == through.id for n in current):
            return current
        if self.tree.mode == "buffer":
            # a version of it on your path stands in its place (the edit that made it
            # took the original's place there): the branch is your path through it
            family = through.version_of or through.id
            if any(n.id == family or n.version_of == family for n in current):
                return current
        # elsewhere the versions on your path, else the newest, stand in their originals'
        # places, as → tree draws them (so the drawing and the branch read agree)
        # (only the versions on it can be chosen between: the rest is no choice)
        tip = self.ws.descend(through)
        return self.ws.path(tip, prefer=(through.id, *self.choices(),
                                         *(n.id for n in current if n.version_of)))

    def in_place(self, node: Node) -> Node:
        """In a buffer-mode tree, the member of ``node``'s family that stands in the
        original's place when the original is named: the one on your path, else the
        newest version (SPEC-NOTES 5: a version takes its original's place). A version
        named by its own id (``a7x2'``) is itself; so is any node of a dialogue tree."""
        if self.tree.mode != "buffer" or node.version_of is not None:
            return node
        shown = self.ws.shown_members([node.id], {n.id for n in self.current_path()})
        member = shown.get(node.id)
        return self.ws.node(member[0]) if member is not None else node
