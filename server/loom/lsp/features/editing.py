"""Typed text into the tree: the editor's changes, buffer commits, document saves, keeping
uncommitted text.

Everything the human typed reaches the store only as a ``commit`` (or ``save``) command
through the executor, with the editor session's participant: the same permission check,
branch locks and trace as any arrow command. Starting to type in another node commits the
one edited before; a save runs the typed command lines, then commits. A commit refused
because another participant is generating on the branch keeps the text pending and is
retried when the lock goes."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.lexicon import prose_before_commands
from loom.commands.results import Result
from loom.lsp.args import answer
from loom.lsp.buffer import Segment
from loom.lsp.documents import OpenDoc, copy_segments
from loom.lsp.features.moves import Moves
from loom.lsp.features.outage import HINT
from loom.lsp.host import Host
from loom.lsp.overwrite import Choice, Overwrite, branch_point, measure
from loom.lsp.positions import TextDoc
from loom.render import formats as f
from loom.render.text import plural
from loom.store.backend import UNREACHABLE, unreachable
from loom.store.schema import BufferState

if TYPE_CHECKING:
    from loom.lsp.wiring import Later

log = logging.getLogger(__name__)

#: Uncommitted text reaches the database at once when typing starts, then at most this
#: long after each keystroke while it goes on. A kill -9 loses at most this much of the
#: latest typing, plus the time the keys took to reach the server: the goal is 300 ms, and
#: on a loaded machine a key can wait 100 ms to be read (``tests/lsp/test_kill_typing.py``
#: measures it). A write is one small SQLite transaction (under a millisecond).
PERSIST_EVERY_S = 0.1


def commit_command(doc: OpenDoc) -> syntax.Commit | None:
    """What committing the buffer would do, as a command (None: not a buffer). Command
    lines in the working text are not part of it (they run, or stay, as commands)."""
    if doc.kind != "path" or doc.tree is None or doc.view.tip is None:
        return None
    session = doc.session
    versions = tuple(
        syntax.VersionEdit(node=session.segments[i].node or "", content=session.segment_text(i))
        for i in session.pending() if session.segments[i].node)
    body = prose_before_commands(session.working_text)
    if doc.tree.mode == "dialogue":  # a new message: blank lines before it separate blocks
        body = body.strip("\n")
    return syntax.Commit(versions=versions, text=body if body.strip() else None,
                      after=doc.view.tip.id)


class _CommandLines(Protocol):
    async def run_all(self, doc: OpenDoc, background: bool = False) -> list[Result]: ...


class _Scoring(Protocol):
    def written(self, doc: OpenDoc) -> None: ...


class Editing:
    def __init__(self, host: Host, moves: Moves, command_lines: Later[_CommandLines],
                 scoring: Later[_Scoring]) -> None:
        self.host = host
        self.moves = moves  # an undo of a move of the view
        self.command_lines = command_lines  # the typed command lines a save runs
        self.scoring = scoring  # told of each commit that wrote text (the writer's words)
        self.blocked: dict[str, Result] = {}  # uri → the CONFLICT its commit waits out
        #: uri → (text, version) of an open the database could not answer (made when back)
        self.unopened: dict[str, tuple[str, int]] = {}
        #: the buffers typed into while the database was away (what was typed could not be
        #: kept in it): committed by themselves when it is back, as a save would have
        self.typed_away: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._last_persist: dict[str, float] = {}

    # ── the editor's changes ──
    def _into_unopened(self, params: lsp.DidChangeTextDocumentParams) -> None:
        """Typing into a document whose open met an unreachable database: kept in the
        text it will be opened with when the database is back."""
        uri = params.text_document.uri
        if uri not in self.unopened:
            return
        text, _version = self.unopened[uri]
        self.typed_away.add(uri)
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                doc = TextDoc(text, self.host.docs.encoding)
                start = doc.offset_at(change.range.start.line, change.range.start.character)
                end = doc.offset_at(change.range.end.line, change.range.end.character)
                text = text[:start] + change.text + text[end:]
            else:
                text = change.text
        self.unopened[uri] = (text, params.text_document.version)

    def changed(self, params: lsp.DidChangeTextDocumentParams) -> None:
        """``didChange``: the text into the buffer session; typing that starts in another
        node commits the one edited before (SPEC-NOTES); the uncommitted text is kept."""
        host = self.host
        doc = host.docs.open.get(params.text_document.uri)
        if doc is None:
            self._into_unopened(params)
            return
        doc.client_version = params.text_document.version
        in_flight = len(doc.targets)
        touched = host.docs.apply_changes(doc, params.content_changes)
        if self.moves.undone(doc):
            return  # an undo (or redo) of a move of the view: the view goes back, no typing
        pending = doc.session.pending()
        if pending and any(i not in touched for i in pending) and touched and not doc.targets:
            # started editing another node: commit the one edited before (SPEC-NOTES)
            host.spawn(self.commit_and_show(doc), "commit on editing another node")
        if len(doc.targets) < in_flight:
            self.persist(doc)  # one of our edits landed: a structural change, kept now
        else:
            self.touched(doc)
        if in_flight and not doc.targets:  # the client now shows what the tree holds
            host.notify_clean(doc)

    # ── commits ──
    def commit(self, doc: OpenDoc, confirm: Choice | None = None) -> Result:
        """Commit the buffer now: pending node edits become versions, the working text a
        node. Runs on the event loop, so the text cannot move under it.

        A commit that would take away most of the path's text (``overwrite.py``) is not
        made until the human chooses (``confirm``): ``branch`` keeps those nodes and makes
        the text a branch after the last node left whole, ``replace`` makes the versions.
        Without a choice the answer is a ``CONFLICT`` whose ``confirm`` data holds the
        question, and nothing is written."""
        if doc.out_of_step:
            return Result.failure("CONFLICT", "the editor's copy of this path is not the "
                                  "tree's text yet", "wait a moment for Loom's text to "
                                  "arrive in the editor, or reopen the document")
        cmd = commit_command(doc)
        if cmd is None:
            return Result.success("✓ nothing to commit", created=[])
        if not cmd.versions and cmd.text is None:
            self.blocked.pop(doc.uri, None)
            return Result.success("✓ nothing to commit", created=[])
        if cmd.versions and confirm != "replace":
            over = measure(doc.session)
            if confirm == "branch" or over.drastic:
                if confirm == "branch" and over.can_branch:
                    return self._commit_branch(doc, over)
                self.persist(doc)
                return self._question(doc, over)
        result = self.host.execute_now(cmd, self.host.actor(doc))
        if not result.ok:
            if result.data.get("unreachable"):
                # said as the database lost, not "a bug in Loom": the text waits for a
                # second save the writer must be told to make
                self.blocked[doc.uri] = result
                self.host.database_lost()
                return Result.failure("CONFLICT", f"{UNREACHABLE}; your text is kept in the "
                                      "editor and will be committed when it is back", HINT)
            if result.code == "CONFLICT":
                self.blocked[doc.uri] = result
                self.host.status(doc, f"{result.message}: your text is kept and will be "
                                      "committed when it yields")
            self.persist(doc)
            return result
        self.blocked.pop(doc.uri, None)
        self._apply(doc, cmd, result)
        return result

    def _question(self, doc: OpenDoc, over: Overwrite) -> Result:
        """The answer that asks before a commit takes away most of the path."""
        ws = self.host.app.ws
        point = branch_point(doc.session, over.kept)
        after = ws.find_node(point[0]) if point else None
        choices = []
        if after is not None:
            choices.append({"choice": "branch", "title": "Save as a New Branch"})
        choices.append({"choice": "replace", "title": "Replace Their Text"})
        what = over.describe()
        question = what[0].upper() + what[1:] + ". " + (
            f"Keep those nodes and save your text as a new branch after [{after.label}], "
            "or replace their text?" if after is not None else "Replace their text?")
        result = Result.failure(
            "CONFLICT", f"{what}; nothing was committed",
            "undo brings the text back; or save again and choose "
            + ("a new branch (the nodes stay as they are) or " if after is not None else "")
            + "replacing their text")
        result.data["confirm"] = {"question": question, "choices": choices,
                                  "nodes": over.nodes, "emptied": over.emptied,
                                  "removed": over.removed, "total": over.total}
        return result

    def _commit_branch(self, doc: OpenDoc, over: Overwrite) -> Result:
        """The buffer's text after the last node left whole becomes a new node there (a
        branch beside the nodes it would have rewritten, which stay as they are); with no
        text after it, the path ends at that node."""
        session, ws = doc.session, self.host.app.ws
        point = branch_point(session, over.kept)
        assert point is not None
        node_id, end = point
        after = ws.node(node_id)
        working = session.working_text
        text = session.text[end:session.committed_end] + prose_before_commands(working)
        actor = self.host.actor(doc)
        if text.strip():
            result = self.host.execute_now(
                syntax.Commit(text=text, after=node_id), actor)
        else:
            result = self.host.execute_now(syntax.Switch(node=node_id, tip=node_id), actor)
        if not result.ok:
            self.persist(doc)
            return result
        segments = copy_segments(session.segments)
        upto = next(i for i, s in enumerate(segments) if s.node == node_id)
        kept = segments[:upto + 1]
        kept[-1].end, kept[-1].dirty = end, False  # (typed after it: the branch's text)
        tip = after
        created = result.data.get("created", [])
        if text.strip() and created:
            tip = ws.node(created[-1])
            kept.append(Segment(tip.id, tip.label, False, end, end + len(tip.content),
                                tip.content))
        session.segments = kept
        doc.view.tip = tip
        self.blocked.pop(doc.uri, None)
        self.persist(doc)
        left = plural(over.nodes, "node")
        made = f"[{tip.label}]" if tip is not after else "nothing new"
        return Result.success(
            f"✓ saved as a new branch after [{after.label}]: {made} (the {left} "
            "you changed stay as they were; the sibling picker has them)",
            created=created, node=tip.id, text_committed=bool(created), branched=True)

    def _apply(self, doc: OpenDoc, cmd: syntax.Commit, result: Result) -> None:
        ws, session = self.host.app.ws, doc.session
        versions: dict[str, str] = result.data.get("versions", {})
        for original, version_id in versions.items():
            i = session.node_segment(original)
            version = ws.find_node(version_id)
            if i is None or version is None:
                continue
            session.mark_committed(i, version.id, version.label, version.content)
        tip = ws.find_node(result.data.get("node") or "")
        created = result.data.get("created", [])
        if result.data.get("text_committed") and created and doc.tree is not None:
            node = ws.find_node(created[-1])
            if node is not None and doc.tree.mode == "buffer":
                session.append_committed(node.id, node.label, False, node.content)
        if tip is not None:
            doc.view.tip = tip
        self.persist(doc)

    async def commit_and_show(self, doc: OpenDoc, confirm: Choice | None = None) -> Result:
        """Commit, then bring the client's text in step (re-render) and tell the status."""
        result = self.commit(doc, confirm)
        if (result.ok and doc.kind == "path" and doc.tree is not None
                and doc.view.tip is not None):
            text, segments = self.host.docs.rerender_target(doc)
            if text != self.host.docs.expected_text(doc) or result.data.get("created"):
                await self.host.send_edit(doc, text, segments)
            self.host.status(doc)
            self.announce(doc)
            if result.data.get("created"):
                self.scoring().written(doc)
        return result

    async def retry_blocked(self) -> list[str]:
        """Commits that waited (for another participant's lock, or for the database: a
        save it refused, or text typed while it was away): try again. The titles of the
        trees where text was committed."""
        committed: list[str] = []
        for uri in list(dict.fromkeys([*self.blocked, *self.typed_away])):
            self.typed_away.discard(uri)  # (refused again, it waits in ``blocked``)
            doc = self.host.docs.open.get(uri)
            if doc is None:
                self.blocked.pop(uri, None)
                continue
            result = await self.commit_and_show(doc)
            if result.ok and result.data.get("created"):
                committed.append(doc.tree.title if doc.tree else uri)
                self.host.refresh_decorations()
        return committed

    async def bring_in_step(self, doc: OpenDoc) -> None:
        """The editor opened the path with other text than the tree's: send it the
        rendering, and say so when the editor's own text is dropped."""
        sent = await self.host.send_edit(doc, doc.view.text, doc.view.segments)
        if not sent:
            self.host.show(Result.failure(
                "CONFLICT", f"the editor opened {doc.uri} with text that is not the tree's "
                "and did not take Loom's", "close and reopen the document; nothing you "
                "type in it is kept until then"))
        elif doc.discarded:
            self.host.show(Result.success(
                f"✓ opened {doc.uri} as the tree has it: the editor's copy differed "
                f"({len(doc.discarded):,} characters, not committed; undo shows them)"))

    def announce(self, doc: OpenDoc) -> None:
        """Tell the human what became of unsaved edits of nodes someone else versioned
        (re-applied onto their version, or kept as the human's own), once each."""
        notes, doc.rebased = doc.rebased, []
        if not notes:
            return
        lines = []
        for n in notes:
            head = f"[{n.mine}] was edited by {n.author} as [{n.theirs}]"
            lines.append(
                f"{head}: your unsaved edit is re-applied to it (save to commit it)"
                if n.merged else
                f"{head}, and your unsaved edit of it conflicts: it is kept as your own "
                f"version of [{n.mine}] (saving commits it beside [{n.theirs}])")
        self.host.show(Result.success(f.ok(*lines)))
        self.host.status(doc, "; ".join(lines))
        self.persist(doc)

    # ── saves ──
    async def save_text(self, uri: str, text: str, run_commands: bool,
                        confirm: Choice | None = None) -> dict[str, Any]:
        """A save from the editor (``loom/save``, or ``didSave``): the command lines the
        human typed run (once each), then the buffer is committed (a path) or the document
        saved (a doc), all through the executor. The answer is ``loom/save``'s; ``confirm``
        is the human's answer to a save that asked first (``data.confirm``)."""
        host = self.host
        doc = host.docs.ensure(uri)
        if doc.view.read_only:
            return answer(Result.failure("PERMISSION_DENIED", "this view is read-only"),
                          uri=uri)
        if text != doc.text:
            host.docs.replace_all(doc, text)
        messages: list[str] = []
        ok = True
        if host.settings.run_on_save and run_commands:
            # a `→ continue` among them runs on its own
            for res in await self.command_lines().run_all(doc, background=True):
                messages.append(res.text)
                ok = ok and res.ok
                if res.data.get("generating"):
                    # it commits the typed text itself, first, and streams in after this
                    # answer: the save returns now (an editor waits for it)
                    return {"ok": ok, "message": "\n".join(messages), "data": res.data,
                            "uri": uri, "text": host.docs.expected_text(doc)}
        if doc.kind == "doc":
            result = self.save(doc)
        else:
            result = await self.commit_and_show(doc, confirm)
        if not (messages and result.ok and result.text == "✓ nothing to commit"):
            messages.append(result.text)  # (after the commands' answers it is only noise)
        ok = ok and result.ok
        host.refresh_decorations()
        return {"ok": ok, "message": "\n".join(messages), "data": result.data, "uri": uri,
                "text": host.docs.expected_text(doc),
                **({} if ok else {"error": "\n".join(m for m in messages
                                                      if m.startswith("✗"))})}

    def save(self, doc: OpenDoc) -> Result:
        d = doc.view.doc
        if d is None:
            return Result.success("✓ nothing to save")
        result = self.host.execute_now(syntax.Save(doc=d.name, content=doc.text,
                                                expected=d.updated), self.host.actor(doc))
        if result.ok and result.data.get("updated") is not None:
            d.updated = result.data["updated"]
            d.content = doc.text
        return result

    # ── keeping uncommitted text ──
    def persist(self, doc: OpenDoc) -> None:
        """Keep the buffer's uncommitted text in the database now."""
        timer = self._timers.pop(doc.uri, None)
        if timer is not None:
            timer.cancel()
        self._last_persist[doc.uri] = time.monotonic()
        try:
            self.host.docs.persist(doc)
        except Exception as err:
            if unreachable(err):  # kept in the editor and the session meanwhile
                if doc.uri not in self.typed_away:  # (said once a buffer, not a key)
                    log.warning("could not keep the uncommitted text of %s: %s", doc.uri,
                                UNREACHABLE)
                self.typed_away.add(doc.uri)
                self.host.database_lost()
                return
            log.exception("could not keep the uncommitted text of %s", doc.uri)

    def touched(self, doc: OpenDoc) -> None:
        """The human typed: persist now if nothing was persisted for ``PERSIST_EVERY_S``,
        else when that much time has passed since the last write (a throttle, not a
        debounce: a restarting timer never fires while typing goes on)."""
        if doc.uri in self._timers:
            return  # a write is already due, and will take this keystroke with it
        last = self._last_persist.get(doc.uri, float("-inf"))
        wait = last + PERSIST_EVERY_S - time.monotonic()
        if wait <= 0:
            self.persist(doc)
            return
        self._timers[doc.uri] = asyncio.get_running_loop().call_later(wait, self.persist, doc)

    def forget(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._last_persist.pop(uri, None)
        self.blocked.pop(uri, None)
        self.typed_away.discard(uri)

    # ── another session's text, recovered ──
    async def recover(self, doc: OpenDoc) -> None:
        """Dead sessions' uncommitted text on this buffer, other than what was restored
        into it, becomes versions and nodes (never lost), and the human is told."""
        orphans: list[BufferState] = self.host.docs.orphans.pop(doc.uri, [])
        ws, docs = self.host.app.ws, self.host.docs
        saved: list[str] = []
        for state in orphans:
            versions = tuple(syntax.VersionEdit(node=p["node"], content=p["content"])
                             for p in state.pending or [] if ws.find_node(p["node"]))
            text = prose_before_commands(state.working or "")
            if versions or text.strip():
                cmd = syntax.Commit(versions=versions, text=text if text.strip() else None,
                                 after=state.tip if ws.find_node(state.tip) else None,
                                 move=False)
                result = self.host.execute_now(cmd, self.host.actor(doc))
                if not result.ok:
                    self.host.show(result)
                    continue
                saved += [ws.node(n).label for n in result.data.get("created", [])]
            ws.drop_buffer_state(state.uri, docs.participant, state.session)
        # the restored text is this session's now
        for state in ws.buffer_states(doc.uri, docs.participant):
            if state.session != docs.session and not ws.session_alive(state.session):
                ws.drop_buffer_state(state.uri, docs.participant, state.session)
        self.persist(doc)
        if saved:
            shown = " ".join(f"[{label}]" for label in saved)
            self.host.show(Result.success(
                f"✓ recovered unsaved text from another editor session as {shown}"))
            self.host.refresh_decorations()


def base_segments(doc: OpenDoc) -> list[Segment]:
    """A copy of the node ranges the client will have once our edits in flight land."""
    return copy_segments(doc.targets[-1].segments if doc.targets else doc.session.segments)
