"""The command line builds only the parser of the command at hand (argparse spent a tenth
of ``loom trees`` building all eighteen): the list it keeps is the parser's own, and a
command parses the same either way."""

from __future__ import annotations

import argparse

import pytest

from loom.cli import COMMANDS, build_parser, command_of


def _choices(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return tuple(sub.choices)


def test_the_command_list_is_every_subcommand_in_order() -> None:
    assert _choices(build_parser()) == COMMANDS


@pytest.mark.parametrize("argv, command", [
    (["trees"], "trees"),
    (["--db", "x.db", "trees", "--all"], "trees"),
    (["--db=x.db", "-v", "do", "→ view"], "do"),
    (["--participant", "trees", "tree", "abc"], "tree"),  # the option's value is no command
    (["-h"], None), (["--version"], None), (["nonsense"], None), ([], None),
])
def test_the_command_is_found_past_the_global_options(argv: list[str],
                                                       command: str | None) -> None:
    assert command_of(argv) == command


@pytest.mark.parametrize("argv", [
    ["trees", "--all"], ["--db", "x.db", "new", "Title", "--mode", "dialogue"],
    ["export", "T1", "--format", "md"], ["users", "grant", "bob", "write"],
    ["model", "setup"], ["serve", "--tcp", "2087"],
])
def test_one_parser_parses_as_the_whole_one_does(argv: list[str]) -> None:
    whole = vars(build_parser().parse_args(argv))
    one = vars(build_parser(command_of(argv)).parse_args(argv))
    assert one == whole


def test_a_mistyped_command_still_lists_every_command(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    with pytest.raises(SystemExit):
        build_parser(command_of(["tres"])).parse_args(["tres"])
    err = capsys.readouterr().err
    assert all(f"'{name}'" in err for name in COMMANDS), err


def test_loom_trees_loads_no_pydantic_nor_model_code(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`loom trees` answers in about 130 ms: a command's sampling record (pydantic) once
    crept into its imports through commands/context.py and added 150 ms."""
    import subprocess
    import sys

    db = tmp_path / "loom.db"
    probe = ("import sys\nfrom loom.cli import main\n"
             f"code = main(['--db', {str(db)!r}, 'trees'])\n"
             "heavy = sorted(m for m in ('pydantic', 'openai', 'anthropic', 'lsprotocol') "
             "if m in sys.modules)\n"
             "print('LOADED', heavy)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60).stdout
    assert "LOADED []" in out, out


def _every_command(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
                   ) -> list[tuple[argparse.ArgumentParser, tuple[str, ...]]]:
    """Each subcommand's parser (``users``' actions too) and the words that reach it."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((sub, (*prefix, name)))
                found += _every_command(sub, (*prefix, name))
    return found


#: arguments each command needs to parse at all (its positionals)
NEEDS = {"new": ["T"], "do": ["T", "→ view"], "shell": ["T"], "parse": ["→ view"],
         "import": ["f.json"], "export": ["T"], "uri": ["T"], "tree": ["T"],
         "search": ["walnut"], "agent": ["T"], "model": ["status"], "stats": ["T"],
         "settings": ["T"], "users grant": ["bob", "write"], "users revoke": ["bob", "write"],
         "users add": ["bob"], "users set": ["bob"]}


def test_every_command_takes_the_global_options_after_it_too() -> None:
    """`loom demo --db FILE` was `unrecognized arguments`: each subcommand, at every
    level, reads --db, --participant and -v where they are typed."""
    commands = _every_command(build_parser())
    assert {" ".join(words) for _, words in commands} >= set(COMMANDS) | {"users grant"}
    for _parser, words in commands:
        name = " ".join(words)
        argv = [*words, *NEEDS.get(name, []), "--db", "after.db", "--participant", "ann",
                "-v"]
        args = build_parser(command_of(argv)).parse_args(argv)
        assert (args.db, args.participant, args.verbose) == ("after.db", "ann", True), name


def test_a_global_option_before_the_command_is_not_reset_by_it() -> None:
    args = build_parser().parse_args(["--db", "before.db", "-v", "demo", "--no-editor"])
    assert (args.db, args.participant, args.verbose) == ("before.db", None, True)
    args = build_parser().parse_args(["--db", "before.db", "demo", "--db", "after.db"])
    assert args.db == "after.db"  # the later one wins, as a repeated option does
    args = build_parser().parse_args(["--participant", "bo", "users", "grant", "x", "write"])
    assert args.participant == "bo"


def test_loom_demo_with_its_database_after_the_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The command as issue 47 typed it, end to end: the demo is made in that file."""
    import subprocess
    import sys

    db = tmp_path / "after.db"
    run = subprocess.run([sys.executable, "-m", "loom.cli", "demo", "--db", str(db),
                          "--no-editor"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith('✓ demo tree "The House at the End of the Lane" ready')
    assert db.exists()
