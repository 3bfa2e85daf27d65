"""The ``loom`` command line: a thin shell over the same executor the editor uses."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loom.errors import LoomError
from loom.render.formats import error
from loom.render.text import plural

if TYPE_CHECKING:
    from loom.commands.results import Result
    from loom.store.workspace import TreeCounts

# Each command imports what it needs when it runs: `loom trees` must not pay for the
# command grammar, the executor or the model providers (bench/bench_startup.py).


def _print(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()


def _fail(err: LoomError | str, code: int = 1) -> int:
    if isinstance(err, LoomError):
        _print(error(err.code, err.message, err.hint), err=True)
    else:
        _print(err, err=True)
    return code


def _app(args: argparse.Namespace, models: bool = True):
    from loom.app import open_app
    from loom.store.workspace import HUMAN

    app = open_app(args.db, use_default_subject=models,
                   participant=getattr(args, "participant", None))
    named = getattr(args, "participant", None)
    if named and named != HUMAN and app.ws.find_participant(named) is None \
            and named != app.ws.owner():
        # a mistyped --participant must not make a participant whose every command is
        # refused: bad input writes nothing
        raise LoomError("NOT_FOUND", f'participant "{named}" does not exist',
                        f"add them first: loom users add {named} (and grant what they need)")
    return app


def _run(app, command) -> Result:  # type: ignore[no-untyped-def]
    """A command as the person at this terminal, through the executor like every change."""
    who = app.me()
    tree = app.ws.tree_or_none(who.current_tree) if who.current_tree else None
    return app.executor.execute(command, app.actor(tree, who))


def cmd_new(args: argparse.Namespace) -> int:
    from loom.commands import syntax

    app = _app(args, models=False)
    result = _run(app, syntax.NewTree(title=args.title, mode=args.mode,
                                   description=args.description or "",
                                   system_context=args.system or "", text=args.text or ""))
    if not result.ok:
        return _fail(result.text)
    tree = app.ws.tree(result.data["tree"])
    _print(f'✓ created tree "{tree.title}" ({tree.mode}) {tree.id}')
    return 0


def cmd_trees(args: argparse.Namespace) -> int:
    app = _app(args, models=False)
    rows = app.ws.trees(include_archived=args.all)
    if not rows:
        _print("no trees yet: loom new TITLE, loom import FILE, or loom demo")
        return 0
    for tree, _count in rows:
        archived = " (archived)" if tree.archived else ""
        _print(f'{tree.id}  {_counts_text(app.ws.tree_counts(tree))}  {tree.mode:<8}  '
               f'"{tree.title}"{archived}')
    return 0


def _apart(c: TreeCounts) -> str:
    return c.apart()


def _counts_text(c: TreeCounts) -> str:
    """``11 nodes`` as ``→ tree`` counts them, and what is counted apart, said as such."""
    text = f"{c.nodes:>6} {'node' if c.nodes == 1 else 'nodes'}"
    return text + (f" (not counted: {_apart(c)})" if _apart(c) else "")


def _stream_printer():
    started: set[int] = set()

    def on_delta(index: int, piece: str) -> None:
        if index not in started:
            started.add(index)
            sys.stderr.write(f"\n[{index + 1}] ")
        sys.stderr.write(piece)
        sys.stderr.flush()

    return on_delta, started


def cmd_do(args: argparse.Namespace) -> int:
    app = _app(args)
    tree = app.ws.find_tree(args.tree)
    actor = app.actor(tree, app.ws.participant(args.as_) if args.as_ else None)
    status = 0
    for i, (typed, cmd) in enumerate(_batched(args.commands)):
        on_delta, started = _stream_printer() if sys.stderr.isatty() else (None, set())
        progress = _exploration_printer(app, typed, tree, args.format)
        result = app.executor.execute(cmd, actor, on_delta=on_delta,
                                      typed=None if cmd is typed else typed)
        if started:
            sys.stderr.write("\n")
        if args.format == "text":
            if i:
                _print("")
            _print(result.text)
        else:
            _print(_machine(result.model_dump(exclude_none=True), args.format))
        # (a started exploration is followed to its end: _explored_here)
        if not result.ok or (progress is not None
                             and not _explored_here(app, actor, progress, args.format)):
            status = 1
    return status


def _batched(arguments: list[str]) -> list[tuple[str, Any]]:
    """Each argument is a command line, or consecutive lines run in order as a model's
    or the shell's are (seed 000's batching), each one a result: ``(typed, command)``."""
    from loom.commands.extract import typed_commands

    out: list[tuple[str, Any]] = []
    for arg in arguments:
        if "\n" not in arg.strip():
            out.append((arg, arg))
            continue  # (a line without an arrow is a command here, as one argument is)
        out += [(typed, typed if cmd is None else cmd) for typed, cmd in typed_commands(arg)]
    return out


def _exploration_printer(app, line: str, tree, fmt: str):  # type: ignore[no-untyped-def]
    """For a line that starts an exploration: a printer of its steps, attached before it
    starts and holding them until the command's own line is printed (else None)."""
    from loom.commands import syntax
    from loom.commands.executor import parse_line

    cmd = parse_line(line)
    if not isinstance(cmd, syntax.Explore) or cmd.end:
        return None
    from loom.agent.explore.cli import HeldPrinter

    # steps on stdout as `loom agent --explore` prints them; machine formats keep stdout
    # for their records
    printer = HeldPrinter(tree.id, sys.stdout if fmt == "text" else sys.stderr, sys.stderr)
    app.on_explore(printer)
    return printer


