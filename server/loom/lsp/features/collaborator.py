"""The collaborator in the editor: asked and stopped by the human, triggered by
annotations addressed to it, optionally autonomous, optionally asking approval for each
write. It acts through the executor as its own participant (``loom.agent``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.documents import OpenDoc
from loom.lsp.features.editing import Editing
from loom.lsp.host import Host
from loom.store.schema import Tree

if TYPE_CHECKING:
    from loom.lsp.wiring import Later

log = logging.getLogger(__name__)


class _Sync(Protocol):
    async def catch_up(self) -> None: ...


class Collaborator:
    def __init__(self, host: Host, editing: Editing, sync: Later[_Sync]) -> None:
        self.host = host
        self.editing = editing
        self.sync = sync  # after each turn, brings its edits into the buffers
        self.agents: dict[str, Any] = {}  # tree id → its collaborator (loom.agent.Agent)
        self._asking: set[str] = set()  # trees with a collaborator turn under way

    def status(self, tree: Tree | None) -> dict[str, Any] | None:
        """``{name, busy, node, depth}`` of the tree's collaborator, once it has one."""
        agent = self.agents.get(tree.id) if tree is not None else None
        if agent is None:
            return None
        def where() -> tuple[str | None, int | None]:
            with contextlib.suppress(Exception):
                at, _tip = self.host.app.ws.position(agent.participant, agent.tree)
                return at.label, at.depth  # as view and tree show it
            return None, None

        # (a newcomer's place is the end of the first path: a walk down the whole tree)
        node, depth = self.host.docs.cache.memo(
            ("collaborator at", agent.tree.id, agent.participant.id), where)
        return {"name": agent.name, "busy": agent.busy, "node": node, "depth": depth}

    def agent(self, tree: Tree) -> Any:
        """The tree's collaborator, made (and its participant created) on first use, with
        this session's participant as its starter: ``PERMISSION_DENIED`` when it could do
        more than they can (``loom.agent.participant.may_start``, the rule ``loom agent``
        applies too, so a reader's editor cannot make one with all six)."""
        agent = self.agents.get(tree.id)
        if agent is None:
            from loom.agent import Agent, AgentSpec

            settings = self.host.settings
            agent = Agent(self.host.app.ws, self.host.app.executor, tree, spec=AgentSpec(),
                          approve=self._approve, autonomous=settings.collaborator_autonomous,
                          settle_s=settings.collaborator_settle_s,
                          hooks=self.host.app.agent_hooks(), starter=self.host.docs.participant)
            self.agents[tree.id] = agent
        return agent

    async def _approve(self, command: str) -> bool:
        """Approval mode: the human says yes or no to each write, in the editor."""
        if not self.host.settings.collaborator_approval:
            return True
        answer = await self.host.ask(f"The collaborator wants to run: {command}",
                                     ["Allow", "Deny"])
        return answer == "Allow"

    async def tick(self) -> None:
        """Annotations addressed to the collaborator, and (opt-in) autonomous turns, in the
        trees the human has open."""
        settings = self.host.settings
        if not (settings.collaborator_triggers or settings.collaborator_autonomous):
            return
        open_trees: dict[str, OpenDoc] = {}
        for doc in self.host.docs.open.values():
            if doc.kind == "path" and doc.tree is not None:
                open_trees.setdefault(doc.tree.id, doc)
        for tree_id, doc in open_trees.items():
            if tree_id in self._asking or doc.tree is None:
                continue
            try:
                new = tree_id not in self.agents
                agent = self.agent(doc.tree)
                if new:  # what the human did since opening the tree counts, not just from now
                    agent.triggers.cursor = min(agent.triggers.cursor, doc.opened_seq)
            except Exception as err:
                if isinstance(err, LoomError) and err.code == "PERMISSION_DENIED":
                    continue  # not this session's to run (a reader's): an editor that may does
                # no collaborator model: nothing to trigger, ever
                log.warning("no collaborator for triggers: %s", err)
                settings.collaborator_triggers = settings.collaborator_autonomous = False
                return
            if agent.busy:
                continue
            agent.triggers.autonomous_mode = settings.collaborator_autonomous
            agent.triggers.settle_s = settings.collaborator_settle_s
            inputs = await asyncio.to_thread(agent.pending)
            if inputs:
                self._asking.add(tree_id)
                self.host.spawn(self._triggered(doc, doc.tree, inputs[0]), "collaborator turn")

    async def _triggered(self, doc: OpenDoc, tree: Tree, turn_input: Any) -> None:
        try:
            result = await self._run_turn(doc, tree, turn_input)
            if result.get("message"):
                self.host.show(Result.success(f"Collaborator: {result['message']}"))
        finally:
            self._asking.discard(tree.id)

    async def ask(self, uri: str, message: str | None) -> dict[str, Any]:
        """One collaborator turn for the document's tree: ``{ok, message, data: {turn}}``."""
        doc = self.host.docs.ensure(uri)
        tree = doc.tree or self.host.actor(doc).tree
        if tree is None:
            return {"ok": False, "message": "✗ NOT_FOUND: there is no tree yet"}
        current = self.agents.get(tree.id)
        if tree.id in self._asking or (current is not None and current.busy):
            busy = Result.failure("CONFLICT", "the collaborator is busy with a turn in "
                                  f'"{tree.title}"', "wait for it, or stop it "
                                  "(loom.stopCollaborator)")
            return {"ok": False, "message": busy.text}
        refused = self._beyond_the_asker(doc, tree)
        if refused is not None:
            return {"ok": False, "message": refused.text, "error": refused.text}
        self._asking.add(tree.id)
        try:
            from loom.agent import ask

            if doc.kind == "path" and not doc.view.read_only:
                await self.editing.commit_and_show(doc)
            return self._with_caveat(tree, await self._run_turn(doc, tree, ask(message)))
        finally:
            self._asking.discard(tree.id)

    def _with_caveat(self, tree: Tree, answer: dict[str, Any]) -> dict[str, Any]:
        """The answer, saying before it when the collaborator's model is too small for the
        work (the bundled SmolLM2), and how to configure a capable one: said where a person
        asks, in every editor (else: nonsense, and every health check green)."""
        from loom.llm.config import agent_model_caveat

        agent = self.agents.get(tree.id)
        caveat = agent_model_caveat(agent.profile) if agent is not None else None
        if caveat is None:
            return answer
        message, hint = caveat
        said = answer.get("message") or ""  # first: the turn's text may be long
        return {**answer, "message": f"! {message}\n  hint: {hint}" + (f"\n\n{said}"
                                                                      if said else ""),
                "data": {**(answer.get("data") or {}), "caveat": message}}

    def _beyond_the_asker(self, doc: OpenDoc, tree: Tree) -> Result | None:
        """No escalation through delegation: a participant may ask the collaborator only
        for a turn it could take itself (``may_start``, the rule ``loom agent`` applies
        too), checked before the buffer is committed."""
        from loom.agent import AgentSpec
        from loom.agent.participant import may_start

        current = self.agents.get(tree.id)
        spec = AgentSpec() if current is None else AgentSpec(name=current.name)
        try:
            may_start(self.host.app.ws, self.host.actor(doc).participant, spec)
        except LoomError as err:
            return Result.from_error(err)
        return None

    async def _run_turn(self, doc: OpenDoc, tree: Tree, turn_input: Any) -> dict[str, Any]:
        from loom.llm.base import ModelError

        try:
            agent = self.agent(tree)
        except ModelError as err:
            return {"ok": False, "message": err.render()}
        except LoomError as err:  # may_start's refusal, or a role that may not make it
            text = Result.from_error(err).text
            return {"ok": False, "message": text, "error": text}
        loop = asyncio.get_running_loop()

        def on_event(ev: Any) -> None:  # may come from a worker thread
            if ev.kind in ("result", "done"):
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self.host.status, doc)

        task = loop.create_task(agent.run_turn(turn_input, on_event))
        await asyncio.sleep(0)  # the turn has started: the agent is busy
        self.host.status(doc)
        try:
            record = await asyncio.shield(task)
        except LoomError as err:  # refused before the turn (check_starter): nothing written
            text = Result.from_error(err).text
            return {"ok": False, "message": text, "error": text}
        finally:
            self.host.status(doc)
            with contextlib.suppress(Exception):
                await self.sync().catch_up()
            self.host.refresh_decorations()
        if record.stop_reason == "error":
            return {"ok": False, "message": record.error or "✗ the turn failed",
                    "data": {"turn": record.id}}
        text = record.message.strip() or ("(stopped)" if record.stop_reason == "stopped"
                                          else "(no message)")
        return {"ok": True, "message": text, "data": {"turn": record.id,
                                                      "stopReason": record.stop_reason}}

    def stop(self, tree_id: str | None = None) -> bool:
        stopped = False
        for tid, agent in self.agents.items():
            if agent.busy and (tree_id is None or tid == tree_id):
                agent.stop()
                stopped = True
        return stopped
