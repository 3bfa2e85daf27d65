"""The command line's team commands: ``loom users`` (who exists and what each may do),
``loom migrate --to`` (move a workspace between SQLite and PostgreSQL) and ``loom purge``
(delete for good what was deleted more than 30 days ago).

Permission changes run through the executor's ``grant`` verb as the person at the
terminal, so nobody gives away a permission they do not hold, nor raises their own.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loom.errors import LoomError
from loom.model import permissions as perms

PRESETS: dict[str, tuple[str, ...]] = {
    "writer": perms.ORDER,  # everything a human may do
    "reader": (perms.LOOM_AWARE, perms.DOC_READ, perms.CROSS_TREE),
    "none": (),
}


def _print(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def _permission_names(words: list[str]) -> list[str]:
    """Permission names as typed: full (``loom_write``), short (``write``) or ``all``;
    a comma-separated list counts as several. Unknown names are refused by name."""
    by_short = {short: full for full, short in perms.SHORT.items()}
    out: list[str] = []
    for chunk in words:
        for word in (w.strip() for w in chunk.split(",")):
            if not word:
                continue
            named = list(perms.ORDER) if word == "all" else [by_short.get(word, word)]
            unknown = [p for p in named if p not in perms.ORDER]
            if unknown:
                raise LoomError("INVALID_SYNTAX", f"unknown permission {word}",
                                "permissions: " + ", ".join(perms.ORDER))
            out += [p for p in named if p not in out]
    return out


def _wanted(args: argparse.Namespace) -> tuple[str, ...] | None:
    """Exactly what ``--preset`` or ``--permissions`` asks for, or None if neither."""
    if getattr(args, "preset", None):
        return PRESETS[args.preset]
    if getattr(args, "permissions", None):
        return tuple(_permission_names(args.permissions))
    return None


def _grant_command(name: str, wanted: tuple[str, ...] | list[str]) -> Any:
    from loom.commands import syntax  # (the parsers are built at every start: import on use)

    return syntax.Grant(participant=name, permissions=tuple(wanted))


def _grant(app: Any, name: str, wanted: tuple[str, ...] | list[str]) -> int:
    """A ``grant`` command by the participant at this terminal, through the executor."""
    result = app.executor.execute(_grant_command(name, wanted),
                                  app.actor(None, app.me()))  # type: ignore[arg-type]
    _print(result.text, err=not result.ok)
    return 0 if result.ok else 1


def _list(app: Any) -> int:
    me = app.participant
    for p in app.ws.participants():
        have = ", ".join(perms.ordered(p.permissions or [])) or "no permissions"
        marker = " (you)" if p.name == me else ""
        _print(f"{p.name:<16} {p.kind:<6} {p.role or '-':<22} {have}{marker}")
    return 0


class _Undo(Exception):
    """Raised inside a transaction to roll back what a refused command wrote."""


def _giver(app: Any, wanted: tuple[str, ...] | list[str]) -> Any:
    """The participant at this terminal, if they may give ``wanted``; else a ``✗`` that
    says who may. Checked before anything is written, so ``users add`` never prints
    "✓ added bob", then fails, leaving bob with nothing and the giver made with nothing."""
    from loom.store.workspace import HUMAN

    ws, name = app.ws, app.participant
    me = ws.find_participant(name)
    if me is None and name not in (HUMAN, ws.owner()):
        raise LoomError("PERMISSION_DENIED", f'"{name}" is no participant of this workspace '
                        "yet, so has no permissions to give", _who_may(ws, wanted))
    me = app.me()
    missing = [p for p in wanted if p not in (me.permissions or [])]
    if missing:
        raise LoomError("PERMISSION_DENIED", f"{missing[0]} is not {name}'s to give",
                        _who_may(ws, wanted))
    return me


def _who_may(ws: Any, wanted: tuple[str, ...] | list[str]) -> str:
    owner = ws.owner()
    able = [p.name for p in ws.participants(kind="human")
            if set(wanted) <= set(p.permissions or [])]
    if owner:
        return (f"run it as the database's owner ({owner}): loom --db "
                f"postgresql://{owner}@HOST/DB users … (no --participant, no "
                "LOOM_PARTICIPANT); docs/team.md" + (f", or ask {', '.join(able[:3])}"
                                                     if able else ""))
    return ("run it as someone who holds them: " + ", ".join(able[:3]) if able
            else "run it as the human (--participant human)")


def _add(app: Any, args: argparse.Namespace) -> int:
    from loom.agent.participant import check_name

    ws = app.ws
    try:
        name = check_name(args.name)
    except LoomError as err:  # the same rule as agents' names (annotations say @name)
        raise LoomError(err.code, f"{args.name!r} is not a usable participant name",
                        err.hint) from None
    if ws.find_participant(name) is not None:
        raise LoomError("CONFLICT", f'participant "{name}" already exists',
                        f"change what they may do: loom users grant {name} PERM… or "
                        f"loom users set {name} --preset reader")
    kind = "model" if args.model else args.kind
    role = args.role or ("collaborator" if kind == "model" else "human")
    wanted = _wanted(args) or ()  # checked before anything is written
    _giver(app, wanted)
    # created with nothing and given what was asked, in one transaction: all or nothing
    try:
        with ws.all_or_nothing():
            ws.ensure_participant(name, kind, role, (), loom_aware=kind == "human")
            if wanted:
                result = app.executor.execute(
                    _grant_command(name, wanted),
                    app.actor(None, app.me()))  # type: ignore[arg-type]
                if not result.ok:
                    raise _Undo(result.text)
    except _Undo as refused:
        _print(str(refused), err=True)
        return 1
    if not wanted:
        _print(f"✓ added {name} ({kind}, {role}) with no permissions\n"
               f"  grant some: loom users grant {name} {' '.join(perms.SHORT.values())}")
        return 0
    _print(f"✓ added {name} ({kind}, {role})\n{result.text}")
    return 0


def _change(app: Any, args: argparse.Namespace) -> int:
    """grant / revoke / set: the new permission set, as one grant command."""
    ws = app.ws
    _giver(app, ())  # (a name nobody added is not made, with nothing, by asking)
    who = ws.participant(args.name)  # NOT_FOUND with the name when absent
    have = list(who.permissions or [])
    if args.action == "set":
        wanted = _wanted(args)
        if wanted is None:
            raise LoomError("INVALID_SYNTAX", "say what they may do",
                            "--preset writer|reader|none or --permissions a,b")
        return _grant(app, who.name, wanted)
    named = _permission_names(args.perms)
    if args.action == "grant":  # with what each needs (write needs aware), or it does nothing
        wanted_list = [*have]
        for p in named:
            wanted_list += [q for q in perms.with_requirements([p]) if q not in wanted_list]
    else:  # revoke: a permission whose requirement goes stops working, so it goes too
        wanted_list = sorted(perms.effective(set(have) - set(named)), key=perms.ORDER.index)
    return _grant(app, who.name, wanted_list)


def _roles(app: Any, args: argparse.Namespace) -> int:
    """``loom users roles --sql``: the SQL that makes the database refuse what each
    person's Loom permissions do not allow, for the current schema (docs/team.md)."""
    from loom.store import roles
    from loom.store.db import SCHEMA_VERSION

    if not args.sql:
        raise LoomError("INVALID_SYNTAX", "say what to print", "loom users roles --sql "
                        "[--reader NAME…] [--writer NAME…] | psql …  (docs/team.md)")
    if not app.ws.dialect.postgres:
        raise LoomError("INVALID_SYNTAX", "database roles are PostgreSQL's: this workspace "
                        "is an SQLite file", "--db postgresql://OWNER@HOST/DB")
    sys.stdout.write(roles.script(SCHEMA_VERSION, args.reader or (), args.writer or ()))
    sys.stdout.flush()
    return 0


