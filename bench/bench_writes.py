"""Write benchmarks: one node added with a committed transaction, against the
way socketteer/loom saves (its whole tree rewritten as JSON after a backup copy), in the
same run. Prints medians, p99 and the ratio; asserts nothing.

The pragmas (``store/db.py``) and why each keeps the crash-safety and concurrent-writer
tests (``tests/unit/test_store_concurrency.py``, ``tests/lsp/test_kill_typing.py``,
``tests/lsp/test_lost_text.py``) green:

- ``journal_mode=WAL``: a commit appends to the write-ahead log instead of rewriting pages
  and a rollback journal; readers (the summary worker, other editors) never block the
  writer nor it them.
- ``synchronous=NORMAL``: the WAL is fsynced at checkpoints, not at every commit. A commit
  is in the WAL (the OS's file cache) before the call returns, so a killed process
  (kill -9) loses nothing committed, which is what the crash tests hold; only a power
  loss can take the commits since the last checkpoint, and never corrupts the file.
- ``busy_timeout`` 15 s with ``BEGIN IMMEDIATE`` transactions: two writers queue on the
  write lock up front instead of failing on a read→write upgrade (the concurrent-writer
  tests).
- ``foreign_keys=ON``, ``cache_size`` 32 MB. (``mmap_size`` was tried: no gain for these
  writes, so it is not set.)

One add_node is one IMMEDIATE transaction of prepared statements: the node, its edge and
source rows, the tree's counters, the summary job and the change-log row. The summary
queue's bound is checked from its ids' span (two index reads) before the exact walk.

Run: .venv/bin/python bench/bench_writes.py [--samples 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "socketteer-loom-demo.json"


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def socketteer_save(data: dict, target: Path) -> float:
    """socketteer/loom's save_tree: back the file up, then write the whole tree as JSON."""
    start = time.perf_counter()
    if target.exists():
        shutil.copyfile(target, target.with_suffix(".bak"))
    with target.open("w", encoding="utf-8") as f:
        json.dump(data, f)
    return (time.perf_counter() - start) * 1000


def measure(samples: int) -> tuple[float, float, float]:
    """(socketteer save median, add_node median, add_node p99) in ms, in one run."""
    from loom.interchange import import_file
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-writes-"))
    try:
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        base = [socketteer_save(data, tmp / "tree.json") for _ in range(30)]
        ws = Workspace(open_database(tmp / "loom.db"))
        ws.human()
        ws.subject()
        tree = import_file(ws, FIXTURE).trees[0].tree
        human = ws.human()
        node = ws.node(tree.root)
        times = []
        for i in range(samples):
            start = time.perf_counter()
            node = ws.add_node(tree, node, f" step {i}.", human)
            times.append((time.perf_counter() - start) * 1000)
        ws.db.close()
        return statistics.median(base), statistics.median(times), pct(times, 99)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    args = ap.parse_args()
    base_med, add_med, add_p99 = measure(args.samples)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"socketteer/loom save (764 nodes, backup + JSON)  median {base_med:8.2f} ms")
    print(f"Workspace.add_node (764-node tree, committed)    median {add_med:8.3f} ms   "
          f"p99 {add_p99:7.3f} ms   (n={args.samples}; goal median ≤ 0.28 ms)")
    print(f"ratio socketteer save / add_node: {base_med / add_med:6.1f}×  (goal ≥ 100×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
