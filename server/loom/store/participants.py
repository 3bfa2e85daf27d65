"""Participants as the store keeps them: who they are (human or model, role, profile) and
what they may do (permissions). Every change logs its change in the same transaction, so
other processes' views of a participant catch up."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loom.errors import not_found
from loom.model import permissions as perms
from loom.model.ids import new_ulid
from loom.store.orm import pw
from loom.store.repository import Clock, LogChange, Repository
from loom.store.schema import Participant

HUMAN = "human"
SUBJECT = "model"


class Participants(Repository):
    """Reads and writes of ``participant`` (``Workspace``'s participant methods)."""

    def __init__(self, db: pw.Database, clock: Clock, log_change: LogChange) -> None:
        super().__init__(db, clock)
        self.log_change = log_change
        self._owner: str | None = None
        self._owner_read = False

    def participant(self, name: str) -> Participant:
        p = Participant.get_or_none(Participant.name == name)
        if p is None:
            raise not_found(f'participant "{name}" does not exist')
        return p

    def ensure_participant(self, name: str, kind: str, role: str,
                           permissions: Iterable[str], loom_aware: bool = False,
                           profile: str | None = None) -> Participant:
        p = Participant.get_or_none(Participant.name == name)
        if p is not None:
            return p
        try:
            with self.db.atomic():
                p = Participant.get_or_none(Participant.name == name)
                if p is None:
                    p = Participant.create(
                        id=new_ulid(), name=name, kind=kind, role=role,
                        permissions=perms.ordered(permissions), loom_aware=loom_aware,
                        profile=profile, created=self.clock(),
                    )
                    self.log_change(None, "participant.create", p.id, None, {"name": name})
        except pw.IntegrityError:
            # another process made it at the same moment (PostgreSQL: the two transactions
            # each found no such participant): theirs is the one
            made = Participant.get_or_none(Participant.name == name)
            if made is None:
                raise
            return made
        return p

    def find_participant(self, name: str) -> Participant | None:
        """The participant called ``name``, or None."""
        return Participant.get_or_none(Participant.name == name)

    def participant_by_id(self, participant_id: str) -> Participant | None:
        return Participant.get_or_none(Participant.id == participant_id)

    def participants(self, kind: str | None = None, role: str | None = None
                     ) -> list[Participant]:
        """Every participant (of a ``kind``, in a ``role``), in order of arrival."""
        q = Participant.select()
        if kind is not None:
            q = q.where(Participant.kind == kind)
        if role is not None:
            q = q.where(Participant.role == role)
        return list(q.order_by(Participant.created, Participant.id))

    def participant_names(self) -> dict[str, str]:
        """Participant id → name, for many metadata lines at once."""
        return dict(self.sql("SELECT id, name FROM participant").fetchall())

    def participant_name(self, participant_id: str) -> str:
        row = self.sql("SELECT name FROM participant WHERE id = ?",
                       (participant_id,)).fetchone()
        return row[0] if row else "?"

    def update_participant(self, participant: Participant, **fields: Any) -> None:
        """Change a participant's profile, role or loom-awareness (permissions:
        :meth:`set_permissions`)."""
        with self.db.atomic():
            Participant.update(**fields).where(Participant.id == participant.id).execute()
            self.log_change(None, "participant.update", participant.id, None, dict(fields))
        for k, v in fields.items():
            setattr(participant, k, v)

    def owner(self) -> str | None:
        """On PostgreSQL, the database's owner role: whoever set the team's workspace up,
        who administers it as ``HUMAN`` does a personal one. None on SQLite."""
        if not self.dialect.postgres:
            return None
        if not self._owner_read:
            self._owner = self.sql(
                "SELECT pg_get_userbyid(datdba) FROM pg_database "
                "WHERE datname = current_database()"
            ).fetchone()[0]
            self._owner_read = True
        return self._owner

    def human(self, name: str = HUMAN) -> Participant:
        """A human participant. Only the human (``HUMAN``) — and on PostgreSQL the
        database's owner role (:meth:`owner`) — is born with every permission; any other
        name (a team member's role, an editor's ``participant`` setting, an imported
        author) starts with none until someone who holds them grants them."""
        born_with = perms.ROLES["human"] if name in (HUMAN, self.owner()) else ()
        return self.ensure_participant(name, "human", "human", born_with, True)

    def subject(self, name: str = SUBJECT) -> Participant:
        return self.ensure_participant(name, "model", "subject", (), False)

    def set_permissions(self, participant: Participant, permissions: Iterable[str]) -> None:
        with self.db.atomic():
            Participant.update(permissions=perms.ordered(permissions)).where(
                Participant.id == participant.id).execute()
            self.log_change(None, "participant.permissions", participant.id, None,
                            {"permissions": perms.ordered(permissions)})
        participant.permissions = perms.ordered(permissions)
