"""Scoring the writer's words in the editor (``→ score``, ``commands/handlers/score.py``).

``loom.toggleScores`` turns it on for the editor session: the buffer is committed, the
path's text no model has scored yet is scored through the executor (``→ score branch:X``,
as the human: ``loom_generate``), and the probability colours come on, so the writer's
words show in the same heatmap as model text, with the same hover and alternatives. The
least likely spans (runs of tokens under 1 in 1,000, ``model.tokens.surprises``, widened
to whole words) are Information diagnostics: the least likely first, one for every
``EVERY`` tokens of a node (at least one), at most ``MOST`` a document; each has a quick fix,
"Branch here with the model's choice ‘X’", which is ``loom.split`` with that alternative
(the counterfactual split). While it is on, text committed later is scored in the
background. Off: the diagnostics go and the colours are as they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from loom.commands import syntax
from loom.commands.results import Result
from loom.lsp.documents import OpenDoc
from loom.lsp.features.diagnostics import Diagnostics
from loom.lsp.features.editing import Editing
from loom.lsp.features.probabilities import Probabilities, percent, segment_tokens, visible
from loom.lsp.host import Host
from loom.lsp.ranges import offset_of, range_of
from loom.model import tokens as T
from loom.render.text import odds, whole_words
from loom.store import node_tokens as token_store


@dataclass(frozen=True)
class Mark:
    """A least likely span of scored text: where it is underlined (its whole words), the
    token its first word begins with and where (the split's place: "instead of ‘Gulls’,
    the model's ‘She’"), the span, and who scored it."""

    start: int
    end: int
    token_at: int
    token: T.Token
    surprise: T.Surprise
    scorer: str


#: How long typing pauses before the marks move with the text.
PAUSE_S = 0.3
#: The least likely spans a document marks, at most, and a node's: one for every
#: ``EVERY`` of its tokens (a mark on every other word marks nothing).
MOST = 20
EVERY = 30
CODE = "loom.score"
TITLE = "Scoring the writer's words"


class Scoring:
    def __init__(self, host: Host, editing: Editing, diagnostics: Diagnostics,
                 probabilities: Probabilities, progress: object = None) -> None:
        self.host = host
        self.editing = editing
        self.diagnostics = diagnostics
        self.probabilities = probabilities
        self.progress = progress
        self.on = False
        self._colours_before: bool | None = None
        self._running: dict[str, threading.Event] = {}
        self._again: set[str] = set()
        self._committing: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        # each node's scorer and marks (in its own offsets), while the store's epoch holds
        self._epoch = -1
        self._scorers: dict[str, str | None] = {}
        self._of_node: dict[str, list[tuple[int, int, T.Token, T.Surprise]]] = {}
        diagnostics.providers.append(self.diagnostics_for)

    # ── the toggle ──
    async def toggle(self, uri: str | None, on: bool | None = None) -> Result:
        """Score the writer's words and mark the least likely (flip when ``on`` is None)."""
        want = (not self.on) if on is None else on
        if not want:
            return self._off()
        self.on = True
        if self._colours_before is None:
            self._colours_before = self.host.settings.probabilities
        self.probabilities.toggle(True)
        doc = self.host.docs.open.get(uri or "")
        if doc is None or doc.kind != "path" or doc.tree is None:
            self._republish()
            return Result.success("✓ scoring the writer's words: open a path to score it",
                                  on=True, scored=[])
        result = await self.score(doc)
        if not result.ok:
            return result
        if result.data.get("stopped"):  # cancelled before it was done: off again
            self._off()
            return Result.success(result.text, **{**result.data, "on": False})
        marked = len(self.diagnostics_for(doc))
        return Result.success(
            result.text + f"\n  {marked} least likely span{'s' if marked != 1 else ''} "
            "marked; hover a word for the model's alternatives", **result.data, on=True,
            marked=marked)

    def _off(self) -> Result:
        self.on = False
        for cancel in self._running.values():
            cancel.set()
        self.probabilities.toggle(bool(self._colours_before))
        self._colours_before = None
        self._republish()
        return Result.success("✓ scores hidden (they stay stored: → score shows them again)",
                              on=False)

    def cancel(self) -> bool:
        """``loom.cancel``: stop the scoring under way (nothing of it is written)."""
        for event in self._running.values():
            event.set()
        return bool(self._running)

    # ── scoring ──
    async def score(self, doc: OpenDoc) -> Result:
        """Score what no model has scored yet on ``doc``'s path (committed first), then
        mark its least likely spans; one run a document at a time (a request meanwhile
        runs once more after it)."""
        if doc.uri in self._running:
            self._again.add(doc.uri)
            return Result.success("✓ scoring is under way", scored=[])
        self._committing.add(doc.uri)  # (this commit's text is scored by this run)
        try:
            committed = await self.editing.commit_and_show(doc)
        finally:
            self._committing.discard(doc.uri)
        if not committed.ok:
            return committed
        tip = doc.view.tip
        if tip is None:
            return Result.success("✓ nothing to score", scored=[])
        host = self.host
        cancel = self._running[doc.uri] = threading.Event()
        token = await self._progress_begin()
        watching = asyncio.ensure_future(self._watch(token, cancel))
        try:
            result = await host.execute(syntax.Score(branch=tip.label, unscored=True),
                                        host.actor(doc), cancel=cancel)
        finally:
            watching.cancel()
            self._progress_end(token)
            del self._running[doc.uri]
        if cancel.is_set() and not result.ok:
            result = Result.success("✓ scoring stopped: nothing was written", scored=[],
                                    stopped=True)
        if not result.ok:
            host.show(result)
        self._republish()
        host.refresh_decorations()
        if doc.uri in self._again:
            self._again.discard(doc.uri)
            if self.on:
                host.spawn(self.score(doc), "score what was written meanwhile")
        return result

    def written(self, doc: OpenDoc) -> None:
        """Text was committed to (or a path opened in) ``doc``: scored while it is on."""
        if (self.on and doc.kind == "path" and doc.tree is not None
                and doc.uri not in self._committing):
            self.host.spawn(self._quietly(doc), "score the writer's new words")

    async def _quietly(self, doc: OpenDoc) -> None:
        await asyncio.sleep(0)
        if self.on and self.host.docs.open.get(doc.uri) is doc:
            await self.score(doc)

    def changed(self, uri: str) -> None:
        """The document's text moved: its marks follow, once the typing pauses."""
        if not self.on:
            return
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._timers[uri] = asyncio.get_running_loop().call_later(PAUSE_S, self._moved, uri)

    def _moved(self, uri: str) -> None:
        self._timers.pop(uri, None)
        doc = self.host.docs.open.get(uri)
        if self.on and doc is not None and doc.kind == "path":
            self.diagnostics.publish(doc)

    def forget(self, node_ids: set[str]) -> None:
        """Another process scored these nodes: read their scores afresh."""
        token_store.forget(node_ids)
        from loom.lsp.features import probabilities

        probabilities.forget(node_ids)
        self._republish()
        self.host.refresh_decorations()

    def _republish(self) -> None:
        for doc in list(self.host.docs.open.values()):
            if doc.kind == "path":
                self.diagnostics.publish(doc)

    # ── the marks ──
    def marks(self, doc: OpenDoc) -> list[Mark]:
        """The document's least likely spans of scored text, the least likely first. Each
        node's are found once (its text and scores change only with the store's epoch) and
        placed where its segment is now; text typed over is read afresh."""
        if not self.on or doc.kind != "path" or doc.tree is None:
            return []
        if self._epoch != token_store.epoch():
            self._epoch = token_store.epoch()
            self._scorers.clear()
            self._of_node.clear()
        segments = doc.session.segments
        missing = [s.node for s in segments if s.node and s.node not in self._scorers]
        if missing:
            found_scorers = token_store.scorers(self.host.docs.ws, missing)
            for nid in missing:
                self._scorers[nid] = found_scorers.get(nid)
        found: list[Mark] = []
        for i, seg in enumerate(segments):
            scorer = self._scorers.get(seg.node or "")
            if scorer is None or seg.node is None:
                continue
            if seg.dirty:
                text = doc.session.segment_text(i)
                local = _node_marks(text, segment_tokens(self.host.docs, doc, i) or [])
            else:
                local = self._of_node.get(seg.node)
                if local is None:
                    text = doc.text[seg.start:seg.end]
                    local = self._of_node[seg.node] = _node_marks(
                        text, segment_tokens(self.host.docs, doc, i) or [])
            found += [Mark(seg.start + a, seg.start + b, seg.start + tok.start, tok, s, scorer)
                      for a, b, tok, s in local]
        found.sort(key=lambda m: (m.surprise.logprob, m.start))
        return found[:MOST]

    def diagnostics_for(self, doc: OpenDoc) -> list[lsp.Diagnostic]:
        return [self._diagnostic(doc, m) for m in self.marks(doc)]

    def _diagnostic(self, doc: OpenDoc, m: Mark) -> lsp.Diagnostic:
        words = doc.text[m.start:m.end]
        message = (f"‘{words}’ is unlikely here: {odds(m.surprise.probability)} "
                   f"({m.scorer})")
        choice = T.model_choice(m.token)
        if choice is not None:
            message += (f"; the model's choice: ‘{visible(choice[0])}’ "
                        f"({percent(T.probability(choice[1]))})")
        return lsp.Diagnostic(range=range_of(doc.session.doc, m.start, m.end),
                              message=message, severity=lsp.DiagnosticSeverity.Information,
                              code=CODE, source="loom")

    def code_actions(self, doc: OpenDoc, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        """The quick fix of a least likely span under the cursor: branch there with the
        model's choice (``loom.split`` at the span's first token, with that token)."""
        only = params.context.only
        if only and not any(str(getattr(k, "value", k)).startswith("quickfix") for k in only):
            return []
        at = offset_of(doc, params.range.start)
        out = []
        for m in self.marks(doc):
            choice = T.model_choice(m.token)
            if not m.start <= at <= m.end or choice is None:
                continue
            line, character = doc.session.doc.position_at(m.token_at)
            title = (f"Branch here with the model's choice ‘{visible(choice[0])}’ "
                     f"({percent(T.probability(choice[1]))})")
            out.append(lsp.CodeAction(
                title=title, kind=lsp.CodeActionKind.QuickFix, is_preferred=True,
                diagnostics=[self._diagnostic(doc, m)],
                command=lsp.Command(title=title, command="loom.split", arguments=[{
                    "uri": doc.uri, "line": line, "character": character, "alt": choice[0],
                    "continue": False}])))
        return out

    # ── progress ──
    async def _progress_begin(self) -> str | None:
        window = self.host.caps.window
        if self.progress is None or not (window and window.work_done_progress):
            return None
        token = f"loom-score-{id(self)}-{asyncio.get_running_loop().time()}"
        try:
            await asyncio.wait_for(asyncio.shield(self.progress.create_async(  # type: ignore[attr-defined]
                token)), self.host.settings.client_timeout_s)
            self.progress.begin(token, lsp.WorkDoneProgressBegin(  # type: ignore[attr-defined]
                title=TITLE, cancellable=True))
        except Exception:
            return None
        return token

    async def _watch(self, token: str | None, cancel: threading.Event) -> None:
        """The editor's cancel of the progress stops the scoring."""
        if token is None:
            return
        while not cancel.is_set():
            await asyncio.sleep(0.1)
            fut: Any = getattr(self.progress, "tokens", {}).get(token)
            if fut is not None and fut.cancelled():
                cancel.set()

    def _progress_end(self, token: str | None) -> None:
        if token is not None:
            with contextlib.suppress(Exception):
                self.progress.end(token, lsp.WorkDoneProgressEnd())  # type: ignore[attr-defined]


def _node_marks(text: str, tokens: list[T.Token]) -> list[tuple[int, int, T.Token, T.Surprise]]:
    """A node's least likely spans in its own offsets: ``(start, end, token, surprise)``,
    widened to whole words, with the token their first word begins with."""
    out = []
    for s in T.surprises(tokens, limit=max(1, -(-len(tokens) // EVERY))):
        start, end = whole_words(text, s.start, s.end)
        if start < end:
            out.append((start, end, T.token_at(tokens, start) or s.first, s))
    return out
