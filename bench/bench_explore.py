"""Exploration benchmark (``→ explore`` with the bundled local model): prints figures,
asserts nothing.

The demo tree is explored by SmolLM2 as subject and as judge (warm: one exploration of
depth 1 first, which also starts the model service), then measured:

* nodes explored per minute (new branches made, wall time from ``→ explore`` to its end);
* judge calls per node;
* Loom's overhead over the raw model calls: the exploration's wall time over the time the
  model calls themselves took (the subject's requests as their generation records time
  them, the judge's calls as timed around the provider). Goal ≤ 1.1×.

Run: .venv/bin/python bench/bench_explore.py [--depth 3] [--n 2] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from loom.app import open_app
from loom.commands.context import Actor
from loom.demo import create_demo
from loom.llm.subject import configured_subject


def explore_once(app, tree, human, line: str) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    began = time.perf_counter()
    started = app.executor.execute(line, Actor(human, tree))
    if not started.ok:
        raise SystemExit(started.text)
    app.explorations().wait(tree, 900)
    wall = time.perf_counter() - began
    return wall, app.explorations().latest(tree)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = open_app(Path(tmp) / "loom.db", subject=configured_subject())
        tree = create_demo(app.ws)
        human = app.ws.human()
        explore_once(app, tree, human, "→ explore depth:1 n:1 threshold:0")  # warm
        rates, per_node, overheads = [], [], []
        for _ in range(args.runs):
            wall, ex = explore_once(app, tree, human, f"→ explore depth:{args.depth} "
                                    f"n:{args.n} budget:200000 threshold:0")
            made = ex.made or 1
            model_s = ex.subject_s + ex.judge_s
            rates.append(ex.made / (wall / 60))
            per_node.append(ex.judge_calls / made)
            overheads.append(wall / model_s if model_s else float("nan"))
            print(f"run: {ex.made} nodes in {wall:.1f} s (model calls {model_s:.1f} s: "
                  f"subject {ex.subject_s:.1f}, judge {ex.judge_s:.1f}; {ex.judge_calls} "
                  f"judge calls) · {ex.ended}")
        print(f"nodes explored per minute (median of {args.runs}): "
              f"{statistics.median(rates):.1f}")
        print(f"judge calls per node: {statistics.median(per_node):.2f}")
        print(f"overhead over the raw model calls: {statistics.median(overheads):.3f}× "
              "(goal ≤ 1.1×)")


if __name__ == "__main__":
    main()
