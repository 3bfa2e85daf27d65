"""``loom.continue``'s ``options`` read as the typed line ``→ continue OPTIONS`` is
(lsp/args.py), without a client: what the editors' prompts send."""

from __future__ import annotations

import pytest

from loom.commands import syntax
from loom.commands.grammar import parse
from loom.errors import LoomError
from loom.lsp.args import ContinueArgs, continue_options


def test_the_options_read_as_the_typed_line_reads_them() -> None:
    typed = 'temp:0.7 n:2 models:a,b stop:"two  spaces" seed:3'
    cmd, note = continue_options(typed)
    assert cmd == parse(f"→ continue {typed}") and note is None
    assert cmd.stop == ["two  spaces"]  # a quoted value as typed: its spaces kept


def test_a_prompt_of_two_lines_is_one_line_of_options() -> None:
    cmd, _ = continue_options("n:2\ntemperature:0.5")
    assert (cmd.n, cmd.temperature) == (2, 0.5)


def test_the_options_win_over_the_fields_and_keep_the_rest() -> None:
    asked, note = ContinueArgs(uri="u", n=3, tokens=40, model="m",
                               options="n:1 temprature:0.2").command()
    assert isinstance(asked, syntax.Continue) and note == "(read as → continue n:1 temperature:0.2)"
    assert (asked.n, asked.tokens, asked.temperature, asked.models) == (1, 40, 0.2, ("m",))


@pytest.mark.parametrize(("options", "message"), [
    ("→ continue n:2", "options, not a command"),
    ("from a7x2", "Continue continues the end of the path"),
    ("n:2 bogus:1", 'unknown option "bogus:" for continue'),
])
def test_what_the_line_would_not_take_is_invalid_syntax(options: str, message: str) -> None:
    with pytest.raises(LoomError) as err:
        continue_options(options)
    assert err.value.code == "INVALID_SYNTAX" and err.value.message.startswith(message)
