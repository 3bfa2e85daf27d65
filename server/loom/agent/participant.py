"""The collaborator participant: its identity, role-based permissions, model profile and
loom-aware flag.

The collaborator is an ordinary participant of the workspace (``kind="model"``,
``role="collaborator"``): its permissions live in the store and are checked by the
executor for every command it sends, exactly as for a human. Its operational memory is the
per-participant pins, stashes and trace every participant has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.commands import syntax
from loom.commands.context import Actor
from loom.commands.executor import Executor
from loom.errors import LoomError
from loom.model import permissions as perms
from loom.store.schema import Participant
from loom.store.workspace import Workspace

DEFAULT_NAME = "collaborator"
DEFAULT_ROLE = "research collaborator"
PARTICIPANT_ROLE = "collaborator"  # the ``Participant.role`` column
#: Roles a collaborator may take (the permission presets of seeds 000/001).
AGENT_ROLES = ("research collaborator", "analysis assistant")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,39}$")


@dataclass(frozen=True)
class AgentSpec:
    """What the collaborator should be. ``role``/``permissions`` left ``None`` keep what an
    existing participant has (a human may have changed them); a new one gets the role's
    preset (``research collaborator``: all)."""

    name: str = DEFAULT_NAME
    role: str | None = None
    permissions: tuple[str, ...] | None = None
    profile: str | None = None  # the instruct model's profile name (config.toml)
    loom_aware: bool = True

    def wanted(self) -> list[str] | None:
        """The permission set asked for explicitly, or None."""
        if self.permissions is not None:
            unknown = sorted(set(self.permissions) - set(perms.ORDER))
            if unknown:
                raise LoomError("INVALID_SYNTAX", f"unknown permission {unknown[0]!r}",
                                "permissions: " + ", ".join(perms.ORDER))
            return perms.ordered(self.permissions)
        if self.role is not None:
            if self.role not in AGENT_ROLES:
                raise LoomError("INVALID_SYNTAX", f"unknown collaborator role {self.role!r}",
                                "roles: " + ", ".join(AGENT_ROLES))
            return perms.ordered(perms.ROLES[self.role])
        return None


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise LoomError("INVALID_SYNTAX", f"{name!r} is not a usable agent name",
                        "a letter, then letters, digits, _ . or - (annotations address it "
                        "as @name)")
    return name


def may_start(ws: Workspace, starter: Participant, spec: AgentSpec | None = None) -> None:
    """The one rule for who may start or ask a collaborator, wherever it is started from
    (``loom agent``, the editor's ``loom.askCollaborator`` and its triggers, any later
    front end): no escalation through delegation. The collaborator acts with its own
    permissions, so all of them must be the starter's: those it holds, those a new one is
    born with, and those a role or permissions asked for would give it (changing it takes
    holding both). ``PERMISSION_DENIED``, naming what it would hold beyond the starter's,
    otherwise; checked before anything is made or written."""
    spec = spec or AgentSpec()
    existing = ws.find_participant(spec.name)
    wanted = spec.wanted()
    holds: list[str] = []
    if existing is not None:
        holds += existing.permissions or []
    if wanted is not None:
        holds += wanted
    elif existing is None:
        holds += perms.ROLES[DEFAULT_ROLE]
    beyond = perms.beyond(holds, starter.permissions or [])
    if beyond:
        who = "the collaborator" if spec.name == DEFAULT_NAME else f'the collaborator "{spec.name}"'
        them = "them" if len(beyond) > 1 else "it"
        raise LoomError("PERMISSION_DENIED", f"{who} would hold {', '.join(beyond)}, which "
                        f"{starter.name} does not",
                        f"ask someone who holds {them} to run the collaborator, or to grant "
                        f"{them} to you (loom users grant {starter.name} {beyond[0]})")


def ensure_agent(ws: Workspace, spec: AgentSpec | None = None,
                 by: Participant | None = None) -> Participant:
    """Create the collaborator, or load it and apply what ``spec`` asks for explicitly
    (granted by ``by``, the participant starting it, through the executor; by default the
    human). Whether ``by`` may is :func:`may_start`'s to say, first."""
    spec = spec or AgentSpec()
    name = check_name(spec.name)
    wanted = spec.wanted()
    existing = ws.find_participant(name)
    if existing is not None and (existing.kind != "model" or
                                 existing.role != PARTICIPANT_ROLE):
        raise LoomError("CONFLICT", f'"{name}" is already a {existing.role or existing.kind} '
                        "participant", "give the collaborator another name")
    if existing is None:
        initial = wanted if wanted is not None else perms.ROLES[DEFAULT_ROLE]
        return ws.ensure_participant(name, "model", PARTICIPANT_ROLE, initial,
                                     loom_aware=spec.loom_aware, profile=spec.profile)
    if wanted is not None and list(existing.permissions or []) != wanted:
        # the starter's configuration asks for it: they grant, through the executor
        result = Executor(ws).execute(syntax.Grant(participant=name, permissions=tuple(wanted)),
                                      Actor(by or ws.human(), None))
        if not result.ok:
            raise LoomError(result.code or "PERMISSION_DENIED", result.message or result.text,
                            result.hint)
        existing = ws.participant(name)
    changes: dict[str, object] = {}
    if spec.profile is not None and existing.profile != spec.profile:
        changes["profile"] = spec.profile
    if existing.loom_aware != spec.loom_aware:
        changes["loom_aware"] = spec.loom_aware
    if changes:
        ws.update_participant(existing, **changes)
    return existing


def agents(ws: Workspace) -> list[Participant]:
    return ws.participants(kind="model", role=PARTICIPANT_ROLE)

