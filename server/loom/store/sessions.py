"""Running editor sessions (``editor_session``: a language server's heartbeat) and open
buffers' uncommitted work (``buffer_state``, written by the language server so nothing
typed is lost): what a restarted server takes back, and what other participants may read
of who is typing where."""

from __future__ import annotations

import os
import socket

from loom.model.ids import new_ulid
from loom.store.dialect import upsert
from loom.store.repository import Repository
from loom.store.schema import BufferState, EditorSession, Participant

#: A session silent this long (on another host) is gone.
SESSION_STALE_S = 30.0


def process_alive(host: str, pid: int) -> bool | None:
    """Whether process ``pid`` of ``host`` runs, when ``host`` is this machine (else
    None: only a heartbeat can tell)."""
    if host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Sessions(Repository):
    """Editor sessions and buffer states (``Workspace``'s session and buffer methods)."""

    def open_session(self, participant: Participant) -> str:
        """Register a running editor session (a language server) and return its id."""
        sid, now = new_ulid(), self.clock()
        with self.db.atomic():
            EditorSession.create(id=sid, participant=participant.id, host=socket.gethostname(),
                                 pid=os.getpid(), started=now, heartbeat=now)
        return sid

    def heartbeat(self, session: str) -> None:
        with self.db.atomic():
            EditorSession.update(heartbeat=self.clock()).where(
                EditorSession.id == session).execute()

    def close_session(self, session: str) -> None:
        with self.db.atomic():
            EditorSession.delete().where(EditorSession.id == session).execute()

    def session_alive(self, session: str) -> bool:
        row = EditorSession.get_or_none(EditorSession.id == session)
        if row is None:
            return False
        here = process_alive(row.host, row.pid)
        return here if here is not None else self.clock() - row.heartbeat < SESSION_STALE_S

    def buffer_states(self, uri: str, participant: Participant) -> list[BufferState]:
        """Every session's uncommitted work on a buffer, newest first."""
        return list(BufferState.select().where(
            (BufferState.uri == uri) & (BufferState.participant == participant.id))
            .order_by(BufferState.updated.desc()))

    def save_buffer_state(self, uri: str, participant: Participant, session: str, *,
                          tree: str, tip: str, pending: list[dict[str, str]],
                          working: str) -> None:
        with self.db.atomic():
            upsert(BufferState, ("uri", "participant", "session"), uri=uri,
                   participant=participant.id, session=session, tree=tree, tip=tip,
                   pending=pending, working=working, updated=self.clock()).execute()

    def drop_buffer_state(self, uri: str, participant: Participant, session: str) -> None:
        with self.db.atomic():
            BufferState.delete().where((BufferState.uri == uri) &
                                       (BufferState.participant == participant.id) &
                                       (BufferState.session == session)).execute()

    def recent_buffers(self, tree_id: str, since: float,
                       exclude: str | None = None) -> list[BufferState]:
        """Buffers in ``tree_id`` saved at or after ``since``, except ``exclude``'s (a
        participant id): who may be typing there now."""
        q = BufferState.select().where((BufferState.tree == tree_id) &
                                       (BufferState.updated >= since))
        if exclude is not None:
            q = q.where(BufferState.participant != exclude)
        return list(q)
