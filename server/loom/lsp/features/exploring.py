"""Explorations this language server's process runs (``→ explore`` typed in a buffer), shown
as LSP work-done progress the editor can cancel: ``Loom: exploring from [a7x2]``, a report
per step (``12 nodes · 9 scored · 3 pruned · 4,100/20,000 tokens``), the summary at the
end. The editor's cancel (``window/workDoneProgress/cancel``), and ``loom.cancel`` when no
generation runs (Neovim's ``:Loom cancel``: its client offers no cancel for progress), run
``→ explore end`` through the executor as the participant who started the exploration.

VS Code's client shows work-done progress in the status bar, where it has no cancel. Its
extension declares ``experimental.loomExplorationProgress`` and is sent ``loom/exploring``
notifications instead (``{tree, token, kind: begin|report|end, title, message}``); it shows
them as a notification with a Cancel button that runs ``loom.stopExploring``.

``loom.explore`` starts one from the node at the cursor with ``→ explore``'s options as
typed (the editors' "explore from here").

The exploration reports from its own thread (``Explorations.add_listener``); each event
hops onto the server's loop, where everything here runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.context import Actor, ExploreSummary
from loom.commands.results import Result
from loom.lsp.host import Host
from loom.render.text import plural, thousands

if TYPE_CHECKING:  # the agent is imported when the first exploration starts
    from loom.agent.explore.search import ExploreEvent
    from loom.lsp.features.editing import Editing

log = logging.getLogger(__name__)


@dataclass
class Shown:
    """One exploration, as the editor is shown it."""

    tree: str
    label: str  # the node it started from ([a7x2])
    starter: str | None  # who started it (a participant id)
    token: str | None = None
    #: the progress has begun (events before that wait in ``pending``)
    begun: bool = False
    pending: list[ExploreEvent] = field(default_factory=list)
    ended: bool = False
    stopping: bool = False
    #: shown with ``loom/exploring`` notifications (the editor asked), not work-done progress
    notified: bool = False


def figures(s: ExploreSummary) -> str:
    """``12 nodes · 9 scored · 3 pruned · 4,100/20,000 tokens``."""
    return (f"{plural(s.made, 'node')} · {s.scored} scored · {s.pruned} pruned · "
            f"{thousands(s.spent)}/{thousands(s.budget)} tokens")


class Exploring:
    """The explorations of this process as work-done progress with cancel."""

    def __init__(self, host: Host, progress: Any, editing: Editing) -> None:
        self.host = host
        self.progress = progress  # pygls' work-done progress helper
        self.editing = editing  # to commit what is typed before exploring from it
        self.shown: dict[str, Shown] = {}  # by tree id
        self.loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> None:
        """Listen to this process's explorations (on the loop, at the session's start)."""
        self.loop = asyncio.get_event_loop()
        self.host.app.on_explore(self._from_thread)

    def _from_thread(self, tree: str, event: ExploreEvent) -> None:
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.on_event, tree, event)

    # ── on the loop ──
    def on_event(self, tree: str, event: ExploreEvent) -> None:
        if event.kind == "started":
            label = str(event.data["summary"].source)
            shown = Shown(tree, label, event.data.get("starter"))
            self.shown[tree] = shown
            self.host.spawn(self._begin(shown), "exploration progress")
            return
        shown = self.shown.get(tree)
        if shown is None:
            return
        if not shown.begun:
            shown.pending.append(event)
            return
        self._show(shown, event)

    def _show(self, shown: Shown, event: ExploreEvent) -> None:
        if event.kind == "done":
            self._end(shown, event.text)
            summary = event.data.get("summary")
            # a stop asked in this process says its own result; any other end is said as a
            # message too (VS Code's client drops a progress's end message)
            here = (isinstance(summary, ExploreSummary) and summary.ended == "stopped"
                    and event.data.get("stopped_by") is None)
            if not (shown.stopping or here):
                self.host.show(Result.success(f"✓ {event.text}"))
            return
        summary = event.data.get("summary")
        message = figures(summary) if isinstance(summary, ExploreSummary) else event.text
        if event.kind in ("waiting", "failed"):
            message += f" · {event.text}"
        if shown.stopping:
            message = "stopping… · " + message
        self._report(shown, message)

    async def _begin(self, shown: Shown) -> None:
        """Create the progress (when the editor takes it), begin it, show what happened
        meanwhile."""
        window = self.host.caps.window
        if self._notifies():
            shown.token = f"loom-explore-{shown.tree}-{asyncio.get_running_loop().time()}"
            shown.notified = True
            self._notify(shown, "begin", "starting…")
        elif window and window.work_done_progress:
            token = f"loom-explore-{shown.tree}-{asyncio.get_running_loop().time()}"
            try:
                await asyncio.wait_for(asyncio.shield(self.progress.create_async(token)),
                                       self.host.settings.client_timeout_s)
                self.progress.begin(token, lsp.WorkDoneProgressBegin(
                    title=f"Loom: exploring from [{shown.label}]", cancellable=True,
                    message="starting…"))
                shown.token = token
                cancelled: Future[Any] | None = self.progress.tokens.get(token)
                if cancelled is not None:
                    cancelled.add_done_callback(lambda fut: self._cancelled_from_editor(
                        shown, fut))
            except Exception:  # no progress in this editor: the exploration runs on
                log.info("the editor did not take the exploration's progress")
        shown.begun = True
        for event in shown.pending:
            self._show(shown, event)
        shown.pending.clear()

    def _notifies(self) -> bool:
        """Whether the editor asked for ``loom/exploring`` (VS Code's extension does)."""
        experimental = self.host.caps.experimental
        return isinstance(experimental, dict) and bool(
            experimental.get("loomExplorationProgress"))

    def _notify(self, shown: Shown, kind: str, message: str) -> None:
        with contextlib.suppress(Exception):
            self.host.notify_exploring({
                "tree": shown.tree, "token": shown.token, "kind": kind,
                "title": f"Loom: exploring from [{shown.label}]", "message": message})

    def _cancelled_from_editor(self, shown: Shown, fut: Future[Any]) -> None:
        if not fut.cancelled() or self.loop is None:
            return
        self.loop.call_soon_threadsafe(self.stop, shown)

    def _report(self, shown: Shown, message: str) -> None:
        if shown.token is None or shown.ended:
            return
        if shown.notified:
            self._notify(shown, "report", message)
            return
        with contextlib.suppress(Exception):
            self.progress.report(shown.token, lsp.WorkDoneProgressReport(message=message))

    def _end(self, shown: Shown, message: str) -> None:
        shown.ended = True
        if self.shown.get(shown.tree) is shown:
            del self.shown[shown.tree]
        if shown.token is None:
            return
        if shown.notified:
            self._notify(shown, "end", message)
            return
        with contextlib.suppress(Exception):
            self.progress.end(shown.token, lsp.WorkDoneProgressEnd(message=message))
        self.progress.tokens.pop(shown.token, None)

    # ── stopping ──
    def stop(self, shown: Shown) -> None:
        """``→ explore end`` through the executor, as who started it (once)."""
        if shown.stopping or shown.ended:
            return
        shown.stopping = True
        self._report(shown, "stopping…")
        self.host.spawn(self._stop(shown), "stop an exploration")

    async def _stop(self, shown: Shown) -> None:
        ws = self.host.app.ws
        who = (await asyncio.to_thread(ws.participant_by_id, shown.starter)
               if shown.starter else None) or self.host.docs.participant
        tree = await asyncio.to_thread(ws.tree_or_none, shown.tree)
        if tree is None:
            return
        result = await self.host.execute(syntax.Explore(end=True), Actor(who, tree))
        self.host.show(result)

    def stop_all(self) -> bool:
        """Stop every exploration shown (``loom.cancel``); whether there was one."""
        running = [s for s in self.shown.values() if not s.ended]
        for shown in running:
            self.stop(shown)
        return bool(running)

    def stop_tree(self, tree: str) -> bool:
        """Stop the tree's exploration shown here (``loom.stopExploring``); whether there
        was one."""
        shown = self.shown.get(tree)
        if shown is None or shown.ended:
            return False
        self.stop(shown)
        return True

    # ── starting ──
    async def start(self, uri: str, node: str | None, options: str) -> Result:
        """``loom.explore``: ``→ explore from NODE OPTIONS`` through the executor as this
        session's participant, what is typed committed first; the options read as typed."""
        host = self.host
        doc = host.doc(uri) if uri else None
        saved: list[str] = []
        if doc is not None and doc.kind == "path" and self.editing is not None:
            committed = await self.editing.commit_and_show(doc)
            if not committed.ok:
                return committed
            saved = [host.app.ws.node(i).label for i in committed.data.get("created", [])]
        actor = host.actor(doc)
        if actor.tree is None:
            return Result.failure("NOT_FOUND", "no tree to explore",
                                  "open a path of the tree first")
        line = "→ explore"
        if node:
            found = await asyncio.to_thread(host.app.ws.resolve, actor.tree, node)
            line += f" from {found.local_id}"
        options = " ".join(options.split())  # one line, as typed in a buffer
        if options.startswith("→"):
            return Result.failure("INVALID_SYNTAX", "options, not a command",
                                  'give the options alone: depth:2 n:3 judge:"…"')
        if options:
            line += " " + options
        result = await host.execute(line, actor)
        if saved and result.ok:
            # what was typed went into the tree first: said, not done behind the writer's back
            # (its own first line: the start's line is long, and the editor cuts it)
            result.text = ("✓ your unsaved text was committed first: "
                           + " ".join(f"[{label}]" for label in saved) + "\n" + result.text)
        return result