def _explored_here(app, actor, printer, fmt: str) -> bool:  # type: ignore[no-untyped-def]
    """The exploration the line started runs in this process's thread, which would die
    with it (`✓ exploring …` and nothing explored): follow it to its end, Ctrl-C
    ending it. Whether it ran to its end."""
    from loom.agent.explore.cli import follow, ran_to_its_end

    sys.stderr.write("· exploring in this process until it ends (Ctrl-C ends it)\n")
    printer.release()
    done = follow(app.executor, app.explorations(), actor)
    if fmt != "text" and done is not None:
        _print(_machine({"ok": ran_to_its_end(done), "text": f"explored: {done.ended}",
                         "data": {"made": done.made, "scored": done.scored,
                                  "pruned": done.pruned, "spent": done.spent,
                                  "budget": done.budget, "ended": done.ended,
                                  "failures": list(done.failures)}}, fmt))
    return ran_to_its_end(done)


def _machine(data: object, fmt: str) -> str:
    """A machine-readable form: one JSON line, or a Loom Protocol document."""
    if fmt == "loom":
        from loom.protocol import dumps

        return dumps(data) + "\n---"
    return json.dumps(data, ensure_ascii=False)


def cmd_shell(args: argparse.Namespace) -> int:
    from loom.shell import run_shell

    app = _app(args)
    tree = app.ws.find_tree(args.tree)
    return run_shell(app, tree)


def cmd_parse(args: argparse.Namespace) -> int:
    from loom.commands import syntax
    from loom.commands.canonical import to_text
    from loom.commands.executor import parse_line

    status = 0
    for line in args.lines:
        cmd = parse_line(line)
        if isinstance(cmd, syntax.ParseError):
            _print(error("INVALID_SYNTAX", cmd.message, cmd.hint))
            status = 1
            continue
        data = {"canonical": to_text(cmd), **cmd.model_dump(by_alias=True, mode="json")}
        _print(_machine(data, args.format).removesuffix("\n---"))
    return status


