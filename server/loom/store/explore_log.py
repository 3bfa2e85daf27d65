"""Explorations in the change log, so that every process sees them (``→ explore``).

An exploration logs ``explore.start`` when it starts and ``explore.end`` when it ends, both
with the tree, the node it started from as entity, and its run id in the payload. The run
id is an editor-session record (``store/sessions.py``) that the exploration's process keeps
alive with a heartbeat and closes at the end: a start whose session is gone (its process
crashed) is not a running exploration, so it never blocks the tree. ``explore.stop``
(payload ``run``) asks a running exploration in another process to stop; that exploration
follows the log and stops when it sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom.store.backend import is_postgres
from loom.store.schema import Change
from loom.store.workspace import Workspace

START = "explore.start"
END = "explore.end"
STOP = "explore.stop"
#: The latest starts of a tree looked at (one runs at a time: a few are plenty).
RECENT_STARTS = 20
#: PostgreSQL: the advisory lock's first key for a tree's exploration starts ("LMEX"; the
#: second key is the tree's hash), so that two starts of a tree never interleave
START_LOCK = 0x4C4D4558


@dataclass(frozen=True)
class LoggedRun:
    """An exploration as the log shows it."""

    seq: int  # its explore.start's place in the log
    run: str  # the editor-session id it keeps alive while it runs
    source: str  # the node it started from (id)
    label: str  # … as it is shown ([a7x2])
    explorer: str  # the participant that explores (its name)


def _payload(change: Change) -> dict[str, Any]:
    payload = change.payload
    return payload if isinstance(payload, dict) else {}


def _log(ws: Workspace, tree: str, kind: str, entity: str, actor: str,
         payload: dict[str, Any]) -> None:
    with ws.db.atomic():
        ws.log_change(tree, kind, entity, actor, payload)


def log_start_alone(ws: Workspace, tree: str, source: str, actor: str, run: str,
                    **payload: Any) -> list[LoggedRun]:
    """``explore.start`` logged, then the tree's live explorations read (this one among
    them), in one transaction no other start of the tree interleaves with: SQLite's insert
    takes the database's write lock; PostgreSQL takes an advisory lock on the tree first,
    since there two transactions could each log a start, each miss the other's uncommitted
    one, and both run."""
    with ws.db.atomic():
        if is_postgres(ws.db):
            ws.db.execute_sql("SELECT pg_advisory_xact_lock(?, hashtext(?))",
                              (START_LOCK, tree))
        ws.log_change(tree, START, source, actor, {"run": run, **payload})
        return live_runs(ws, tree)


def log_end(ws: Workspace, tree: str, source: str, actor: str, run: str | None,
            **payload: Any) -> None:
    _log(ws, tree, END, source, actor, {"run": run, **payload})


def log_stop(ws: Workspace, run: LoggedRun, tree: str, actor: str) -> None:
    """Ask ``run`` (running in another process) to stop."""
    _log(ws, tree, STOP, run.source, actor, {"run": run.run})


def live_runs(ws: Workspace, tree: str) -> list[LoggedRun]:
    """The tree's explorations that started, have not ended, and whose process still lives
    (its session's heartbeat), oldest first."""
    starts = list(Change.select().where((Change.tree == tree) & (Change.kind == START))
                  .order_by(Change.seq.desc()).limit(RECENT_STARTS))
    if not starts:
        return []
    first = min(c.seq for c in starts)
    ended = {_payload(c).get("run") for c in Change.select(Change.payload).where(
        (Change.tree == tree) & (Change.kind == END) & (Change.seq > first))}
    out = []
    for change in reversed(starts):
        payload = _payload(change)
        run = payload.get("run")
        # a start with no run id (an older Loom) cannot be checked for life: not running
        if not isinstance(run, str) or run in ended or not ws.session_alive(run):
            continue
        out.append(LoggedRun(change.seq, run, change.entity, str(payload.get("from") or ""),
                             str(payload.get("explorer") or "the collaborator")))
    return out


def stop_asked(changes: list[Change], run: str) -> Change | None:
    """Among changes read from the log, an ``explore.stop`` meant for ``run``."""
    for change in changes:
        if change.kind == STOP and _payload(change).get("run") == run:
            return change
    return None


def ended(ws: Workspace, tree: str, run: str, after: int) -> dict[str, Any] | None:
    """The ``explore.end`` payload of ``run`` (logged after ``after``), or None yet."""
    for change in Change.select().where((Change.tree == tree) & (Change.kind == END)
                                        & (Change.seq > after)).order_by(Change.seq):
        payload = _payload(change)
        if payload.get("run") == run:
            return payload
    return None
