"""Core benchmarks (issue: workspace core): prints figures, asserts nothing.

- building a 100,000-node tree (bulk insert) — target ≤ 20 s
- localId resolve + `view` and `list` through the executor, p50/p99 — target p99 ≤ 2 ms
- rendering a 2,000-deep path as prose (`view branch:X as:prose`) — target ≤ 20 ms
- parse throughput over a mixed corpus — target ≥ 20,000 lines/s

Run: .venv/bin/python bench/bench_core.py [--nodes 100000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--deep", type=int, default=2_000)
    ap.add_argument("--samples", type=int, default=2_000)
    args = ap.parse_args()

    from loom.app import open_app
    from loom.commands.grammar import parse
    from loom.store.workspace import NewNode

    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-"))
    app = open_app(tmp / "bench.db", use_default_subject=False)
    ws = app.ws
    ws.human()
    ws.subject()
    words = ("the house stood empty at end of lane she hadnt visited since her mothers death "
             "and windows seemed to watch approach with something like reproach").split()

    def sentence() -> str:
        return " " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "."

    # ── build ──
    t0 = time.perf_counter()
    tree = ws.create_tree("bench", "buffer", root_content="Once.")
    root = ws.node(tree.root)
    specs: list[NewNode] = []
    keys: list[str] = []
    deep_n = args.deep
    for i in range(deep_n):  # one long path for the prose render
        key = f"d{i}"
        specs.append(NewNode(key, keys[-1] if keys else None, sentence(),
                             "model" if i % 2 else "human",
                             "model" if i % 2 else "human"))
        keys.append(key)
    pool = list(keys)
    for i in range(args.nodes - deep_n - 1):
        parent = pool[-rng.randint(1, min(len(pool), 50))] if rng.random() < 0.7 \
            else rng.choice(pool)
        key = f"n{i}"
        author = rng.choice(("human", "model"))
        specs.append(NewNode(key, parent, sentence(), author, author))
        pool.append(key)
    built = ws.bulk_add(tree, root, specs)
    build_s = time.perf_counter() - t0
    print(f"build: {args.nodes:,} nodes in {build_s:.2f} s "
          f"({args.nodes / build_s:,.0f} nodes/s; target ≤ 20 s)")

    deep_tip = built[f"d{deep_n - 1}"]
    ws.set_position(ws.human(), tree, deep_tip, deep_tip)  # the writer at the end of it
    actor = app.actor(tree)
    ids = [n.local_id for n in built.values()]
    sample = [rng.choice(ids) for _ in range(args.samples)]
    prefixes = Counter(i[:4] for i in ids)
    print(f"localIds: {sum(len(i) for i in ids) / len(ids):.2f} characters on average "
          f"(6 unless extended on a collision)")

    def timed(lines: list[str]) -> list[float]:
        out = []
        for line in lines:
            t = time.perf_counter()
            r = app.executor.execute(line, actor)
            out.append((time.perf_counter() - t) * 1000)
            assert r.ok, r.text
        return out

    for name, template in (("view", "→ view {}"), ("list", "→ list {} continuations"),
                           ("view 4-char prefix", "→ view {}")):
        lines = [template.format(x[:4] if "prefix" in name else x) for x in sample]
        if "prefix" in name:  # keep only unambiguous prefixes
            lines = [ln for ln in lines if prefixes[ln[-4:]] == 1]
        timed(lines[:50])  # warm
        ms = timed(lines)
        print(f"{name:<20} p50 {statistics.median(ms):.3f} ms  p99 {pct(ms, 99):.3f} ms "
              f"(n={len(ms)}; target p99 ≤ 2 ms)")

    ms = []
    for _ in range(30):
        t = time.perf_counter()
        r = app.executor.execute(f"→ view branch:{deep_tip.local_id} as:prose", actor)
        ms.append((time.perf_counter() - t) * 1000)
        assert r.ok
    print(f"prose render, {deep_n:,}-deep path: median {statistics.median(ms):.2f} ms  "
          f"p99 {pct(ms, 99):.2f} ms ({len(r.text):,} chars; target ≤ 20 ms)")

    for line in ("→ tree", "→ tree summary", "→ tree from:root depth:5"):
        ms = []
        for _ in range(10):
            t = time.perf_counter()
            r = app.executor.execute(line, actor)
            ms.append((time.perf_counter() - t) * 1000)
            assert r.ok, r.text
        print(f"{line:<26} median {statistics.median(ms):.1f} ms  p99 {pct(ms, 99):.1f} ms "
              f"(counts over {len(ids):,} nodes; the summary's themes over the "
              f"{deep_n:,}-deep path)")

    corpus = [
        "→ view a7x2", "→ show me node a7x2", "-> go to b3k9", "→ list a7x2 continuations",
        "→ continue from b3k9 n:3 tokens:40", '→ annotate a7x2 "the tone shifts here"',
        '→ link a7x2 to doc:"character notes" note:"see motivation"', "→ tree from:a7x2 depth:3",
        "→ please view node a7x2 full", '→ stash "marie insight" content-of:a7x2',
        "→ veiw a7x2", "→ frobnicate everything", '→ write doc:"notes" append "more"',
        "→ memory trace", "→ help view", '→ read doc:"notes" lines:1-20',
    ]
    lines = [rng.choice(corpus) for _ in range(20_000)]
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for line in lines:
            parse(line)
        rounds.append(len(lines) / (time.perf_counter() - t))
    print(f"parse: {statistics.median(rounds):,.0f} lines/s (median of 5 rounds over "
          f"{len(lines):,} mixed lines; target ≥ 20,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