def cmd_import(args: argparse.Namespace) -> int:
    from loom.commands import syntax

    app = _app(args, models=False)
    result = _run(app, syntax.Import(path=args.file, trust=args.trust, max_mb=args.max_mb))
    if not result.ok:
        return _fail(result.text)
    _print(result.text)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from loom.commands import syntax

    app = _app(args, models=False)
    result = _run(app, syntax.Export(
        tree=args.tree, format=args.format, path=args.out, node=args.node,
        system_context=not args.no_system_context, raw_responses=not args.no_raw,
        agent_prompts=not args.no_agent_prompts, media=args.media))
    if not result.ok:
        return _fail(result.text)
    if "output_base64" in result.data:  # a binary file (a Tapestry weave)
        return _fail(f"✗ INVALID_SYNTAX: a {args.format} export is a binary file\n"
                     f"  hint: give a file to write it to: -o FILE{result.data['extension']}")
    if not args.out and result.text.count("\n"):  # what the format could not hold
        sys.stderr.write(result.text + "\n")
    _print(result.text if args.out else result.data["output"])
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from loom.demo import create_demo, open_in_editor

    app = _app(args, models=False)
    tree = create_demo(app.ws)
    nodes = plural(app.ws.tree_counts(tree).nodes, "node")
    _print(f'✓ demo tree "{tree.title}" ready ({nodes}) {tree.id}')
    if args.no_editor:
        from loom.commands.context import Actor

        _print(app.executor.execute("→ tree from:root depth:8",
                                    Actor(app.ws.human(), tree)).text)
        return 0
    return open_in_editor(app, tree, args.db)


def cmd_uri(args: argparse.Namespace) -> int:
    from loom.uris import node_uri, tree_uri

    app = _app(args, models=False)
    tree = app.ws.find_tree(args.tree)
    if args.node:
        _print(node_uri(tree, app.ws.resolve(tree, args.node)))
    else:
        _print(tree_uri(tree))
    return 0


def cmd_tree(args: argparse.Namespace) -> int:
    """The tree for people: each node's text beside its id, the path and bookmarks marked
    (``→ tree`` keeps the seed's id-only drawing, for models)."""
    from loom.lsp.views import tree_overview
    from loom.model import permissions as perms

    app = _app(args, models=False)
    me = app.me()
    perms.require_read(me.permissions)  # (as → tree would)
    tree = app.ws.find_tree(args.tree)
    perms.require_read(me.permissions, tree=tree.id, home=me.current_tree)
    node, tip = app.ws.position(me, tree)
    _print(tree_overview(app.ws, tree, node, tip, me).text.rstrip("\n"))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Full-text search over every tree (or one), as ``→ search`` through the executor."""
    from loom.commands import syntax

    app = _app(args, models=False)
    tree = app.ws.find_tree(args.tree) if args.tree else None
    result = _run(app, syntax.Search(query=" ".join(args.words),
                                  tree=tree.id if tree is not None else None))
    if not result.ok:
        return _fail(result.text)
    _print(result.text)
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    from loom.llm.base import ModelError
    from loom.llm.summaries import drain

    app = _app(args, models=False)
    if args.tree:
        tree = app.ws.find_tree(args.tree)
        app.ws.enqueue_summary("tree", tree.id, tree.id, priority=0)
    try:
        done = drain(app.ws, limit=args.limit)
    except ModelError as err:
        _print(error("MODEL_ERROR", err.message, err.hint), err=True)
        return 1
    left = app.ws.queued_summaries()
    _print(f"✓ wrote {done} summar{'y' if done == 1 else 'ies'} ({left} still queued)")
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    from loom.agent.cli import main_agent

    # as the person at this terminal (--participant), as every other command: who that
    # is decides whether they may start the collaborator
    return int(main_agent(args, _app(args)) or 0)


def cmd_users(args: argparse.Namespace) -> int:
    from loom.cli_team import cmd_users as users

    return users(args, _app(args, models=False))


def cmd_purge(args: argparse.Namespace) -> int:
    from loom.cli_team import cmd_purge as purge

    return purge(args, _app(args, models=False))


def cmd_migrate(args: argparse.Namespace) -> int:
    from loom.cli_team import cmd_migrate as migrate

    return migrate(args)


def cmd_export_preferences(args: argparse.Namespace) -> int:
    from loom.cli_preferences import export_preferences

    return export_preferences(args, _app(args, models=False))


def cmd_stats(args: argparse.Namespace) -> int:
    from loom.cli_preferences import stats

    return stats(args, _app(args, models=False))


def cmd_settings(args: argparse.Namespace) -> int:
    from loom.cli_preferences import settings

    return settings(args, _app(args, models=False))


def cmd_serve(args: argparse.Namespace) -> int:
    from loom.lsp.server import serve

    return serve(db=args.db, tcp=args.tcp, token_file=args.token_file,
                 participant=args.participant)


def cmd_mcp(args: argparse.Namespace) -> int:
    """The workspace for an MCP client, as ``--participant`` (docs/mcp.md)."""
    try:
        import anyio

        from loom.mcp_server import serve as mcp_serve
        from loom.mcp_server.server import LoomMcpServer
    except ImportError as err:
        raise LoomError("INVALID_SYNTAX", f"loom mcp needs the mcp extra ({err.name} is "
                        "missing)", "pipx install --force 'loom-lsp[mcp]'") from None
    server = LoomMcpServer(_app(args))
    if not args.http:
        anyio.run(mcp_serve.serve_stdio, server)
        return 0
    from loom.lsp import tcp

    host, port = tcp.parse_address(args.http)
    token = tcp.read_token_file(args.token_file) if args.token_file else tcp.new_token()
    anyio.run(mcp_serve.serve_http, server, host, port, token, args.token_file)
    return 0


DESCRIPTION = """Loom: branching trees of human and model writing, from the terminal.
The same arrow commands as the editor and the collaborator, through the same executor."""

EPILOG = """examples:
  loom demo                                  the demo tree, opened in Neovim
  loom trees                                 every tree: id, nodes, mode, title
  loom do "the house" '→ view root'          run command lines in a tree (a title,
                                             a unique start of one, or an id)
  loom tree "the house"                      the tree for people: text beside each id
  loom search "walnut"                       full-text search over every tree
  loom shell "The House at the End of the Lane"

