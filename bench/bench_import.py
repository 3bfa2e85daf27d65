"""Time the import of the socketteer/loom demo file (764 nodes, depth 21).

Each run imports into a fresh temporary database; the median of the runs is printed, with
the Open Loom export and re-import of the same tree for comparison.

    .venv/bin/python bench/bench_import.py [--runs 5] [--file path/to/loom.json]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from loom.interchange import import_file
from loom.interchange.openloom import export_openloom, import_openloom
from loom.store.db import open_database
from loom.store.workspace import Workspace

DEMO = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / \
    "socketteer-loom-demo.json"


def one_run(source: Path, workdir: Path) -> tuple[float, float, float, int]:
    """(socketteer import s, Open Loom export s, Open Loom import s, nodes) in fresh DBs."""
    db = open_database(workdir / "socketteer.db")
    ws = Workspace(db)
    ws.human()
    start = time.perf_counter()
    tree = import_file(ws, source)[0]
    imported = time.perf_counter() - start
    nodes = ws.node_count(tree)
    start = time.perf_counter()
    data = export_openloom(ws, tree)
    exported = time.perf_counter() - start
    db.close()
    db = open_database(workdir / "openloom.db")
    ws = Workspace(db)
    ws.human()
    start = time.perf_counter()
    import_openloom(ws, data)
    reimported = time.perf_counter() - start
    db.close()
    return imported, exported, reimported, nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--file", type=Path, default=DEMO)
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="loom-bench-") as tmp:
            results.append(one_run(args.file, Path(tmp)))
    nodes = results[0][3]
    median = [statistics.median(r[i] for r in results) for i in range(3)]
    print(f"{args.file.name}: {nodes} nodes, median of {args.runs} runs (fresh DB each)")
    print(f"  socketteer import   {median[0] * 1000:8.1f} ms  "
          f"({nodes / median[0]:,.0f} nodes/s)")
    print(f"  Open Loom export    {median[1] * 1000:8.1f} ms")
    print(f"  Open Loom import    {median[2] * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
