"""The language server's purge of deleted content (``store/purge.py``): once shortly after
the session starts, beside the summary worker, then every 24 hours for as long as it runs;
in a worker thread, so the editor never waits on it. Each run that removes anything says
what, counted, in the server's log (the editor's output panel for Loom)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from loom.store.backend import unreachable
from loom.store.purge import EVERY_S, Purged
from loom.store.workspace import Workspace

log = logging.getLogger(__name__)
# the server logs warnings only (lsp/server.py); a purge is rare and worth a line
log.setLevel(logging.INFO)

#: after the session's start: the editor's first requests come first
FIRST_AFTER_S = 3.0
#: after a purge that failed (the database out of reach): again this much later
RETRY_S = 600.0


def purge_once(ws: Workspace) -> Purged | str | None:
    """One purge, logged: what it removed; or why this process may not purge (PostgreSQL:
    it is not the database's owner); or None when it failed (the next run tries again)."""
    try:
        why = ws.purge_refusal()
        if why is not None:
            log.info("purge: %s", why)
            return why
        purged = ws.purge_expired()
    except Exception as err:
        if unreachable(err):  # (the outage is said elsewhere: features/outage.py)
            log.info("purge: the database is out of reach; tried again later")
        else:
            log.exception("purge of deleted content")
        return None
    if purged:
        log.info("purge: %s", purged.line())
    return purged


async def purge_daily(ws: Workspace, first_after_s: float = FIRST_AFTER_S,
                      every_s: float = EVERY_S,
                      sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
    """Purge after ``first_after_s``, then every ``every_s`` (after a failure, within
    :data:`RETRY_S`), until cancelled; a process that may not purge stops after saying why
    once."""
    await sleep(first_after_s)
    while True:
        done = await asyncio.to_thread(purge_once, ws)
        if isinstance(done, str):
            return
        await sleep(every_s if done is not None else min(every_s, RETRY_S))
