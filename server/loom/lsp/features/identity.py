"""Who this editor acts as. The ``participant`` setting names any participant; a name the
workspace does not know yet is created with no permissions (only the human is born with
all of them), and the human is asked in the editor what to grant it. The choice is a
``grant`` by the human, through the executor, like every change."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.context import Actor
from loom.commands.results import Result
from loom.lsp.host import Host
from loom.model import permissions as perms
from loom.store.workspace import HUMAN

CHOICES: dict[str, tuple[str, ...]] = {
    "Read only": (perms.LOOM_AWARE, perms.DOC_READ),
    "Write": (perms.LOOM_AWARE, perms.LOOM_WRITE, perms.DOC_READ, perms.DOC_WRITE),
    "Everything": perms.ORDER,
}
NOT_NOW = "Not now"


def question(name: str) -> str:
    return f"Loom: {name} has no permissions yet. Grant {name} what?"


class Identity:
    def __init__(self, host: Host) -> None:
        self.host = host

    def needs_grant(self) -> bool:
        """The editor acts as a participant that may do nothing yet (asked again each
        session until the human chooses)."""
        who = self.host.docs.participant
        return who.name != HUMAN and not who.permissions

    async def offer(self) -> Result | None:
        """Ask the human what the editor's participant may do; None for "Not now" (or no
        answer)."""
        name = self.host.docs.participant.name
        choice = await self.host.ask(question(name), [*CHOICES, NOT_NOW])
        if choice not in CHOICES:
            return None
        return await self.grant(CHOICES[choice])

    async def grant(self, permissions: tuple[str, ...]) -> Result:
        ws = self.host.app.ws
        who = self.host.docs.participant
        result = await self.host.execute(syntax.Grant(participant=who.name,
                                                   permissions=permissions),
                                         Actor(ws.human(), None))
        if result.ok:  # this session acts with the new permissions at once
            who.permissions = ws.participant(who.name).permissions
            self.host.refresh_decorations()
        self.host.show(result)
        return result
