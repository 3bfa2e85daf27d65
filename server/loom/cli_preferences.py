"""The command line's preference-log commands: ``loom export-preferences`` (DPO pairs or
the raw event log), ``loom stats`` (per-model win rates, Bradley–Terry strengths and the
position effect) and ``loom settings`` (a tree's ``shuffle`` and ``blind``, through the
executor's ``settings`` verb)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from loom.errors import LoomError


def _print(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def _on_off(value: str | None) -> bool | None:
    return None if value is None else value == "on"


def export_preferences(args: argparse.Namespace, app: Any) -> int:
    from loom.interchange import preferences as export

    me = app.me()
    trees, left = export.readable_trees(app.ws, me, args.trees)
    for line in left:
        _print(line, err=True)
    who = None
    if args.of:
        person = app.ws.find_participant(args.of)
        if person is None:
            raise LoomError("NOT_FOUND", f'participant "{args.of}" does not exist',
                            "loom users lists them")
        who = person.id
    lines = (export.pair_lines if args.format == "dpo" else export.event_lines)(
        app.ws, trees, who)
    count = 0
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(line + "\n")
                count += 1
        what = "pair" if args.format == "dpo" else "event"
        _print(f"✓ wrote {count} {what}{'' if count == 1 else 's'} to {args.out}")
    else:
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    return 0


def stats(args: argparse.Namespace, app: Any) -> int:
    from loom.interchange import preference_stats, preferences

    trees, _left = preferences.readable_trees(app.ws, app.me(), args.trees)
    _print(preference_stats.render([t.title for t in trees],
                                   preference_stats.stats(app.ws, trees)))
    return 0


def settings(args: argparse.Namespace, app: Any) -> int:
    from loom.commands import syntax

    tree = app.ws.find_tree(args.tree)
    result = app.executor.execute(
        syntax.TreeSettings(shuffle=_on_off(args.shuffle), blind=_on_off(args.blind)),
        app.actor(tree))
    _print(result.text, err=not result.ok)
    if not result.ok:
        return 1
    return 0


def add_parsers(sub: Any, run: dict[str, Any]) -> None:
    """The three subcommands; ``run`` maps each name to the function ``loom`` calls."""
    s = sub.add_parser("export-preferences", help="what writers chose, as DPO pairs "
                       "(prompt/chosen/rejected) or the raw event log (JSON lines)")
    s.add_argument("trees", nargs="*", metavar="TREE",
                   help="these trees (default: every tree you may read)")
    s.add_argument("--format", choices=("dpo", "jsonl"), default="dpo")
    s.add_argument("--of", metavar="NAME", help="only this participant's choices")
    s.add_argument("-o", "--out", metavar="FILE")
    s.set_defaults(fn=run["export-preferences"])
    s = sub.add_parser("stats", help="per-model win rates (Bradley–Terry) and the position "
                       "effect, from the recorded choices")
    s.add_argument("trees", nargs="+", metavar="TREE")
    s.set_defaults(fn=run["stats"])
    s = sub.add_parser("settings", help="a tree's preference settings: shuffle sibling "
                       "order, blind model names")
    s.add_argument("tree")
    s.add_argument("--shuffle", choices=("on", "off"))
    s.add_argument("--blind", choices=("on", "off"))
    s.set_defaults(fn=run["settings"])
