"""Summary workers of several processes share one queue: each job is leased to one worker
(on PostgreSQL with ``FOR UPDATE SKIP LOCKED``), and a dead worker's job comes back when its
lease runs out. Both backends, two connections."""

from __future__ import annotations

from pathlib import Path

from loom.store.db import open_database
from loom.store.workspace import Workspace


def test_two_workers_never_take_the_same_job_and_a_dead_ones_comes_back(
        db_target: str | Path) -> None:
    a, b = Workspace(open_database(db_target)), Workspace(open_database(db_target))
    try:
        for entity in ("n1", "n2"):
            a.enqueue_summary("node", entity, None)
        now = a.clock()
        first = a.claim_summary_job(lease_s=60)
        second = b.claim_summary_job(lease_s=60)
        assert first is not None and second is not None
        assert {first.entity, second.entity} == {"n1", "n2"}
        assert a.claim_summary_job(lease_s=60) is None  # both leased
        # the worker holding n1 dies: after its lease another takes it again (the most
        # urgent, oldest first), and n2's holder is not disturbed
        b.clock = lambda: now + 61
        again = b.claim_summary_job(lease_s=60)
        assert again is not None and again.entity == "n1"
        # a job given back (no model to run it) is due at once, for any worker
        b.release_summary_job(again.id)
        back = a.claim_summary_job(lease_s=60)
        assert back is not None and back.entity == "n1"
        assert a.claim_summary_job(lease_s=60) is None
    finally:
        a.db.close()
        b.db.close()
