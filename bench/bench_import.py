"""Import and export times: the socketteer/loom demo file (764 nodes, depth 21) and a
generated Open Loom tree of 100,000 nodes.

Each run imports into a fresh temporary database; the median of the runs is printed.

    .venv/bin/python bench/bench_import.py [--runs 3] [--file path/to/loom.json]
                                           [--big 100000] [--big-runs 1]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from loom.interchange import export_tree, import_bytes, import_file
from loom.store.db import open_database
from loom.store.workspace import Workspace

DEMO = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / \
    "socketteer-loom-demo.json"


def fresh(path: Path) -> Workspace:
    ws = Workspace(open_database(path))
    ws.human()
    ws.subject()
    return ws


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def demo_run(source: Path, workdir: Path) -> tuple[float, float, float, int]:
    """(socketteer import, Open Loom export, Open Loom re-import) seconds, and nodes."""
    ws = fresh(workdir / "socketteer.db")
    imported, report = timed(lambda: import_file(ws, source))
    tree = report.trees[0].tree
    exported, text = timed(lambda: export_tree(ws, tree))
    ws.db.close()
    ws = fresh(workdir / "openloom.db")
    reimported, _ = timed(lambda: import_bytes(ws, text.encode(), "demo.openloom"))
    ws.db.close()
    return imported, exported, reimported, report.trees[0].nodes


def big_document(n: int, seed: int = 7) -> bytes:
    """A published-shape document: a random tree of ``n`` nodes (branching like a loom,
    mostly deep paths), a third of them model nodes with descriptive provenance."""
    rng = random.Random(seed)
    nodes: dict[str, Any] = {}
    edges: list[dict[str, Any]] = []
    for i in range(n):
        nid = f"n{i}"
        model = i % 3 == 2
        node: dict[str, Any] = {
            "id": nid, "content": [{"type": "text", "text": f" sentence {i} of the tree."}],
            "author": {"role": "model" if model else "human"},
            "createdAt": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z"}
        if model:
            node["generation"] = {"provider": "openai", "model": "davinci-002",
                                  "completionIndex": i % 3, "latencyMs": 100 + i % 50}
        if i % 50 == 0:
            node["meta"] = {"bookmarked": True}
        nodes[nid] = node
        if i:
            parent = rng.randrange(max(0, i - 8), i)  # recent nodes: long, bushy paths
            edges.append({"id": f"e{i}", "type": "continuation",
                          "sources": [{"nodeId": f"n{parent}", "role": "primary"}],
                          "targetNodeId": nid})
    doc = {"format": "open-loom", "version": "2.0", "trees": [{
        "id": "big", "title": "Big", "mode": "buffer", "rootNodeIds": ["n0"],
        "nodes": nodes, "edges": edges}]}
    return json.dumps(doc).encode()


def big_run(data: bytes, workdir: Path) -> tuple[float, float]:
    ws = fresh(workdir / "big.db")
    imported, report = timed(lambda: import_bytes(ws, data, "big.openloom"))
    exported, _ = timed(lambda: export_tree(ws, report.trees[0].tree))
    ws.db.close()
    return imported, exported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--file", type=Path, default=DEMO)
    parser.add_argument("--big", type=int, default=100_000, help="nodes (0: skip)")
    parser.add_argument("--big-runs", type=int, default=1)
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="loom-bench-") as tmp:
            results.append(demo_run(args.file, Path(tmp)))
    nodes = results[0][3]
    median = [statistics.median(r[i] for r in results) for i in range(3)]
    print(f"{args.file.name}: {nodes} nodes, median of {args.runs} runs (fresh DB each)")
    print(f"  socketteer import   {median[0] * 1000:8.1f} ms  ({nodes / median[0]:,.0f} nodes/s)")
    print(f"  Open Loom export    {median[1] * 1000:8.1f} ms")
    print(f"  Open Loom import    {median[2] * 1000:8.1f} ms")
    if args.big:
        data = big_document(args.big)
        big = []
        for _ in range(args.big_runs):
            with tempfile.TemporaryDirectory(prefix="loom-bench-") as tmp:
                big.append(big_run(data, Path(tmp)))
        imp = statistics.median(r[0] for r in big)
        exp = statistics.median(r[1] for r in big)
        print(f"generated tree: {args.big:,} nodes, {len(data) / 1e6:.1f} MB of Open Loom, "
              f"median of {args.big_runs}")
        print(f"  Open Loom import    {imp:8.2f} s   ({args.big / imp:,.0f} nodes/s)")
        print(f"  Open Loom export    {exp:8.2f} s   ({args.big / exp:,.0f} nodes/s)")


if __name__ == "__main__":
    main()
