"""The composition root: a workspace, its executor and its subject model, from settings."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loom.commands.context import Actor, ExploreRequest, ExploreSummary, SubjectModel
from loom.memory import counting
from loom.store.backend import PostgresDatabase
from loom.store.db import open_database
from loom.store.schema import Participant, Tree
from loom.store.workspace import HUMAN, Workspace

if TYPE_CHECKING:
    from loom.agent.explore.service import Explorations
    from loom.agent.hooks import Hooks
    from loom.commands.executor import Executor

log = logging.getLogger(__name__)


@dataclass
class App:
    ws: Workspace
    subject: SubjectModel | None = None
    participant: str = HUMAN  # who this process acts as (default_participant)
    classifier: Any = None
    _executor: Executor | None = field(default=None, repr=False)
    #: the configured subject model is looked up when a command first needs it
    _subject_wanted: bool = field(default=False, repr=False)

    def resolve_subject(self) -> SubjectModel | None:
        """The subject model, the configured one looked up on first need: looking it up
        asks the key store (100-130 ms with no keyring daemon, more with one), which a
        command that needs no model, or an editor's first open, need not wait for."""
        if self._subject_wanted:
            self.subject = default_subject()
            self._subject_wanted = False
        return self.subject

    @property
    def executor(self) -> Executor:
        """The executor, made on first use: a command that only reads (``loom trees``)
        does not import the grammar, the handlers and what they import."""
        if self._executor is None:
            from loom.commands.executor import Executor

            find = self.resolve_subject if self._subject_wanted else None
            self._executor = Executor(self.ws, self.subject, self.classifier,
                                      explorer=_LazyExplorer(self), find_subject=find)
        return self._executor

    _explorations: Any = field(default=None, repr=False)
    #: listeners added before the explorations were made (``on_explore``)
    _explore_listeners: list[Any] = field(default_factory=list, repr=False)

    def explorations(self) -> Explorations:
        """This process's explorations (``→ explore``), made on first use: what runs them
        in the background as the collaborator, one per tree."""
        if self._explorations is None:
            from loom.agent.explore.service import Explorations

            self._explorations = Explorations(self.ws, self.executor)
            for listener in self._explore_listeners:
                self._explorations.add_listener(listener)
        return self._explorations

    def on_explore(self, listener: Any) -> None:
        """``listener(tree id, ExploreEvent)`` for each step of every exploration this
        process runs, without importing the agent before the first ``→ explore``."""
        if self._explorations is not None:
            self._explorations.add_listener(listener)
        else:
            self._explore_listeners.append(listener)

    def me(self) -> Participant:
        """This process's participant, created on first use as a human. Only the human
        (``HUMAN``) is born with every permission; any other name (a team member's
        database role, an editor's ``participant`` setting) starts with none until someone
        who holds them grants them (``loom users``)."""
        return self.ws.human(self.participant)

    hooks: Hooks | None = None  # the collaborators' hook points (seed 003); see agent_hooks

    def agent_hooks(self) -> Hooks:
        """The hook points every collaborator of this process shares: Loom's own steps
        (pruning before each model call, redaction last) and whatever the embedding
        program adds (``app.agent_hooks().add_before_turn(step)``). Made on first use, so
        commands that run no agent do not import it."""
        if self.hooks is None:
            from loom.agent.hooks import loom_hooks

            self.hooks = loom_hooks()
        return self.hooks

    def actor(self, tree: Tree, participant: Participant | None = None) -> Actor:
        return Actor(participant or self.me(), tree)

    def ambient(self, actor: Actor, extended: bool = False) -> str:
        """The actor's ambient line: the buffer variant in buffer trees."""
        from loom.render import ambient as ambient_render

        ws, tree = self.ws, actor.tree
        node, tip = ws.position(actor.participant, tree)
        buffer = tree.mode == "buffer"
        others = ([(p.name, n.label) for p, n in ws.active_elsewhere(tree, actor.participant)]
                  if extended else [])
        if buffer:
            path = ws.path(tip, prefer=(node.id, tip.id))
            where = ambient_render.Where(node.label, node.depth, tree.title,
                                         path_texts=[n.content for n in path],
                                         permissions=actor.permissions, others=others)
        else:
            where = ambient_render.Where(
                node.label, node.depth, tree.title, siblings=ws.sibling_count(node),
                annotations=ws.count_children(node.id, "annotation"),
                links=ws.count_links(node.id), permissions=actor.permissions, others=others)
        return ambient_render.line(where, buffer, extended)


class _LazyExplorer:
    """The executor's ``explorer``: the app's explorations, imported when the first
    ``→ explore`` runs (a command that explores nothing does not import the agent)."""

    def __init__(self, app: App) -> None:
        self.app = app

    def start(self, request: ExploreRequest) -> ExploreSummary:
        return self.app.explorations().start(request)

    def stop(self, tree: Tree) -> ExploreSummary | None:
        if self.app._explorations is None:
            return None
        return self.app.explorations().stop(tree)


def default_subject() -> SubjectModel | None:
    """The configured subject model, or None when no model can run (``continue`` then says
    how to configure one). ``LOOM_SUBJECT=none`` turns models off."""
    if os.environ.get("LOOM_SUBJECT", "").lower() == "none":
        return None
    try:
        from loom.llm.subject import configured_subject
    except ImportError:
        return None
    try:
        return configured_subject()
    except Exception as err:  # a broken config must not stop the workspace from opening
        log.warning("subject model unavailable: %s", err)
        return None


def default_participant(db: object, explicit: str | None = None) -> str:
    """Who a process acts as: the name it was given (``--participant``, the editor's
    ``participant`` setting), else ``$LOOM_PARTICIPANT``, else — on a team's PostgreSQL —
    the database user each person connects as, else ``human``."""
    name = explicit or os.environ.get("LOOM_PARTICIPANT")
    if name and name.strip():
        # compared exactly, never trimmed: " human " or "human" + a no-break space is
        # someone else, with nothing granted, never the human
        return name
    if isinstance(db, PostgresDatabase):
        return db.info.user
    return HUMAN


def open_app(db_path: str | Path | None = None, subject: SubjectModel | None = None,
             use_default_subject: bool = True, participant: str | None = None) -> App:
    """The workspace of ``db_path`` as ``participant``; with ``use_default_subject``, the
    configured subject model, looked up when the executor is first made."""
    from loom.redact import DB_LOGGERS, LOGGERS, install_log_redaction

    counting.use_tokenizer(_local_tokenizer)  # exact counts from the local vocabulary, if any
    # a database password never reaches a log line
    install_log_redaction(LOGGERS + DB_LOGGERS, handlers=True)
    db = open_database(db_path, password=_database_password)
    ws = Workspace(db)
    ws.human()
    ws.subject()
    classifier = None
    if os.environ.get("LOOM_CLASSIFIER", "").lower() in ("on", "1", "yes"):
        from loom.llm.classifier import model_classifier

        classifier = model_classifier()
    return App(ws, subject, default_participant(db, participant), classifier,
               _subject_wanted=subject is None and use_default_subject)


def _database_password(*args: Any, **kwargs: Any) -> Any:
    """The key store, imported only for a database that asks for a password."""
    from loom.llm.keys import database_password

    return database_password(*args, **kwargs)


def _local_tokenizer() -> Any:
    """The local vocabulary, looked for only when a count is first asked for."""
    from loom.llm.tokenizer import local_tokenizer

    return local_tokenizer()
