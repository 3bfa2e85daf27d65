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
