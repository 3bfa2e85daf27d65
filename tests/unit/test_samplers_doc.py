"""README's section on samplers and presets, checked: every option its table shows parses
as → continue's, and its preset example is a config Loom reads."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from loom.commands.grammar import parse
from loom.commands.syntax import Continue
from loom.llm.config import load_config

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _section() -> str:
    start = README.index("The model options of `→ continue`")
    return README[start:README.index("API keys come from", start)]


def test_every_option_in_the_table_is_one_continue_reads() -> None:
    rows = [line for line in _section().splitlines() if line.startswith("  | `")]
    assert len(rows) >= 13
    for row in rows:
        for example in re.findall(r"`([^`]+)`", row.split(" | ")[0]):
            got = parse(f"→ continue {example}")
            assert isinstance(got, Continue), (example, got)


def test_the_preset_example_reads(tmp_path: Path) -> None:
    block = re.search(r"```toml\n(\s*\[presets\.wild\].*?)```", _section(), re.S)
    assert block is not None
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(block.group(1)), encoding="utf-8")
    presets = load_config(path).presets
    assert presets["wild"].sampling().chosen() == {
        "temperature": 1.3, "top_k": 100, "xtc_probability": 0.5, "banned": ["suddenly"]}
    assert presets["calm"].summary() == "low and steady"
