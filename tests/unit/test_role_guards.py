"""The change-log guard of a team's roles knows every kind Loom logs: a kind Loom writes
that the guard does not list would be refused on every team database with roles, and a
kind it lists that Loom no longer writes is a hole left open. Read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

from loom.store import role_guards

SERVER = Path(__file__).resolve().parents[2] / "server" / "loom"
#: ``add_node``'s ``f"node.{kind}"``: the kinds of node it adds
ADDED = ("continuation", "annotation")


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def logged_kinds() -> set[str]:
    kinds: set[str] = set()
    for path in SERVER.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _constants(tree)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            fn = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
                call.func, "id", "")
            at = {"log_change": 1, "_log": 2}.get(fn)
            if at is None or len(call.args) <= at:
                continue
            arg = call.args[at]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                kinds.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in names:
                kinds.add(names[arg.id])
            elif isinstance(arg, ast.JoinedStr):
                assert ast.unparse(arg) == "f'node.{kind}'", (path, ast.unparse(arg))
                kinds |= {f"node.{k}" for k in ADDED}
    return kinds


def test_the_guard_knows_every_kind_loom_logs() -> None:
    found = logged_kinds()
    assert len(found) > 30
    assert found - set(role_guards.CHANGE_KINDS) == set(), "kinds the guard would refuse"
    assert set(role_guards.CHANGE_KINDS) - found == set(), "kinds Loom no longer logs"


def test_the_shared_tables_bounds_hold_what_loom_asks_for() -> None:
    """The leases and turns the guards allow (``role_shared``) cover the longest Loom
    takes: a summary worker's lease and retry wait, a turn lock's time to live."""
    import inspect

    from loom.agent.loop import LockPolicy
    from loom.llm import summaries
    from loom.store import role_shared
    from loom.store.positions import Positions

    assert summaries.LEASE_S <= role_shared.SUMMARY_LEASE_S
    assert 5 * 2 ** (summaries.MAX_ATTEMPTS - 1) <= role_shared.SUMMARY_LEASE_S  # a retry
    ttl = inspect.signature(Positions.acquire_turn).parameters["ttl_s"].default
    assert max(ttl, LockPolicy().ttl_s) <= role_shared.TURN_LOCK_S
