"""The team's database out of reach, and back (PostgreSQL: a restart, a crash, the network).

Whatever notices first — a command whose statement failed, a save, or the change listener
losing its connection — calls :meth:`Outage.lost`. The editor is told once that the
database is unreachable and that what the human types is kept; from then on the database
is asked every half second (in a worker thread, on a connection of that thread) whether
it answers, and the listener's reconnection asks at once. When it answers, ``on_back``
runs: the change log is read for what others did meanwhile, the commits that waited are
made (the buffers typed into meanwhile, ``Editing.typed_away``, and the saves refused,
``Editing.blocked``), and the editor is told, with how long the database was gone.

Nothing is lost meanwhile: what is typed stays in the editor and in the session, and the
store's connection is replaced on its next use (``PostgresDatabase._reconnect_if_dropped``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from loom.lsp.host import Host
from loom.render.formats import error

log = logging.getLogger(__name__)

PROBE_EVERY_S = 0.5
HINT = ("Loom keeps what you type and commits it by itself once the database answers; "
        "nothing was written meanwhile")


class Outage:
    def __init__(self, host: Host, on_back: Callable[[float], Awaitable[None]]) -> None:
        self.host = host
        self.on_back = on_back
        self.since: float | None = None  # when the database was found gone
        self._nudge: asyncio.Event | None = None

    @property
    def down(self) -> bool:
        return self.since is not None

    def lost(self) -> None:
        """The database did not answer: tell the editor (once per outage) and look for
        it until it does."""
        if self.since is not None:
            return
        self.since = time.monotonic()
        log.warning("the database is unreachable; asking again every %.1f s", PROBE_EVERY_S)
        self.host.warn(error("CONFLICT", "the database is unreachable", HINT))
        self._nudge = asyncio.Event()
        self.host.spawn(self._probe(self._nudge), "database probe")

    def nudge(self) -> None:
        """The listener reconnected: ask now rather than at the next half second."""
        if self._nudge is not None:
            self._nudge.set()

    async def _probe(self, nudge: asyncio.Event) -> None:
        while not await asyncio.to_thread(self.host.app.ws.answers):
            nudge.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(nudge.wait(), PROBE_EVERY_S)
        since, self.since, self._nudge = self.since or time.monotonic(), None, None
        took = time.monotonic() - since
        log.info("the database answers again after %.1f s", took)
        await self.on_back(took)
