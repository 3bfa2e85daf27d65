"""The command line's team commands: ``loom users`` (who exists and what each may do) and
``loom migrate --to`` (move a workspace between SQLite and PostgreSQL).

Permission changes run through the executor's ``grant`` verb as the person at the
terminal, so nobody gives away a permission they do not hold, nor raises their own.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loom.commands import ast
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


def _wanted(args: argparse.Namespace) -> tuple[str, ...] | None:
    if getattr(args, "preset", None):
        return PRESETS[args.preset]
    if getattr(args, "permissions", None):
        listed = tuple(p.strip() for chunk in args.permissions for p in chunk.split(",")
                       if p.strip())
        unknown = [p for p in listed if p not in perms.ORDER]
        if unknown:
            raise LoomError("INVALID_SYNTAX", f"unknown permission {unknown[0]}",
                            "permissions: " + ", ".join(perms.ORDER))
        return listed
    return None


def _grant(app: Any, name: str, wanted: tuple[str, ...]) -> int:
    me = app.me()
    result = app.executor.execute(ast.Grant(participant=name, permissions=wanted),
                                  app.actor(None, me))  # type: ignore[arg-type]
    _print(result.text, err=not result.ok)
    return 0 if result.ok else 1


def cmd_users(args: argparse.Namespace, app: Any) -> int:
    """``loom users [list|add|set]``."""
    ws = app.ws
    action = args.action or "list"
    if action == "list":
        me = app.participant
        for p in ws.participants():
            shown = ", ".join(p.permissions or []) or "(none)"
            marker = " (you)" if p.name == me else ""
            _print(f"{p.name:<20} {p.kind:<6} {p.role or '-':<13} {shown}{marker}")
        return 0
    name = (args.name or "").strip()
    if not name:
        raise LoomError("INVALID_SYNTAX", f"loom users {action} needs a NAME",
                        f"loom users {action} alice")
    wanted = _wanted(args)
    if action == "add":
        if ws.find_participant(name) is not None:
            raise LoomError("CONFLICT", f'participant "{name}" already exists',
                            f"change what they may do: loom users set {name} --preset reader")
        kind = "model" if args.model else "human"
        role = args.role or ("collaborator" if args.model else "human")
        # created with nothing, then given what the person at the terminal may give
        ws.ensure_participant(name, kind, role, (), loom_aware=not args.model)
        if wanted is None:
            wanted = PRESETS["writer"] if not args.model else ()
        if not wanted:
            _print(f'✓ added {name} ({kind}) with no permissions')
            return 0
        return _grant(app, name, wanted)
    if action == "set":
        if wanted is None:
            raise LoomError("INVALID_SYNTAX", "say what they may do",
                            "--preset writer|reader|none or --permissions a,b")
        ws.participant(name)  # NOT_FOUND with the name when absent
        return _grant(app, name, wanted)
    raise LoomError("INVALID_SYNTAX", f"unknown action {action}", "list, add or set")


def add_users_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("list", "add", "set"),
                   help="list (default), add a participant, or set what one may do")
    p.add_argument("name", nargs="?")
    p.add_argument("--model", action="store_true", help="add a model participant")
    p.add_argument("--role", help="human, collaborator or subject (default by kind)")
    p.add_argument("--preset", choices=tuple(PRESETS),
                   help="writer: every permission; reader: look, read documents, other "
                   "trees; none")
    p.add_argument("--permissions", action="append",
                   help="exactly these, comma-separated: " + ", ".join(perms.ORDER))


def cmd_migrate(args: argparse.Namespace) -> int:
    """``loom migrate --to TARGET``: copy the workspace (``--db``) into an empty one."""
    from loom.llm.keys import database_password
    from loom.store.backend import is_url, redact_url
    from loom.store.db import default_target, open_database
    from loom.store.transfer import copy_workspace

    source_ref = args.db or default_target()
    if str(source_ref) == str(args.to):
        raise LoomError("INVALID_SYNTAX", "the source and the target are the same",
                        "loom --db SOURCE migrate --to TARGET")
    source = open_database(source_ref, password=database_password)
    target = open_database(args.to, password=database_password)
    shown = redact_url(str(args.to)) if is_url(str(args.to)) else str(args.to)
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
    p.add_argument("--to", required=True,
                   help="the empty target: postgresql://user@host/dbname or an SQLite file")