def cmd_users(args: argparse.Namespace, app: Any) -> int:
    """``loom users [list|add|grant|revoke|set]``: every change is a ``grant`` command by
    this terminal's participant, so nobody gives what they lack nor raises themselves."""
    action = args.action or "list"
    if action == "list":
        return _list(app)
    if action == "roles":
        return _roles(app, args)
    if action == "add":
        return _add(app, args)
    return _change(app, args)


def add_users_arguments(p: argparse.ArgumentParser) -> None:
    users = p.add_subparsers(dest="action")
    users.add_parser("list", help="every participant, its kind, role and permissions")
    for action, what in (("grant", "give permissions (all, or names such as write, "
                                   "loom_write; what one needs comes with it)"),
                         ("revoke", "take permissions away (and those that need them)")):
        u = users.add_parser(action, help=what)
        u.add_argument("name")
        u.add_argument("perms", nargs="+", metavar="PERM")
    u = users.add_parser("add", help="add a participant (with no permissions unless given)")
    u.add_argument("name")
    u.add_argument("--kind", choices=("human", "model"), default="human")
    u.add_argument("--model", action="store_true", help="the same as --kind model")
    u.add_argument("--role", help="what it is for (default: human, or collaborator for a "
                   "model)")
    _add_wanted(u)
    u = users.add_parser("set", help="set exactly what a participant may do")
    u.add_argument("name")
    _add_wanted(u)
    u = users.add_parser("roles", help="PostgreSQL: the SQL giving each person's database "
                         "role only what their Loom permissions need (pipe it to psql as "
                         "the owner; docs/team.md)")
    u.add_argument("--sql", action="store_true", help="print the SQL (idempotent)")
    u.add_argument("--reader", action="extend", nargs="+", metavar="NAME",
                   help="a login role in loom_team: reads, writes only their own rows")
    u.add_argument("--writer", action="extend", nargs="+", metavar="NAME",
                   help="a login role in loom_writer: also adds to the trees")


