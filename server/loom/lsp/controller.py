"""What the server does for the editor: commits, runs command lines, generates into the
buffer, cycles siblings, and keeps open documents in step with the tree."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from loom.commands import ast
from loom.commands.context import Actor
from loom.commands.executor import parse_line
from loom.commands.results import Result
from loom.errors import LoomError
from loom.lsp.buffer import Segment
from loom.lsp.features.refs import is_command_line
from loom.lsp.session import Documents, OpenDoc, copy_segments, minimal_edit
from loom.lsp.text import TextDoc
from loom.lsp.views import parse_uri, render
from loom.store.schema import Node, Tree

if TYPE_CHECKING:
    from loom.lsp.server import LoomServer

log = logging.getLogger(__name__)
STREAM_FLUSH_S = 0.08
PROVISIONAL = "…"


@dataclass
class Diag:
    line_text: str
    code: str
    message: str
    hint: str | None


@dataclass
class Generation:
    uri: str
    cancel: threading.Event = field(default_factory=threading.Event)
    streamed: list[str] = field(default_factory=list)


class Controller:
    def __init__(self, server: LoomServer) -> None:
        self.server = server
        self.diags: dict[str, list[Diag]] = {}
        self.generation: Generation | None = None
        self._seen_change = 0
        self._watch_task: asyncio.Task[None] | None = None
        self.agents: dict[str, Any] = {}  # tree id → its collaborator (loom.agent.Agent)
        self._asking: set[str] = set()  # trees with a collaborator turn under way

    @property
    def docs(self) -> Documents:
        return self.server.docs

    @property
    def app(self):  # type: ignore[no-untyped-def]
        return self.server.app

    # ── talking to the client ──
    def _caps(self) -> lsp.ClientCapabilities:
        return self.server.client_capabilities

    async def send_edit(self, doc: OpenDoc, text: str, segments: list[Segment]) -> bool:
        """Propose a server-side change of an open document and send its minimal edit."""
        base = self.docs.expected_text(doc)
        edit = self.docs.propose(doc, text, segments)
        if edit is None:
            return True
        start, end, new = edit
        base_doc = doc.session.doc if base is doc.session.text else TextDoc(base,
                                                                            self.docs.encoding)
        s_line, s_char = base_doc.position_at(start)
        e_line, e_char = base_doc.position_at(end)
        text_edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(s_line, s_char),
                                                 end=lsp.Position(e_line, e_char)),
                                 new_text=new)
        ws_caps = self._caps().workspace
        versioned = bool(ws_caps and ws_caps.workspace_edit and
                         ws_caps.workspace_edit.document_changes)
        if versioned:
            wedit = lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=doc.uri,
                                                                          version=None),
                edits=[text_edit])])
        else:
            wedit = lsp.WorkspaceEdit(changes={doc.uri: [text_edit]})
        try:
            result = await asyncio.shield(self.server.workspace_apply_edit_async(
                lsp.ApplyWorkspaceEditParams(edit=wedit, label="Loom")))
        except Exception as err:  # the client went away or does not do applyEdit
            log.warning("applyEdit failed: %s", err)
            doc.targets.clear()
            return False
        if not result.applied:
            log.warning("client refused an edit of %s: %s", doc.uri, result.failure_reason)
            doc.targets.clear()
            return False
        return True

    def notify_changed(self, uri: str) -> None:
        self.server.protocol.notify("loom/documentChanged", {"uri": uri})
        ws_caps = self._caps().workspace
        if ws_caps is not None and getattr(ws_caps, "text_document_content", None) is not None:
            with contextlib.suppress(Exception):
                self.server.workspace_text_document_content_refresh(
                    lsp.TextDocumentContentRefreshParams(uri=uri))

    def refresh_decorations(self) -> None:
        ws_caps = self._caps().workspace
        if ws_caps is None:
            return
        for cap, fn in ((ws_caps.code_lens, self.server.workspace_code_lens_refresh),
                        (ws_caps.semantic_tokens, self.server.workspace_semantic_tokens_refresh),
                        (ws_caps.inlay_hint, self.server.workspace_inlay_hint_refresh)):
            if cap is not None and getattr(cap, "refresh_support", False):
                with contextlib.suppress(Exception):
                    fn(None)

    def status(self, doc: OpenDoc, message: str | None = None) -> None:
        tip = doc.view.tip
        self.server.protocol.notify("loom/status", {
            "uri": doc.uri, "label": tip.label if tip else None,
            "node": tip.local_id if tip else None, "depth": tip.depth if tip else None,
            "generating": self.generation is not None, "message": message,
            "collaborator": self.collaborator_status(doc.tree)})

    def collaborator_status(self, tree: Tree | None) -> dict[str, Any] | None:
        """``{name, busy, node, depth}`` of the tree's collaborator, once it has one."""
        agent = self.agents.get(tree.id) if tree is not None else None
        if agent is None:
            return None
        node = depth = None
        with contextlib.suppress(Exception):
            at, _tip = self.app.ws.position(agent.participant, agent.tree)
            node, depth = at.local_id, at.depth
        return {"name": agent.name, "busy": agent.busy, "node": node, "depth": depth}

    def show(self, result: Result) -> None:
        kind = lsp.MessageType.Info if result.ok else lsp.MessageType.Error
        self.server.window_show_message(lsp.ShowMessageParams(type=kind, message=result.text))

    # ── diagnostics ──
    def publish(self, doc: OpenDoc) -> None:
        entries = self.diags.get(doc.uri, [])
        text_doc = doc.session.doc
        lines = {text_doc.line(i): i for i in range(text_doc.line_count)
                 if is_command_line(text_doc.line(i)) or text_doc.line(i) in
                 {d.line_text for d in entries}}
        kept, out = [], []
        for d in entries:
            line_no = lines.get(d.line_text)
            if line_no is None:
                continue
            kept.append(d)
            rng = lsp.Range(lsp.Position(line_no, 0),
                            lsp.Position(line_no, text_doc.position_at(
                                text_doc.line_start(line_no) + len(d.line_text))[1]))
            related = None
            if d.hint:
                related = [lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=doc.uri, range=rng), message=f"hint: {d.hint}")]
            out.append(lsp.Diagnostic(range=rng, message=f"✗ {d.code}: {d.message}",
                                      severity=lsp.DiagnosticSeverity.Error, code=d.code,
                                      source="loom", related_information=related))
        self.diags[doc.uri] = kept
        self.server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=doc.uri, diagnostics=out))

    def add_diag(self, doc: OpenDoc, line_text: str, result: Result) -> None:
        entries = [d for d in self.diags.get(doc.uri, []) if d.line_text != line_text]
        entries.append(Diag(line_text, result.code or "ERROR", result.message or result.text,
                            result.hint))
        self.diags[doc.uri] = entries
        self.publish(doc)

    # ── actions ──
    def actor(self, doc: OpenDoc) -> Actor:
        tree = doc.tree
        if tree is None:
            who = self.docs.participant
            tree_id = who.current_tree
            tree = Tree.get_or_none(Tree.id == tree_id) if tree_id else None
            if tree is None:
                first = self.app.ws.trees()
                if not first:
                    raise LoomError("NOT_FOUND", "there are no trees yet",
                                    "create one: loom new TITLE")
                tree = first[0][0]
        return Actor(self.docs.participant, tree)

    async def commit(self, doc: OpenDoc) -> list[str]:
        created = self.docs.commit(doc)
        if doc.kind == "path" and doc.tree is not None and doc.view.tip is not None:
            text, segments = self.docs.rerender_target(doc)
            if text != self.docs.expected_text(doc) or created:
                await self.send_edit(doc, text, segments)
            self.status(doc)
        return created

    async def save(self, uri: str, text: str, run_commands: bool = True) -> dict[str, Any]:
        doc = self.docs.ensure(uri)
        if doc.view.read_only:
            return {"ok": False, "message": "✗ this view is read-only", "uri": uri}
        if text != doc.text:
            self.docs.replace_all(doc, text)
        messages: list[str] = []
        ok = True
        if self.server.settings.run_on_save and run_commands:
            for res in await self.run_all(doc):
                messages.append(res.text)
                ok = ok and res.ok
        created = await self.commit(doc)
        if doc.kind == "doc":
            messages.append(f'✓ saved doc:"{doc.view.doc.name if doc.view.doc else ""}"')
        elif created:
            messages.append(f"✓ committed {len(created)} node{'s' if len(created) != 1 else ''}")
        else:
            messages.append("✓ nothing to commit")
        self.refresh_decorations()
        return {"ok": ok, "message": "\n".join(messages), "uri": uri,
                "text": self.docs.expected_text(doc)}

    async def run_all(self, doc: OpenDoc) -> list[Result]:
        results = []
        while True:
            text_doc = TextDoc(self.docs.expected_text(doc), self.docs.encoding)
            failed = {d.line_text for d in self.diags.get(doc.uri, [])}
            line_no = next((i for i in range(text_doc.line_count)
                            if is_command_line(text_doc.line(i)) and
                            text_doc.line(i) not in failed), None)
            if line_no is None:
                return results
            res = await self.run_line(doc.uri, line_no)
            results.append(res)
            if res.ok is False and not self.diags.get(doc.uri):
                return results

    async def run_line(self, uri: str, line_no: int) -> Result:
        doc = self.docs.ensure(uri)
        text_doc = TextDoc(self.docs.expected_text(doc), self.docs.encoding)
        line = text_doc.line(line_no)
        if not is_command_line(line):
            return Result.failure("INVALID_SYNTAX", f"line {line_no + 1} is not a → command",
                                  "put the command on its own line, starting with →")
        cmd = parse_line(line)
        if isinstance(cmd, ast.Continue) and doc.kind == "path" and (
                cmd.from_ is None or self._is_tip(doc, cmd.from_)):
            await self._remove_line(doc, line_no)
            return await self.continue_(uri, cmd.n, cmd.tokens, cmd.temperature)
        if not isinstance(cmd, ast.ParseError) and cmd.verb in ("switch", "edit", "respond",
                                                                  "continue"):
            await self.commit(doc)
        try:
            actor = self.actor(doc)
        except LoomError as err:
            result = Result.from_error(err)
            self.add_diag(doc, line, result)
            return result
        result = await asyncio.to_thread(self.app.executor.execute, line, actor)
        if not result.ok:
            self.add_diag(doc, line, result)
            return result
        await self._remove_line(doc, line_no)
        self.show(result)
        if result.command.startswith("→ switch") and doc.kind == "path":
            await self._follow_position(doc, actor)
        elif (doc.kind == "path" and doc.tree is not None and doc.view.tip is not None
              and Node.get_or_none(Node.id == doc.view.tip.id)):
            text, segments = self.docs.rerender_target(doc)
            await self.send_edit(doc, text, segments)
        self.refresh_decorations()
        self.notify_trace()
        return result

    def _is_tip(self, doc: OpenDoc, ref: str) -> bool:
        if doc.tree is None or doc.view.tip is None:
            return False
        try:
            return self.app.ws.resolve(doc.tree, ref).id == doc.view.tip.id
        except LoomError:
            return False

    async def _remove_line(self, doc: OpenDoc, line_no: int) -> None:
        base = self.docs.expected_text(doc)
        text_doc = TextDoc(base, self.docs.encoding)
        start = text_doc.line_start(line_no)
        end = start + len(text_doc.line(line_no))
        if end < len(base):
            end += 1  # and its newline
        elif start > 0 and base[start - 1] == "\n":
            start -= 1
        segments = self._segments_after(doc, start, end, "")
        await self.send_edit(doc, base[:start] + base[end:], segments)

    def _segments_after(self, doc: OpenDoc, start: int, end: int, new: str) -> list[Segment]:
        base_segments = doc.targets[-1].segments if doc.targets else doc.session.segments
        out = copy_segments(base_segments)
        delta = len(new) - (end - start)
        for s in out:
            if s.start >= end:
                s.start += delta
                s.end += delta
            elif s.end > start:
                s.end = max(s.start, min(s.end, start) + max(0, s.end - end))
        return out

    async def _follow_position(self, doc: OpenDoc, actor: Actor) -> None:
        if doc.tree is None or actor.tree.id != doc.tree.id:
            return
        _node, tip = self.app.ws.position(actor.participant, actor.tree)
        doc.view.tip = tip
        text, segments = self.docs.rerender_target(doc)
        await self.send_edit(doc, text, segments)

    def notify_trace(self) -> None:
        uri = f"loom://trace/{self.docs.participant.name}"
        if uri in self.docs.open:
            doc = self.docs.open[uri]
            from loom.lsp.views import trace_text

            doc.session.doc.replace(0, len(doc.text), trace_text(self.app.ws,
                                                                 self.docs.participant))
        self.notify_changed(uri)

    # ── generation ──
    async def continue_(self, uri: str, n: int | None = None, tokens: int | None = None,
                        temperature: float | None = None) -> Result:
        doc = self.docs.ensure(uri)
        if doc.kind != "path" or doc.tree is None:
            return Result.failure("INVALID_SYNTAX", "continue works in a path document",
                                  "open loom://path/TREE/NODE")
        if self.generation is not None:
            return Result.failure("CONFLICT", "a generation is already running",
                                  "wait for it, or cancel it")
        await self.commit(doc)
        tip = doc.view.tip
        assert tip is not None
        gen = Generation(uri)
        self.generation = gen
        n = n or self.server.settings.default_n
        tokens = tokens or self.server.settings.default_tokens
        line = f"→ continue from {tip.local_id} n:{n} tokens:{tokens}" + (
            f" temperature:{temperature}" if temperature is not None else "")
        loop = asyncio.get_running_loop()
        start = self._committed_end(doc)
        provisional = Segment(None, PROVISIONAL, True, start, start, "", editable=False)
        base_segments = copy_segments(doc.targets[-1].segments if doc.targets
                                      else doc.session.segments)
        base_text = self.docs.expected_text(doc)

        def on_delta(index: int, piece: str) -> None:
            if index == 0 and not gen.cancel.is_set():
                loop.call_soon_threadsafe(gen.streamed.append, piece)

        doc.generating = True
        self.status(doc, "generating…")
        progress = await self._progress_begin(f"Loom: generating {n} from [{tip.label}]")
        flusher = asyncio.create_task(self._flush_stream(doc, gen, base_text, base_segments,
                                                         provisional, progress))
        actor = Actor(self.docs.participant, doc.tree)
        try:
            result = await asyncio.to_thread(self.app.executor.execute, line, actor, on_delta,
                                             gen.cancel)
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            doc.generating = False
            self.generation = None
            await self._progress_end(progress)
        if not result.ok:
            await self.send_edit(doc, base_text, base_segments)
            end_line = TextDoc(base_text).line_count - 1
            self.add_diag(doc, TextDoc(base_text).line(end_line), result)
            self.status(doc, result.text)
            return result
        created = result.data.get("created", [])
        first = Node.get_by_id(created[0])
        seg = Segment(first.id, first.label, True, start, start + len(first.content),
                      first.content)
        tail = base_text[start:]
        segments = [*copy_segments(base_segments), seg]
        await self.send_edit(doc, base_text[:start] + first.content + tail, segments)
        doc.view.tip = first
        self.app.ws.set_position(self.docs.participant, doc.tree, first, first)
        self.docs.persist(doc)
        self.status(doc)
        self.refresh_decorations()
        return result

    def _committed_end(self, doc: OpenDoc) -> int:
        segs = doc.targets[-1].segments if doc.targets else doc.session.segments
        return segs[-1].end if segs else 0

    async def _flush_stream(self, doc: OpenDoc, gen: Generation, base_text: str,
                            base_segments: list[Segment], provisional: Segment,
                            progress: str | None) -> None:
        shown = ""
        while True:
            await asyncio.sleep(STREAM_FLUSH_S)
            if progress and self._progress_cancelled(progress):
                gen.cancel.set()
            text = "".join(gen.streamed)
            if text == shown:
                continue
            shown = text
            start = provisional.start
            segs = [*copy_segments(base_segments),
                    Segment(None, PROVISIONAL, True, start, start + len(text), "", False)]
            await self.send_edit(doc, base_text[:start] + text + base_text[start:], segs)

    async def _progress_begin(self, title: str) -> str | None:
        window = self._caps().window
        if not (window and window.work_done_progress):
            return None
        token = f"loom-generate-{id(self)}-{asyncio.get_running_loop().time()}"
        try:
            await asyncio.shield(self.server.work_done_progress.create_async(token))
            self.server.work_done_progress.begin(
                token, lsp.WorkDoneProgressBegin(title=title, cancellable=True))
        except Exception:
            return None
        return token

    def _progress_cancelled(self, token: str) -> bool:
        tokens = getattr(self.server.work_done_progress, "tokens", {})
        fut = tokens.get(token)
        return bool(fut is not None and fut.cancelled())

    async def _progress_end(self, token: str | None) -> None:
        if token is None:
            return
        with contextlib.suppress(Exception):
            self.server.work_done_progress.end(token, lsp.WorkDoneProgressEnd())

    def cancel(self) -> bool:
        if self.generation is None:
            return False
        self.generation.cancel.set()
        return True

    # ── the collaborator ──
    def collaborator(self, tree: Tree) -> Any:
        """The tree's collaborator, made (and its participant created) on first use."""
        agent = self.agents.get(tree.id)
        if agent is None:
            from loom.agent import Agent, AgentSpec

            settings = self.server.settings
            agent = Agent(self.app.ws, self.app.executor, tree, spec=AgentSpec(),
                          approve=self._approve, autonomous=settings.collaborator_autonomous,
                          settle_s=settings.collaborator_settle_s)
            self.agents[tree.id] = agent
        return agent

    async def _approve(self, command: str) -> bool:
        """Approval mode: the human says yes or no to each write, in the editor."""
        if not self.server.settings.collaborator_approval:
            return True
        try:
            answer = await asyncio.shield(self.server.window_show_message_request_async(
                lsp.ShowMessageRequestParams(
                    type=lsp.MessageType.Info,
                    message=f"The collaborator wants to run: {command}",
                    actions=[lsp.MessageActionItem(title="Allow"),
                             lsp.MessageActionItem(title="Deny")])))
        except Exception as err:  # no answer is a no
            log.info("approval request failed: %s", err)
            return False
        return answer is not None and answer.title == "Allow"

    async def collaborator_tick(self) -> None:
        """Annotations addressed to the collaborator, and (opt-in) autonomous turns, in the
        trees the human has open."""
        settings = self.server.settings
        if not (settings.collaborator_triggers or settings.collaborator_autonomous):
            return
        open_trees: dict[str, OpenDoc] = {}
        for doc in self.docs.open.values():
            if doc.kind == "path" and doc.tree is not None:
                open_trees.setdefault(doc.tree.id, doc)
        for tree_id, doc in open_trees.items():
            if tree_id in self._asking:
                continue
            try:
                new = tree_id not in self.agents
                agent = self.collaborator(doc.tree)
                if new:  # what the human did since opening the tree counts, not just from now
                    agent.triggers.cursor = min(agent.triggers.cursor, doc.opened_seq)
            except Exception as err:  # no collaborator model: nothing to trigger, ever
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
                asyncio.get_running_loop().create_task(self._triggered(doc, inputs[0]))

    async def _triggered(self, doc: OpenDoc, turn_input: Any) -> None:
        assert doc.tree is not None
        try:
            result = await self._run_turn(doc, doc.tree, turn_input)
            if result.get("message"):
                self.server.window_show_message(lsp.ShowMessageParams(
                    type=lsp.MessageType.Info, message=f"Collaborator: {result['message']}"))
        except Exception:
            log.exception("a triggered collaborator turn failed")
        finally:
            self._asking.discard(doc.tree.id)

    async def ask_collaborator(self, uri: str, message: str | None) -> dict[str, Any]:
        """One collaborator turn for the document's tree: ``{ok, message, data: {turn}}``."""
        doc = self.docs.ensure(uri)
        tree = doc.tree or self.actor(doc).tree
        current = self.agents.get(tree.id)
        if tree.id in self._asking or (current is not None and current.busy):
            busy = Result.failure("CONFLICT", "the collaborator is busy with a turn in "
                                  f'"{tree.title}"', "wait for it, or stop it "
                                  "(loom.stopCollaborator)")
            return {"ok": False, "message": busy.text}
        self._asking.add(tree.id)
        try:
            return await self._ask(doc, tree, message)
        finally:
            self._asking.discard(tree.id)

    async def _ask(self, doc: OpenDoc, tree: Tree, message: str | None) -> dict[str, Any]:
        from loom.agent import ask

        if doc.kind == "path" and not doc.view.read_only:
            await self.commit(doc)
        return await self._run_turn(doc, tree, ask(message))

    async def _run_turn(self, doc: OpenDoc, tree: Tree, turn_input: Any) -> dict[str, Any]:
        from loom.llm.base import ModelError

        try:
            agent = self.collaborator(tree)
        except ModelError as err:
            return {"ok": False, "message": err.render()}
        loop = asyncio.get_running_loop()

        def on_event(ev: Any) -> None:  # may come from a worker thread
            if ev.kind in ("result", "done"):
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self.status, doc)

        task = loop.create_task(agent.run_turn(turn_input, on_event))
        await asyncio.sleep(0)  # the turn has started: the agent is busy
        self.status(doc)
        try:
            record = await asyncio.shield(task)
        finally:
            self.status(doc)
            with contextlib.suppress(Exception):
                await self.catch_up()
            self.refresh_decorations()
        if record.stop_reason == "error":
            return {"ok": False, "message": record.error or "✗ the turn failed",
                    "data": {"turn": record.id}}
        text = record.message.strip() or ("(stopped)" if record.stop_reason == "stopped"
                                          else "(no message)")
        return {"ok": True, "message": text, "data": {"turn": record.id,
                                                      "stopReason": record.stop_reason}}

    def stop_collaborator(self, tree_id: str | None = None) -> bool:
        stopped = False
        for tid, agent in self.agents.items():
            if agent.busy and (tree_id is None or tid == tree_id):
                agent.stop()
                stopped = True
        return stopped

    # ── structure ──
    async def cycle(self, uri: str, node_id: str, delta: int) -> Result:
        doc = self.docs.ensure(uri)
        await self.commit(doc)
        ws = self.app.ws
        node = self._node(doc, node_id)
        if node.parent is None:
            return Result.failure("NOT_FOUND", "the root has no siblings")
        siblings = ws.children(ws.node(node.parent))
        ids = [s.id for s in siblings]
        here = node.id if node.id in ids else node.version_of
        if here not in ids or len(ids) < 2:
            return Result.failure("NOT_FOUND", f"[{node.label}] has no siblings",
                                  "→ continue to make some")
        target = siblings[(ids.index(here) + delta) % len(ids)]
        doc.view.tip = ws.descend(target)
        text, segments = self.docs.rerender_target(doc)
        await self.send_edit(doc, text, segments)
        ws.set_position(self.docs.participant, doc.tree, target, doc.view.tip)
        self.docs.persist(doc)
        self.status(doc)
        self.refresh_decorations()
        k = ids.index(target.id) + 1
        return Result.success(f"✓ switched to [{target.label}] ({k}/{len(ids)})",
                              node=target.id)

    async def branch(self, uri: str, node_id: str) -> Result:
        doc = self.docs.ensure(uri)
        await self.commit(doc)
        node = self._node(doc, node_id)
        doc.view.tip = node
        text, segments = self.docs.rerender_target(doc)
        await self.send_edit(doc, text, segments)
        self.app.ws.set_position(self.docs.participant, doc.tree, node, node)
        self.docs.persist(doc)
        self.refresh_decorations()
        return Result.success(f"✓ branching from [{node.label}]: type to continue", node=node.id)

    async def annotate(self, uri: str, node_id: str, text: str | None) -> Result:
        doc = self.docs.ensure(uri)
        node = self._node(doc, node_id)
        if text:
            cmd = ast.Annotate(node=node.local_id, content=text)
            result = await asyncio.to_thread(self.app.executor.execute, cmd, self.actor(doc))
            self.show(result)
            self.refresh_decorations()
            return result
        base = self.docs.expected_text(doc)
        sep = "" if not base or base.endswith("\n") else "\n"
        line = f'→ annotate {node.local_id} ""'
        segments = copy_segments(doc.targets[-1].segments if doc.targets
                                 else doc.session.segments)
        await self.send_edit(doc, base + sep + line, segments)
        end = TextDoc(base + sep + line, self.docs.encoding)
        pos = end.position_at(len(base + sep + line) - 1)
        with contextlib.suppress(Exception):
            await asyncio.shield(self.server.window_show_document_async(lsp.ShowDocumentParams(
                uri=uri, take_focus=True, selection=lsp.Range(lsp.Position(*pos),
                                                              lsp.Position(*pos)))))
        return Result.success("✓ type the annotation between the quotes, then run the line")

    def _node(self, doc: OpenDoc, ref: str) -> Node:
        node = Node.get_or_none(Node.id == ref)
        if node is None and doc.tree is not None:
            node = self.app.ws.resolve(doc.tree, ref)
        if node is None:
            raise LoomError("NOT_FOUND", f"node [{ref}] does not exist")
        return node

    # ── keeping documents in step with the tree ──
    def start_watching(self) -> None:
        self._seen_change = self.app.ws.last_change()
        self._watch_task = asyncio.get_event_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.server.settings.watch_interval_s)
            try:
                await self.catch_up()
            except Exception:
                log.exception("catching up with the change log failed")
            try:
                await self.collaborator_tick()
            except Exception:
                log.exception("the collaborator's triggers failed")

    async def catch_up(self) -> None:
        last = self.app.ws.last_change()
        if last <= self._seen_change:
            return
        changes = self.app.ws.changes_since(self._seen_change)
        self._seen_change = last
        trees = {c.tree for c in changes if c.tree}
        docs_changed = any(c.kind.startswith("document.") for c in changes)
        turn_trees = {c.tree for c in changes if c.kind == "agent.turn" and c.tree}
        for doc in list(self.docs.open.values()):
            if doc.generating:
                continue
            if doc.kind == "path" and doc.tree is not None and doc.tree.id in trees:
                if doc.view.tip is None or Node.get_or_none(Node.id == doc.view.tip.id) is None:
                    continue
                text, segments = self.docs.rerender_target(doc)
                if text != self.docs.expected_text(doc):
                    await self.send_edit(doc, text, segments)
                self.notify_changed(doc.uri)
            elif (doc.kind in ("tree", "trace") or (doc.kind == "doc" and docs_changed)
                  or (doc.kind == "conversation" and parse_uri(doc.uri).tree in turn_trees)):
                self._refresh_readonly(doc)
        if trees:
            self.refresh_decorations()

    def _refresh_readonly(self, doc: OpenDoc) -> None:
        try:
            text = render(self.app.ws, doc.uri, self.docs.participant).text
        except LoomError:
            return
        if doc.kind == "doc":
            if doc.session.text == doc.view.text and text != doc.text:
                edit = minimal_edit(doc.text, text)
                if edit:
                    asyncio.get_event_loop().create_task(self.send_edit(doc, text, []))
            return
        if text != doc.text:
            doc.session.doc.replace(0, len(doc.text), text)
            doc.view.text = text
            self.notify_changed(doc.uri)
