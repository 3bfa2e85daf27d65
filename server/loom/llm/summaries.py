"""Summaries (seed 000/001, SPEC-NOTES decision 11): the queue's worker and the prompts.

Work is queued in the database when nodes are created, every 10 new nodes for a tree and
when a document is saved; a worker (a thread of the language server, or ``loom
summarize``) takes it in priority order with the summary model, max 50 tokens. Until a
model has written one, a node carries the extractive summary made at creation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from loom.llm.base import ChatMessage, ModelError, Provider
from loom.llm.config import LOCAL_MODEL, ModelProfile, load_config, resolve_profile
from loom.llm.redacting import redacting
from loom.llm.registry import make_provider
from loom.llm.service.record import alive
from loom.memory.counting import count_tokens
from loom.model.sampling import Sampling
from loom.protocol import loads_lenient
from loom.render.text import one_line, whole_sentences
from loom.store.backend import storage_error, unreachable
from loom.store.schema import Node, SummaryJob, Tree
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)
MAX_TOKENS = 50
MAX_ATTEMPTS = 3

NODE_PROMPT = """Given this conversation context:
---
Tree: {title}
Previous: {previous}
---

Summarize the following message in ONE sentence (max 30 words).
Capture the key point, action, or decision. Be specific, not generic.

Message: {content}"""

TREE_PROMPT = """This is a branching conversation tree. The user describes it as:
"{description}"

Key node summaries from the main path:
{node_summaries}

Branch points explored: {branch_count}

Summarize this tree's purpose and main themes in 2 sentences.
Answer in exactly this form:
summary: <two sentences>
themes: <theme>, <theme>, <theme>"""

RETRY_PROMPT = """Summarize in one short sentence:

{content}"""

DOC_PROMPT = """Summarize this document in ONE or TWO sentences (max 40 words).
Be specific about what it covers.

Document "{name}":
{content}"""


@dataclass
class Prompt:
    kind: str
    entity: str
    text: str


def node_prompt(ws: Workspace, node: Node, tree: Tree) -> str:
    """The seed's template: parent context, the grandparent too when the node is short."""
    parent = ws.find_node(node.parent) if node.parent else None
    previous = (parent.summary or parent.content).strip() if parent else "(start of the tree)"
    tokens, _ = count_tokens(node.content, exact=False)
    if parent is not None and parent.parent and tokens < 50:
        grand = ws.find_node(parent.parent)
        if grand is not None:
            previous = f"{(grand.summary or grand.content).strip()}\n{previous}"
    return NODE_PROMPT.format(title=tree.title, previous=previous[:1500],
                              content=node.content[:4000])


def tree_prompt(ws: Workspace, tree: Tree) -> str:
    root = ws.node(tree.root)
    human = ws.human()
    _, tip = ws.position(human, tree)
    path = ws.path(tip, prefer=(tip.id,)) if tip is not None else [root]
    lines = [f"- [{n.label}] {one_line(n.summary or n.content)[:200]}" for n in path[:40]
             if (n.summary or n.content).strip()]
    return TREE_PROMPT.format(description=tree.description or tree.title,
                              node_summaries="\n".join(lines) or "(none yet)",
                              branch_count=ws.tree_counts(tree).branches)


_PREFIX = re.compile(r"^(summary|one-sentence summary|here is (a|the) summary)[^:]*:\s*",
                     re.IGNORECASE)
# Small models sometimes echo the instruction back; that part is not a summary.
_ECHO = re.compile(r"^(capture the key point, action, or decision\.?|be specific, not "
                   r"generic\.?|summarize the following message[^.:]*[.:]?)\s*[:.]?\s*",
                   re.IGNORECASE)


def clean(text: str, max_words: int = 40) -> str:
    """One line, no surrounding quotes or 'Summary:' preamble, at most ``max_words``."""
    first = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    first = _PREFIX.sub("", first.strip()).strip()
    while (stripped := _ECHO.sub("", first, count=1)) != first:
        first = stripped.strip()
    first = first.strip('"“”\'').strip()
    words = first.split()
    return " ".join(words[:max_words]) + ("…" if len(words) > max_words else "")


#: The structured tree summary's shape: ``themes`` is a list even when the model wrote one
#: (``themes: grief`` is ``["grief"]``, as seed 004's single-item inline lists mean).
TREE_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"},
                   "themes": {"type": "array", "items": {"type": "string"}}},
}


