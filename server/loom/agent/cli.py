"""``loom agent``'s arguments, cheap to import (the CLI builds every parser at start-up);
the work is in :mod:`loom.agent.runner`."""

from __future__ import annotations

import argparse

DEFAULT_NAME = "collaborator"  # = participant.DEFAULT_NAME
ROLES = ("research collaborator", "analysis assistant")  # = participant.AGENT_ROLES
DEFAULT_SETTLE_S = 30.0  # = triggers.DEFAULT_SETTLE_S


def add_agent_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tree", help="tree id, unique id prefix, or exact title")
    p.add_argument("--ask", metavar="MESSAGE", nargs="?", const="",
                   help="take one turn for this message (no message: look and help)")
    p.add_argument("--auto", action="store_true",
                   help="keep running: answer @-annotations and take a turn when the human "
                   "pauses")
    p.add_argument("--approve", action="store_true",
                   help="ask before each write (respond, annotate, link, edit, write, continue)")
    p.add_argument("--name", default=DEFAULT_NAME, help="the collaborator's participant name")
    p.add_argument("--role", choices=ROLES, help="permission preset")
    p.add_argument("--profile", help="model profile for the collaborator (config.toml)")
    p.add_argument("--max-iterations", type=int, default=None, help="model calls per turn")
    p.add_argument("--settle", type=float, default=DEFAULT_SETTLE_S,
                   help="--auto: seconds without human changes before a turn")
    p.add_argument("--show", action="store_true", help="print the conversation and exit")


def main_agent(args: argparse.Namespace) -> int:
    from loom.agent.runner import main_agent as run

    return run(args)