TREE is a tree's id, a unique start of its id, its title, or a unique start of its title.
Errors print "✗ CODE: message" and a hint, and exit 1."""


def _version() -> str:
    """``loom 0.1.0 (Python 3.11.7, /path/to/loom)``: what a bug report needs to say."""
    import platform
    from pathlib import Path

    from loom import __version__

    return (f"loom {__version__} (Python {platform.python_version()}, "
            f"{Path(__file__).resolve().parent})")


#: every subcommand, in the order ``loom -h`` lists them
COMMANDS = ("new", "trees", "do", "shell", "parse", "import", "export", "demo", "uri", "tree",
            "search", "summarize", "agent", "users", "purge", "migrate", "model", "doctor",
            "serve", "mcp", "export-preferences", "stats", "settings")


class _Unbuilt:
    """Stands in for a subcommand's parser that this run does not use: building all
    eighteen took argparse about 12 ms (most of it looking for translations), a tenth of
    ``loom trees``."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _OnlyOne:
    """The subparsers action, building only ``name``'s parser."""

    def __init__(self, sub: Any, name: str) -> None:
        self.sub, self.name = sub, name

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self.sub.add_parser(name, **kwargs) if name == self.name else _Unbuilt()


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (None: none, or one Loom does not have)."""
    words = iter(argv)
    for arg in words:
        if arg in ("--db", "--participant"):
            next(words, None)  # the option's value
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _global_options(p: argparse.ArgumentParser, default: Any = None) -> None:
    p.add_argument("--db", default=default, help="an SQLite file, or "
                   "postgresql://user@host/dbname for a team (password: PGPASSWORD, ~/.pgpass "
                   "or the keyring, never the URL); default: $LOOM_DB, else a file in the "
                   "user data dir")
    p.add_argument("--participant", default=default, help="act as this participant "
                   "(default: $LOOM_PARTICIPANT, on PostgreSQL the database user, else human)")
    p.add_argument("-v", "--verbose", action="store_true",
                   default=False if default is None else default)


def _global_options_after_commands(p: argparse.ArgumentParser) -> None:
    """``loom demo --db FILE`` as well as ``loom --db FILE demo``: every subcommand (and
    ``users``' actions) takes the global options too. Their default there is SUPPRESS, so
    one given before the subcommand is not reset by the subcommand's parser."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for parser in {id(c): c for c in action.choices.values()}.values():
                _global_options(parser, argparse.SUPPRESS)
                _global_options_after_commands(parser)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``only``) the global options and that one command."""
    p = argparse.ArgumentParser(prog="loom", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _global_options(p)
    p.add_argument("--version", action="version", version=_version())
    sub: Any = p.add_subparsers(dest="cmd", required=True)
    if only is not None:
        sub = _OnlyOne(sub, only)

    s = sub.add_parser("new", help="create a tree")
    s.add_argument("title")
    s.add_argument("--mode", choices=("buffer", "dialogue"), default="buffer")
    s.add_argument("--description")
    s.add_argument("--system", help="system context for the subject model")
    s.add_argument("--text", help="the root node's text")
    s.set_defaults(fn=cmd_new)

    s = sub.add_parser("trees", help="list trees")
    s.add_argument("--all", action="store_true", help="include archived trees")
    s.set_defaults(fn=cmd_trees)

    s = sub.add_parser("do", help="run command lines as the human")
    s.add_argument("tree", help="tree id, unique id prefix, or exact title")
    s.add_argument("commands", nargs="+", metavar="'→ …'")
    s.add_argument("--as", dest="as_", help="act as this participant")
    s.add_argument("--format", choices=("text", "json", "loom"), default="text",
                   help="text (the results as shown), or one record per command")
    s.set_defaults(fn=cmd_do)

    s = sub.add_parser("shell", help="an interactive prompt in a tree")
    s.add_argument("tree")
    s.set_defaults(fn=cmd_shell)

    s = sub.add_parser("parse", help="print the canonical command (debug the grammar)")
    s.add_argument("lines", nargs="+")
    s.add_argument("--format", choices=("json", "loom"), default="json")
    s.set_defaults(fn=cmd_parse)

    s = sub.add_parser("import", help="import a loom file (Open Loom 2.x or v1, bundles, "
                       "socketteer/loom, loomsidian, MiniLoom, exoloom)")
    s.add_argument("file")
    s.add_argument("--trust", action="store_true",
                   help="give new participants the permissions the file lists")
    s.add_argument("--max-mb", type=float, help="refuse files larger than this (default 512, "
                   "or $LOOM_IMPORT_MAX_MB)")
    s.set_defaults(fn=cmd_import)

    s = sub.add_parser("export", help="export a tree")
    s.add_argument("tree")
    s.add_argument("--format", choices=("openloom", "bundle", "md", "loom", "socketteer",
                                        "loomsidian", "miniloom", "tapestry"),
                   default="openloom", help="Open Loom (lossless), a bundle, Markdown, the "
                   "Loom Protocol, or another loom's file (what it cannot hold is reported)")
    s.add_argument("--node", help="md: export the path through this node")
    s.add_argument("-o", "--out")
    s.add_argument("--no-system-context", action="store_true",
                   help="leave out the tree's system context (often private)")
    s.add_argument("--no-raw", action="store_true",
                   help="leave out raw provider responses (they can hold the whole prompt)")
    s.add_argument("--no-agent-prompts", action="store_true",
                   help="leave out agents' configured system prompts")
    s.add_argument("--media", choices=("auto", "inline", "bundle"), default="auto",
                   help="media as data: URIs (inline), files in a ZIP (bundle), or as "
                   "imported (auto)")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("demo", help="create the demo tree and open it in the editor")
    s.add_argument("--no-editor", action="store_true", help="just create it and draw it")
    s.set_defaults(fn=cmd_demo)

    s = sub.add_parser("uri", help="print the loom: URI of a tree or of the path via a node")
    s.add_argument("tree")
    s.add_argument("node", nargs="?")
    s.set_defaults(fn=cmd_uri)

    s = sub.add_parser("tree", help="the tree for people: text beside each id")
    s.add_argument("tree")
    s.set_defaults(fn=cmd_tree)

    s = sub.add_parser("search", help="full-text search over every tree")
    s.add_argument("words", nargs="+")
    s.add_argument("--tree", help="only this tree")
    s.set_defaults(fn=cmd_search)

    s = sub.add_parser("summarize", help="write queued summaries now (a tree's on demand)")
    s.add_argument("tree", nargs="?", help="also summarize this tree now")
    s.add_argument("--limit", type=int, help="at most this many")
    s.set_defaults(fn=cmd_summarize)

    from loom.agent.cli import add_agent_arguments

    s = sub.add_parser("agent", help="run the collaborator agent in a tree (headless)")
    add_agent_arguments(s)
    s.set_defaults(fn=cmd_agent)

    from loom.cli_team import add_migrate_arguments, add_users_arguments

    s = sub.add_parser("users", help="participants and what each may do (grant, revoke, "
                       "add, set)",
                       description="Without an action: every participant with its kind, role "
                       "and permissions. Only the human is born with every permission; any "
                       "other participant starts with none. Each change is a grant command "
                       "by the participant at this terminal (--participant).")
    add_users_arguments(s)
    s.set_defaults(fn=cmd_users)

    s = sub.add_parser("purge", help="delete for good what was deleted more than 30 days "
                       "ago (language servers do it on start-up and daily)")
    s.set_defaults(fn=cmd_purge)

    s = sub.add_parser("migrate", help="copy this workspace into an empty database "
                       "(SQLite ⇄ PostgreSQL), checked by counts and content hashes")
    add_migrate_arguments(s)
    s.set_defaults(fn=cmd_migrate)

    from loom.cli_model import add_parsers as model_parsers

    model_parsers(sub)
    s = sub.add_parser("serve", help="run the language server (stdio)")
    s.add_argument("--tcp", metavar="[HOST:]PORT",
                   help="listen on a socket instead of stdio (host 127.0.0.1 unless given; "
                   "clients must send the token, see docs/lsp.md)")
    s.add_argument("--token-file", metavar="FILE",
                   help="--tcp: the token, from a file only you can read (default: a new "
                   "token, printed on stderr)")
    s.set_defaults(fn=cmd_serve)
    s = sub.add_parser("mcp", help="serve the workspace to an MCP client (stdio), as "
                       "--participant")
    s.add_argument("--http", metavar="[HOST:]PORT",
                   help="streamable HTTP at http://HOST:PORT/mcp instead of stdio (host "
                   "127.0.0.1 unless given; clients must send the token)")
    s.add_argument("--token-file", metavar="FILE",
                   help="--http: the token, from a file only you can read (default: a new "
                   "token, printed on stderr)")
    s.set_defaults(fn=cmd_mcp)
    from loom.cli_preferences import add_parsers as preference_parsers

    preference_parsers(sub, {"export-preferences": cmd_export_preferences,
                             "stats": cmd_stats, "settings": cmd_settings})
    _global_options_after_commands(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_of(argv)).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.fn(args) or 0)
    except LoomError as err:
        return _fail(err)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `loom do … | head -1`: the reader has what it wanted. Python would complain
        # again when it flushes stdout at exit: point stdout at /dev/null first.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a process the pipe closed
    except Exception as err:  # never a traceback for bad input
        logging.getLogger("loom").debug("unhandled", exc_info=True)
        return _fail(f"✗ {type(err).__name__}: {err}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
