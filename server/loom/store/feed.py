"""Following the change log from another process: in order, missing nothing, and — on
PostgreSQL — woken the moment a change commits instead of polling.

Every write logs a ``change`` row in its own transaction. On SQLite writers go one at a
time, so sequence numbers commit in order. On PostgreSQL they run in parallel: a
transaction can take seq 10, another seq 11 and commit first. A reader that remembered
"I have seen up to 11" would never see 10. :class:`ChangeCursor` remembers such holes and
looks for them again until they fill (the transaction committed) or grow old (it rolled
back: a sequence number is never given twice).

:class:`ChangeListener` holds a dedicated connection that ``LISTEN``s on the channel the
schema's trigger notifies (``loom_changes``, see ``db._v7``) and calls ``wake`` for every
notification, from its own thread; the caller then polls its cursor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from loom.redact import redact
from loom.store.backend import PostgresDatabase
from loom.store.schema import Change

log = logging.getLogger(__name__)

CHANNEL = "loom_changes"


class ChangeCursor:
    """A position in the change log that :meth:`poll` moves forward."""

    HOLE_TTL_S = 120.0  # a hole still empty after this long was a rolled-back transaction
    MAX_GAP = 10_000  # a bigger jump is not a hole to wait for (a restore, a reset log)

    def __init__(self, ws: Any, start: int | None = None, tree: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ws = ws
        self.tree = tree
        self.clock = clock
        self._seen = ws.last_change() if start is None else start
        self.holes: dict[int, float] = {}  # seq → when it was first missed

    @property
    def seen(self) -> int:
        """The highest sequence number delivered (what to store to resume from)."""
        return self._seen

    @seen.setter
    def seen(self, seq: int) -> None:
        self._seen = seq
        self.holes = {h: t for h, t in self.holes.items() if h <= seq}

    def poll(self) -> list[Change]:
        """The changes committed since the last poll (of the cursor's tree), in log order,
        including any that committed after a later one was delivered."""
        if not self.holes and self.ws.last_change() <= self._seen:
            return []
        low = min(self.holes) - 1 if self.holes else self._seen
        now = self.clock()
        out: list[Change] = []
        for change in self.ws.changes_since(low):
            seq = change.seq
            if seq > self._seen:
                if seq - self._seen <= self.MAX_GAP:
                    for missing in range(self._seen + 1, seq):
                        self.holes[missing] = now
                self._seen = seq
            elif self.holes.pop(seq, None) is None:
                continue  # delivered before
            if self.tree is None or change.tree == self.tree:
                out.append(change)
        self.holes = {h: t for h, t in self.holes.items() if now - t < self.HOLE_TTL_S}
        return out


class ChangeListener:
    """``LISTEN loom_changes`` on a connection of its own; ``wake()`` runs in the listener's
    thread for every committed change (and after a reconnect, in case one was missed);
    ``lost()`` when the connection is lost.

    A lost connection is tried again at once and then every ``RETRY_MAX_S`` at the most:
    a restarted server is listened to again within a second of answering (a backoff
    grown to 4 s during a restart has the first edit after it reach the other editors
    5 s late). A refused connection costs a round trip, so trying often is
    cheap."""

    RETRY_FIRST_S = 0.1
    RETRY_MAX_S = 1.0

    def __init__(self, db: PostgresDatabase, wake: Callable[[], None],
                 lost: Callable[[], None] | None = None) -> None:
        self.url, self.params = db.listen_params()
        self.wake = wake
        self.lost = lost
        self._stop = threading.Event()
        self._conn: Any = None
        self._thread = threading.Thread(target=self._run, name="loom-listen", daemon=True)
        self.ready = threading.Event()  # set once LISTEN is in place

    def start(self) -> ChangeListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        backoff = self.RETRY_FIRST_S
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, **self.params) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if backoff > self.RETRY_FIRST_S:
                        log.info("change listener: listening again")
                    backoff = self.RETRY_FIRST_S
                    if self.ready.is_set():
                        self.wake()  # reconnected: catch up on what came meanwhile
                    self.ready.set()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=1.0):
                            self.wake()
                            if self._stop.is_set():
                                break
            except Exception as err:  # a dropped connection: listen again, never give up
                if self._stop.is_set():
                    return
                if backoff == self.RETRY_FIRST_S:  # (once per outage, not every retry)
                    log.warning("change listener: %s; listening again as soon as the "
                                "database answers", redact(str(err).strip()))
                    if self.lost is not None:
                        self.lost()
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.RETRY_MAX_S)


def listen(db: Any, wake: Callable[[], None],
           lost: Callable[[], None] | None = None) -> ChangeListener | None:
    """A started listener on PostgreSQL; None on SQLite, whose readers poll."""
    if not isinstance(db, PostgresDatabase):
        return None
    return ChangeListener(db, wake, lost).start()