def _add_wanted(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=tuple(PRESETS),
                   help="writer: every permission; reader: look, read documents, other "
                   "trees; none")
    p.add_argument("--permissions", action="append",
                   help="exactly these, comma-separated: " + ", ".join(perms.ORDER))


def cmd_migrate(args: argparse.Namespace) -> int:
    """``loom migrate``: bring the workspace's schema up to date (on PostgreSQL, as its
    owner, with the team's grants for any new table); ``--to TARGET``: copy the workspace
    (``--db``) into an empty one."""
    from loom.llm.keys import database_password
    from loom.redact import redact
    from loom.store.backend import is_url
    from loom.store.db import SCHEMA_VERSION, default_target, open_database
    from loom.store.transfer import copy_workspace

    source_ref = args.db or default_target()
    if args.to is None:
        open_database(source_ref, password=database_password).close()  # opening migrates
        shown = redact(str(source_ref)) if is_url(str(source_ref)) else str(source_ref)
        _print(f"✓ {shown} holds schema v{SCHEMA_VERSION}")
        return 0
    if str(source_ref) == str(args.to):
        raise LoomError("INVALID_SYNTAX", "the source and the target are the same",
                        "loom --db SOURCE migrate --to TARGET")
    source = open_database(source_ref, password=database_password)
    target = open_database(args.to, password=database_password)
    shown = redact(str(args.to)) if is_url(str(args.to)) else str(args.to)
    try:
        report = copy_workspace(source, target, progress=lambda table, n: _print(
            f"  {table:<14} {n:>9,} rows") if n else None)
    finally:
        source.close()
        target.close()
    _print(f"✓ copied {report.rows:,} rows in {len(report.tables)} tables to {shown}; "
           "every table's count and content hash match the source")
    return 0


def add_migrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", help="copy into this empty target: postgresql://user@host/dbname "
                   "or an SQLite file (without it: bring the schema up to date)")



def cmd_purge(args: argparse.Namespace, app: Any) -> int:
    """``loom purge``: now what every language server does on start-up and daily; on
    PostgreSQL only as the database's owner."""
    ws = app.ws
    why = ws.purge_refusal()
    if why is not None:
        raise LoomError("PERMISSION_DENIED", why, "run it as the owner: loom --db "
                        "postgresql://OWNER@HOST/DB purge (docs/team.md)")
    purged = ws.purge_expired()
    if not purged:
        _print("✓ nothing to purge: nothing was deleted more than 30 days ago")
        return 0
    _print(f"✓ {purged.line()}")
    return 0
