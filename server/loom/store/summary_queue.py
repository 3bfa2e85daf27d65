"""The summary queue (SPEC-NOTES decision 11) as the store keeps it: ``summary_job`` rows
that writes queue (a node, every 10 nodes its tree, a saved document), that workers of any
process lease, retry later or drop, and the summaries they write back. The worker itself,
its prompts and its retry policy are ``loom.llm.summaries``'s; every query it needs is here.
"""

from __future__ import annotations

from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository
from loom.store.schema import Document, SummaryJob, Tree

#: Jobs the queue holds before it takes only urgent (priority 0, lazy) work.
SUMMARY_QUEUE_LIMIT = 5_000
#: New nodes in a tree between two summaries of the tree.
TREE_SUMMARY_EVERY = 10


class SummaryQueue(Repository):
    """Summary jobs and the summaries written from them (``Workspace``'s queue methods).
    ``limit`` is the queue's bound (``Workspace.summary_queue_limit``)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self.limit = SUMMARY_QUEUE_LIMIT

    # ── queueing ──────────────────────────────────────────────────────────────
    def enqueue_summary(self, kind: str, entity: str, tree: str | None,
                        priority: int = 5) -> bool:
        """Queue summary work; bounded: past the limit only urgent (lazy) work is taken."""
        if priority > 0 and self._queue_may_be_full() and self.db.execute_sql(
                "SELECT 1 FROM summary_job LIMIT 1 OFFSET ?",  # cheaper than a count
                (self.limit - 1,)).fetchone() is not None:
            return False
        # one statement: atomic by itself, no savepoint inside the caller's transaction
        self.sql(
            "INSERT INTO summary_job (kind, entity, tree, priority, attempts, not_before, "
            "created) VALUES (?, ?, ?, ?, 0, 0, ?) ON CONFLICT (kind, entity) DO UPDATE "
            "SET priority = "
            + self.dialect.least("summary_job.priority", "excluded.priority"),
            (kind, entity, tree, priority, self.clock()))
        return True

    def _queue_may_be_full(self) -> bool:
        """The ids' span bounds the queue's length from above: two index reads, where the
        exact check walks up to the limit's rows (a quarter of an add_node's time)."""
        low, high = self.sql(  # (each alone: SQLite reads one index end)
            "SELECT (SELECT min(id) FROM summary_job), (SELECT max(id) FROM summary_job)"
        ).fetchone()
        return low is not None and high - low + 1 >= self.limit

    def queued_summaries(self) -> int:
        """Summary jobs waiting in the queue."""
        return self.sql("SELECT count(*) FROM summary_job").fetchone()[0]

    # ── working through it ────────────────────────────────────────────────────
    def next_summary_job(self) -> SummaryJob | None:
        """The most urgent job that is due now, without leasing it (whether there is work
        left for a worker)."""
        return (SummaryJob.select().where(SummaryJob.not_before <= self.clock())
                .order_by(SummaryJob.priority, SummaryJob.created, SummaryJob.id).first())

    def claim_summary_job(self, lease_s: float) -> SummaryJob | None:
        """Lease the most urgent due summary job to this worker for ``lease_s`` seconds:
        workers in other processes (other machines, on PostgreSQL) skip it meanwhile, and a
        worker that dies leaves it to the next once the lease runs out."""
        now = self.clock()
        with self.db.atomic():
            row = self.sql("SELECT id FROM summary_job WHERE not_before <= ? "
                           "ORDER BY priority, created, id LIMIT 1" + self.dialect.skip_locked,
                           (now,)).fetchone()
            if row is None:
                return None
            self.sql("UPDATE summary_job SET not_before = ? WHERE id = ?",
                     (now + lease_s, row[0]))
            return SummaryJob.get_by_id(row[0])

    def release_summary_job(self, job_id: int) -> None:
        """Give a leased job back at once (the worker could not run it: no model)."""
        self.sql("UPDATE summary_job SET not_before = 0 WHERE id = ?", (job_id,))

    def retry_summary_job(self, job_id: int, attempts: int, not_before: float) -> None:
        """Keep a job that failed ``attempts`` times for another try at ``not_before``."""
        with self.db.atomic():
            SummaryJob.update(attempts=attempts, not_before=not_before).where(
                SummaryJob.id == job_id).execute()

    def drop_summary_job(self, job_id: int) -> None:
        """Take a job off the queue: done, given up on, or its subject has gone."""
        with self.db.atomic():
            SummaryJob.delete().where(SummaryJob.id == job_id).execute()

    # ── what the jobs write ───────────────────────────────────────────────────
    def set_tree_summary(self, tree: Tree, summary: str, source: str,
                         themes: list[str] | None = None) -> None:
        with self.db.atomic():
            Tree.update(summary=summary, summary_source=source, themes=themes,
                        summary_counter=0).where(Tree.id == tree.id).execute()
            self.log_change(tree.id, "tree.summary", tree.id, None, {"source": source})
        tree.summary, tree.summary_source, tree.themes = summary, source, themes

    def set_document_summary(self, doc: Document, summary: str, source: str) -> None:
        with self.db.atomic():
            Document.update(summary=summary, summary_source=source).where(
                Document.id == doc.id).execute()
            self.log_change(None, "document.summary", doc.id, None, {"source": source})
