"""One meaning per name: a module never takes a standard library module's name, and a
class name means one thing across the layers a reader meets together (a command, a row,
an open buffer)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "loom"


def _classes(*paths: Path) -> dict[str, list[str]]:
    """Top-level class name → the modules (relative to the package) that define it."""
    found: dict[str, list[str]] = {}
    for path in paths:
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            for node in ast.parse(file.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append(str(file.relative_to(PACKAGE)))
    return found


def _shared(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: a[name] + b[name] for name in sorted(a.keys() & b.keys())}


def test_no_module_is_named_like_a_standard_library_module() -> None:
    # ``import ast`` beside ``loom.commands.ast`` read as one name with two meanings
    clashes = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*")
                     if "__pycache__" not in p.parts
                     and (p.suffix == ".py" or p.is_dir())
                     and (p.stem if p.suffix == ".py" else p.name) in sys.stdlib_module_names)
    assert clashes == []


def test_no_command_class_shares_a_name_with_a_schema_model() -> None:
    commands = _classes(PACKAGE / "commands" / "syntax.py")
    rows = _classes(PACKAGE / "store" / "schema.py")
    assert commands, "the command syntax module defines the command classes"
    assert _shared(commands, rows) == {}


def test_no_lsp_class_shares_a_name_with_a_store_class() -> None:
    assert _shared(_classes(PACKAGE / "lsp"), _classes(PACKAGE / "store")) == {}


def test_no_lsp_class_shares_a_name_with_a_command_class() -> None:
    assert _shared(_classes(PACKAGE / "lsp"), _classes(PACKAGE / "commands" / "syntax.py")) == {}


def test_the_layers_a_command_crosses_name_their_classes_apart() -> None:
    # a command is parsed (commands/), run against rows (store/) and shown (lsp/): one
    # name in two of them (Args, Segment, ModelChoice) reads as one thing and is two
    lsp, store, commands = (_classes(PACKAGE / p) for p in ("lsp", "store", "commands"))
    assert _shared(lsp, commands) == {}
    assert _shared(store, commands) == {}


def test_the_checks_see_a_clash() -> None:
    # the rule must be able to fail: a class defined in both places is reported
    schema = PACKAGE / "store" / "schema.py"
    assert _shared(_classes(schema), _classes(schema)).keys() >= {"Tree", "Node"}
