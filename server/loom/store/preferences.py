"""The preference log (schema v13 ``preference_event``): per participant and tree, what was
shown (node ids in the order displayed) and what was chosen, rejected, accepted, rated,
pruned, bookmarked or rewritten. Rows are appended, never changed (a team's database
lets each person insert only their own, ``store/roles.py``). Writers are the executor's
recording step (``commands/preference_log.py``) and the language server's suggestions
and sibling picker; readers are the export, ``loom stats`` and blind trees' cards."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from loom.model import preferences as prefs
from loom.store.orm import pw
from loom.store.repository import Clock, Repository
from loom.store.schema import PreferenceEvent


@dataclass(frozen=True)
class Event:
    """One recorded event, as readers use it."""

    id: int
    participant: str
    tree: str
    kind: str
    parent: str | None
    node: str | None
    shown: list[str]
    chosen: str | None
    rejected: list[str]
    detail: dict[str, Any]
    created: float

    def as_json(self) -> dict[str, Any]:
        """The event as a JSON object (``--format jsonl``)."""
        return {"id": self.id, "participant": self.participant, "tree": self.tree,
                "kind": self.kind, "parent": self.parent, "node": self.node,
                "shown": self.shown, "chosen": self.chosen, "rejected": self.rejected,
                "detail": self.detail, "created": self.created}


def _event(row: PreferenceEvent) -> Event:
    return Event(row.id, row.participant, row.tree, row.kind, row.parent, row.node,
                 list(row.shown or []), row.chosen, list(row.rejected or []),
                 dict(row.detail or {}), row.created)


class Preferences(Repository):
    """``Workspace``'s preference-log methods."""

    def __init__(self, db: pw.Database, clock: Clock) -> None:
        super().__init__(db, clock)

    def record(self, participant: str, tree: str, kind: str, *, parent: str | None = None,
               node: str | None = None, shown: Sequence[str] | None = None,
               chosen: str | None = None, rejected: Sequence[str] | None = None,
               detail: dict[str, Any] | None = None) -> int:
        """Append one event; its id."""
        if kind not in prefs.KINDS:
            raise ValueError(f"not a preference event: {kind}")
        return int(PreferenceEvent.insert(
            participant=participant, tree=tree, kind=kind, parent=parent, node=node,
            shown=list(shown) if shown is not None else None, chosen=chosen,
            rejected=list(rejected) if rejected is not None else None,
            detail=detail or None, created=self.clock()).execute())

    def events(self, trees: Iterable[str] | None = None, participant: str | None = None,
               kinds: Iterable[str] | None = None) -> list[Event]:
        """The events (of these trees, this participant, these kinds), oldest first."""
        q = PreferenceEvent.select()
        if trees is not None:
            q = q.where(PreferenceEvent.tree.in_(list(trees)))
        if participant is not None:
            q = q.where(PreferenceEvent.participant == participant)
        if kinds is not None:
            q = q.where(PreferenceEvent.kind.in_(list(kinds)))
        return [_event(r) for r in q.order_by(PreferenceEvent.id)]

    def chosen_among(self, participant: str, parents: Sequence[str]) -> set[str]:
        """Which of these branch points the participant has chosen among (a choice event
        with that parent): a blind tree shows their siblings' models from then on."""
        if not parents:
            return set()
        q = (PreferenceEvent.select(PreferenceEvent.parent).distinct()
             .where((PreferenceEvent.participant == participant)
                    & PreferenceEvent.parent.in_(list(parents))
                    & PreferenceEvent.kind.in_(sorted(prefs.CHOICES))))
        return {r.parent for r in q}