def parse_tree_answer(text: str) -> tuple[str, list[str] | None]:
    """A structured answer in the Loom Protocol (``summary:`` / ``themes:``), read leniently
    because small models drift; plain text is taken as the summary. Only whole sentences
    are kept: a model stopped by its token limit mid-sentence leaves a fragment."""
    body = text.strip()
    try:
        value, _notes = loads_lenient(body, schema=TREE_ANSWER_SCHEMA)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("summary"), str):
        themes = value.get("themes")
        listed = [one_line(str(t)) for t in themes if str(t).strip()][:6] \
            if isinstance(themes, list) else []
        return whole_sentences(value["summary"]), listed or None
    return whole_sentences(clean(body, 60)), None


#: how long a worker holds a job it took before another may take it (a dead worker's job
#: comes back after this)
LEASE_S = 300.0


class SummaryWorker:
    """Takes summary work from the queue, oldest-most-urgent first."""

    def __init__(self, ws: Workspace, profile: ModelProfile | None = None,
                 provider_factory: Callable[[ModelProfile], Provider] = make_provider) -> None:
        self.ws = ws
        self.profile = profile or resolve_profile("summary")
        self.provider_factory = provider_factory
        self.unavailable: str | None = None
        if profile is None and bundled_fallback(self.profile):
            # The bundled 135M model invents what a passage says ("She had been watching
            # her mother's car…"): a wrong summary shown for a node is worse than its
            # first sentence. Model summaries come from a capable configured model.
            self.unavailable = ("only the bundled 135M model is available: summaries stay "
                                "extractive (first sentence) until a summary model is "
                                "configured")

    def pending(self) -> int:
        return self.ws.queued_summaries()

    def next_job(self) -> SummaryJob | None:
        return self.ws.next_summary_job()

    def run_once(self, limit: int = 10) -> int:
        """Process up to ``limit`` jobs; returns how many summaries were written. Each job
        is leased first, so workers of several processes never do the same one."""
        done = 0
        for _ in range(limit):
            if self.unavailable:
                break
            job = self.ws.claim_summary_job(LEASE_S)
            if job is None:
                break
            done += self._process(job)
        return done

    def run_forever(self, stop: threading.Event, idle_s: float = 1.0,
                    start_after_s: float = 3.0) -> None:
        """Work in the background at the lowest CPU priority: summaries must never make the
        editor wait (the local model's threads inherit this thread's niceness)."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        if stop.wait(start_after_s):
            return
        while not stop.is_set():
            try:
                if self.run_once(limit=5) == 0:
                    stop.wait(idle_s)
            except Exception as err:  # the worker must outlive any one bad job
                if storage_error(err).code == "PERMISSION_DENIED":
                    # a reader's database role may not claim jobs: nothing this worker
                    # could do will change that, so it stops rather than log it every second
                    self.unavailable = "the database refuses this role's summary writes"
                elif unreachable(err):  # (down: it is tried again, quietly)
                    log.warning("summary worker: the database is unreachable")
                    stop.wait(idle_s * 5)
                else:
                    log.exception("summary worker")
                    stop.wait(idle_s)
            if self.unavailable:
                log.info("summaries stay extractive: %s", self.unavailable)
                return

    def _process(self, job: SummaryJob) -> int:
        prompt = self._prompt(job)
        if prompt is None:
            self.ws.drop_summary_job(job.id)
            return 0
        try:
            answer = asyncio.run(self._ask(prompt.text))
        except ModelError as err:
            if err.kind in ("unavailable", "config", "auth"):
                self.unavailable = err.message
                self.ws.release_summary_job(job.id)  # not the job's fault: another may
                return 0
            attempts = job.attempts + 1
            if attempts >= MAX_ATTEMPTS:
                self.ws.drop_summary_job(job.id)
            else:
                self.ws.retry_summary_job(job.id, attempts,
                                          self.ws.clock() + 5 * 2 ** attempts)
            log.warning("summary of %s %s failed: %s", job.kind, job.entity, err)
            return 0
        stored = self._store(job, answer)
        if not stored and job.kind == "node":
            # Small models sometimes only echo the template: ask once more, plainly.
            node = self.ws.find_node(job.entity)
            if node is not None:
                try:
                    answer = asyncio.run(self._ask(RETRY_PROMPT.format(content=node.content)))
                    stored = self._store(job, answer)
                except ModelError as err:
                    log.info("second summary attempt failed: %s", err)
        if not stored:
            log.info("summary of %s %s was unusable: %r", job.kind, job.entity, answer)
        self.ws.drop_summary_job(job.id)
        return int(stored)

    def _prompt(self, job: SummaryJob) -> Prompt | None:
        if job.kind == "node":
            node = self.ws.find_node(job.entity)
            if node is None or not node.content.strip():
                return None
            return Prompt("node", node.id,
                          node_prompt(self.ws, node, self.ws.tree(node.tree_id)))
        if job.kind == "tree":
            tree = self.ws.tree_or_none(job.entity)
            return Prompt("tree", tree.id, tree_prompt(self.ws, tree)) if tree else None
        doc = self.ws.find_document(job.entity)
        if doc is None or not doc.content.strip():
            return None
        return Prompt("doc", doc.id, DOC_PROMPT.format(name=doc.name, content=doc.content[:6000]))

    async def _ask(self, text: str) -> str:
        # Whatever the factory makes, the prompt and the answer pass the redactor.
        provider = redacting(self.provider_factory(self.profile))
        try:
            result = await provider.chat([ChatMessage(role="user", content=text)],
                                         Sampling(tokens=MAX_TOKENS, temperature=0.2))
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        return result.completions[0].text if result.completions else ""

    def _store(self, job: SummaryJob, answer: str) -> bool:
        """Write a usable answer; an unusable one leaves the extractive summary."""
        if job.kind == "node":
            summary = clean(answer, 30)
            node = self.ws.find_node(job.entity)
            if node is None or not summary:
                return False
            self.ws.set_summary(node, summary, "model")
        elif job.kind == "tree":
            summary, themes = parse_tree_answer(answer)
            tree = self.ws.tree_or_none(job.entity)
            if tree is None or not summary:
                return False
            self.ws.set_tree_summary(tree, summary, "model", themes)
        else:
            summary = clean(answer, 40)
            doc = self.ws.find_document(job.entity)
            if doc is None or not summary:
                return False
            self.ws.set_document_summary(doc, summary, "model")
        return True


def bundled_fallback(profile: ModelProfile) -> bool:
    """Whether ``profile`` is the bundled local model chosen only because nothing else is
    configured (no key, no ``[defaults] summary``, no ``LOOM_SUMMARY_PROFILE``)."""
    if profile.provider != "local" or profile.model != LOCAL_MODEL:
        return False
    if os.environ.get("LOOM_SUMMARY_PROFILE"):
        return False
    try:
        return not load_config().defaults.summary
    except ModelError:
        return True


def start_background(db_path: str) -> subprocess.Popen[bytes] | None:
    """The worker as a child process at the lowest CPU priority (the language server's).

    A process, not a thread: llama.cpp and the provider's event loop then share nothing
    with the server — no GIL, no loop, no locks — so summaries can never delay an answer
    to the editor. The child exits when its parent does."""
    if not db_path or db_path == ":memory:":
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "loom.llm.summaries", "--db", db_path,
             "--parent", str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=(lambda: os.nice(19)) if hasattr(os, "nice") else None)
    except OSError as err:
        log.warning("could not start the summary worker: %s", err)
        return None


def _worker_main(argv: list[str] | None = None) -> int:
    import argparse

    from loom.store.db import open_database

    ap = argparse.ArgumentParser(prog="python -m loom.llm.summaries")
    ap.add_argument("--db", required=True)
    ap.add_argument("--parent", type=int, help="exit when this process is gone")
    args = ap.parse_args(argv)
    ws = Workspace(open_database(args.db))
    try:
        worker = SummaryWorker(ws)
    except ModelError as err:
        log.info("no summary model: %s", err)
        return 0
    stop = threading.Event()

    def watch_parent() -> None:
        while not stop.wait(2.0):
            if args.parent and not _alive(args.parent):
                stop.set()

    threading.Thread(target=watch_parent, daemon=True).start()
    worker.run_forever(stop)
    return 0


def _alive(pid: int) -> bool:
    """Whether the parent that started this worker still is its parent."""
    return alive(pid) and os.getppid() == pid


def drain(ws: Workspace, limit: int | None = None, deadline_s: float | None = None) -> int:
    """Process queued work now (``loom summarize``); returns summaries written."""
    worker = SummaryWorker(ws)
    done, started = 0, time.monotonic()
    while limit is None or done < limit:
        if deadline_s is not None and time.monotonic() - started > deadline_s:
            break
        n = worker.run_once(limit=1)
        if n == 0 and (worker.next_job() is None or worker.unavailable):
            break
        done += n
    if worker.unavailable:
        raise ModelError("unavailable", worker.unavailable,
                         "summaries stay extractive until a model can run")
    return done


if __name__ == "__main__":
    sys.exit(_worker_main())
