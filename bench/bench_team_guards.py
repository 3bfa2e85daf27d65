"""What the checks of a team's roles cost a writer (``store/role_guards.py``,
``store/role_shared.py``): the same writes as the writer role alice, with the checks and
with every one of their triggers taken off (the grants and row-level security stay). Prints
medians and ratios; asserts nothing.

- nodes: ``--nodes`` continuations added one transaction each (``Workspace.add_node``:
  the node's insert checked and recorded, its edge, source and summary job checked against
  it, its change-log row checked against it);
- marks: a bookmark set and cleared on each (the node's update checked, and its row);
- import: the socketteer demo tree (764 nodes, ``../shared/fixtures``) imported as a new
  tree (every node's insert checked against the tree made in the same transaction).

PostgreSQL runs from Debian's binaries in a temporary directory (tests/pg_cluster.py).

Run: .venv/bin/python bench/bench_team_guards.py [--nodes 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server")]

FIXTURE = ROOT.parent / "shared" / "fixtures" / "socketteer-loom-demo.json"


def _triggers() -> list[str]:
    """Every trigger the roles' SQL creates, as ``name ON table``."""
    from loom.store import roles

    found = (re.match(r'CREATE (?:CONSTRAINT )?TRIGGER (\w+) .*? ON "?(\w+)"?', s, re.S)
             for s in roles.grants())
    return [f"{m[1]} ON {m[2]}" for m in found if m]


def _team(cluster: object, name: str) -> tuple[str, str]:
    """A database set up as docs/team.md says, alice a writer: (owner URL, alice's URL)."""
    from loom.cli import main
    from loom.store import roles
    from loom.store.db import SCHEMA_VERSION, open_database

    cluster.admin(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]
    owner = cluster.url(name)  # type: ignore[attr-defined]
    open_database(owner).close()
    assert main(["--db", owner, "--participant", "human", "new", "bench", "--text",
                 "Once."]) == 0
    assert main(["--db", owner, "--participant", "human", "users", "add", "alice",
                 "--preset", "writer"]) == 0
    subprocess.run([str(cluster.bindir / "psql"), "-X", "-q", owner, "-f", "-"],  # type: ignore[attr-defined]
                   input=roles.script(SCHEMA_VERSION, writers=("alice",)), text=True,
                   check=True, capture_output=True)
    return owner, cluster.url(name, "alice")  # type: ignore[attr-defined]


def _without_checks(owner: str) -> None:
    import psycopg

    with psycopg.connect(owner) as conn:
        for trigger in _triggers():
            conn.execute(f"DROP TRIGGER {trigger}")


def _runs(url: str, nodes: int) -> dict[str, float]:
    from loom.interchange import import_file
    from loom.store import reader
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(url))
    me = ws.human("alice")
    tree = ws.find_tree("bench")
    parent = ws.node(tree.root)
    out: dict[str, float] = {}
    start = time.perf_counter()
    made = []
    for i in range(nodes):
        made.append(ws.add_node(tree, parent, f" sentence {i}.", me))
    out["nodes"] = (time.perf_counter() - start) / nodes * 1000
    start = time.perf_counter()
    for node in made:
        reader.set_bookmark(ws, node, me, True)
        reader.set_bookmark(ws, node, me, False)
    out["marks"] = (time.perf_counter() - start) / (2 * nodes) * 1000
    if FIXTURE.exists():
        start = time.perf_counter()
        import_file(ws, FIXTURE, author=me)
        out["import"] = (time.perf_counter() - start) * 1000
    ws.db.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests import pg_cluster

    results: dict[str, dict[str, list[float]]] = {"checked": {}, "unchecked": {}}
    with pg_cluster.running() as cluster:
        for r in range(args.rounds):
            for how in ("checked", "unchecked"):
                owner, alice = _team(cluster, f"b{r}{how[0]}")
                if how == "unchecked":
                    _without_checks(owner)
                for what, ms in _runs(alice, args.nodes).items():
                    results[how].setdefault(what, []).append(ms)
    unit: dict[str, str] = {"nodes": "ms a node", "marks": "ms a mark",
                            "import": "ms the 764-node import"}
    median: Callable[[list[float]], float] = statistics.median
    print(f"a writer's writes on a team's database ({args.rounds} rounds, medians)")
    for what in results["checked"]:
        checked, unchecked = median(results["checked"][what]), median(
            results["unchecked"][what])
        print(f"  {what:7} checked {checked:8.2f}  unchecked {unchecked:8.2f}  "
              f"{unit[what]}   ratio {checked / unchecked:.2f}")


if __name__ == "__main__":
    main()
