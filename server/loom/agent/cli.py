"""``loom agent``: its arguments (cheap to import: the CLI builds every parser at start-up)
and the headless front end around :class:`loom.agent.runner.Agent`, which is imported only
when the command runs."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom.agent.loop import AgentEvent, Approver, EventSink
    from loom.agent.runner import Agent
    from loom.agent.transcript import TurnRecord
    from loom.app import App

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
    p.add_argument("--explore", metavar="OPTIONS", nargs="?", const="",
                   help='explore the tree on its own and print its progress: the options '
                   'of → explore (from X depth:D n:N judge:"…" budget:TOKENS)')


def _printer(out: Any = None, err: Any = None) -> EventSink:
    out = out or sys.stdout
    err = err or sys.stderr

    def write(stream: Any, text: str) -> None:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()

    def on_event(ev: AgentEvent) -> None:
        if ev.kind == "said":
            write(out, ev.text)
        elif ev.kind == "think":
            n = ev.data.get("lines", 0)
            write(out, f"▸ think (collapsed, {n} line{'' if n == 1 else 's'})")
        elif ev.kind == "result":
            line = str(ev.data.get("line", "")).split("\n", 1)[0]
            write(out, f"{line}  {ev.text}")
        elif ev.kind == "notice":
            write(err, f"· {ev.text}")
        elif ev.kind == "done":  # the error a turn ended on (said once, however it came)
            turn = ev.data.get("turn")
            if turn is not None and turn.error:
                write(err, turn.error)
            write(err, ev.text)

    return on_event


def _terminal_approver() -> Approver:
    async def approve(command: str) -> bool:
        import asyncio

        def prompt() -> str:
            sys.stderr.write(f"allow {command}? [y/N] ")
            sys.stderr.flush()
            return sys.stdin.readline()

        answer = await asyncio.to_thread(prompt)
        return answer.strip().lower() in ("y", "yes")

    return approve


def _ends_the_run(turn: TurnRecord) -> bool:
    """A turn refused for permissions (Loom's, or the database's for this role): every
    later turn would be refused the same way, so ``loom agent`` stops, exit status 1."""
    return turn.stop_reason == "error" and (turn.error or "").startswith(
        "✗ PERMISSION_DENIED")


async def _run_cli(agent: Agent, args: argparse.Namespace) -> int:
    import asyncio

    from loom.agent.triggers import ask

    printer = _printer()
    loop = asyncio.get_running_loop()
    quit_ = threading.Event()
    refused: list[TurnRecord] = []

    def on_event(ev: AgentEvent) -> None:
        printer(ev)
        turn = ev.data.get("turn") if ev.kind == "done" else None
        if turn is not None and _ends_the_run(turn):
            refused.append(turn)
            quit_.set()

    def interrupt() -> None:  # Ctrl-C stops the turn; again (or when idle) quits
        if agent.busy and not agent._cancel.is_set():
            agent.stop()
        else:
            quit_.set()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)
    status = 0
    if args.ask is not None:
        turn = await agent.run_turn(ask(args.ask), on_event)
        status = 1 if turn.stop_reason == "error" else 0
    if refused:
        return 1
    if args.auto:
        print(f"· {agent.name} is watching \"{agent.tree.title}\" (Ctrl-C to quit)",
              file=sys.stderr)
        await agent.watch(on_event, stop=quit_)
    elif args.ask is None:  # interactive: each line is an ask; @-annotations in between
        while not quit_.is_set():
            for turn_input in await asyncio.to_thread(agent.pending):
                await agent.run_turn(turn_input, on_event)
            sys.stderr.write(f"ask {agent.name}> ")
            sys.stderr.flush()
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            if line.strip():
                await agent.run_turn(ask(line.strip()), on_event)
    return 1 if refused else status


def main_agent(args: argparse.Namespace, app: App | None = None) -> int:
    """``loom agent TREE [--ask MESSAGE] [--auto] [--approve]`` (headless), as the person
    at this terminal (``app``: the CLI's, which knows who that is; else opened here).
    A database that refuses this role's writes is a ``✗ PERMISSION_DENIED``, raised (the
    CLI prints it, exit status 1), never a traceback."""
    from loom.store.backend import storage_error
    from loom.store.orm import pw

    try:
        return _main_agent(args, app)
    except pw.DatabaseError as err:
        raise storage_error(err) from None


def _main_agent(args: argparse.Namespace, app: App | None) -> int:
    from loom.agent.participant import AgentSpec
    from loom.agent.runner import Agent
    from loom.agent.transcript import SqliteTurnLog, render_conversation
    from loom.app import open_app
    from loom.llm.base import ModelError
    from loom.model import permissions as perms

    if app is None:
        app = open_app(getattr(args, "db", None),
                       participant=getattr(args, "participant", None))
    tree = app.ws.find_tree(args.tree)
    me = app.me()
    if args.show:  # a read: it makes no collaborator
        perms.require_read(me.permissions)
        turns = SqliteTurnLog(app.ws).turns(args.name, tree.id)
        sys.stdout.write(render_conversation(turns, args.name, tree.title, app.ws.clock()))
        return 0
    spec = AgentSpec(name=args.name, role=args.role, profile=args.profile)
    if getattr(args, "explore", None) is not None:
        from loom.agent.explore.cli import run_exploration

        return run_exploration(app.executor, app.explorations(), app.actor(tree, me), spec,
                               args.explore)
    try:
        # the rule the editor applies too (participant.may_start): no collaborator that
        # can do more than the person starting it
        agent = Agent(app.ws, app.executor, tree, spec=spec,
                      approve=_terminal_approver() if args.approve else None,
                      autonomous=args.auto, settle_s=args.settle, hooks=app.agent_hooks(),
                      starter=me)
    except ModelError as err:  # no usable collaborator model: say how to configure one
        sys.stderr.write(err.render() + "\n")
        return 1
    from loom.llm.config import agent_model_caveat

    caveat = agent_model_caveat(agent.profile)
    if caveat is not None:
        sys.stderr.write(f"! {caveat[0]}\n  hint: {caveat[1]}\n")
    if args.max_iterations is not None:
        agent.budgets.max_iterations = max(1, args.max_iterations)
    import asyncio

    return asyncio.run(_run_cli(agent, args))
