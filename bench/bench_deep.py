"""A story as deep as a long one: a socketteer/loom file whose one path is N nodes deep
(default 100,000, about 200,000 levels of JSON), decoded, imported, exported as Open Loom,
Markdown and the Loom Protocol, and the Open Loom export imported again.

Python's default recursion limit is kept (1,000 frames) for the whole run, so the run
itself shows that no step recurses per level. Prints seconds per step.

    .venv/bin/python bench/bench_deep.py [--depth 100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loom.interchange import export_tree, import_bytes, jsontext
from loom.store.db import open_database
from loom.store.schema import Node
from loom.store.workspace import Workspace


def chain_text(depth: int) -> str:
    head = '{"text": "w", "children": ['
    return ('{"root": ' + head * depth + '{"text": "end", "children": []}' + "]}" * depth
            + "}")


def timed(label: str, fn: Any) -> Any:
    start = time.perf_counter()
    out = fn()
    print(f"  {label:<28} {time.perf_counter() - start:8.2f} s")
    return out


def fresh(path: Path) -> Workspace:
    ws = Workspace(open_database(path))
    ws.human()
    ws.subject()
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=100_000)
    args = parser.parse_args()
    text = chain_text(args.depth)
    print(f"socketteer story {args.depth:,} nodes deep ({len(text) / 1e6:.1f} MB), "
          f"recursion limit {sys.getrecursionlimit()}")
    timed("decode (flat decoder)", lambda: jsontext.loads(text))
    with tempfile.TemporaryDirectory(prefix="loom-bench-") as tmp:
        ws = fresh(Path(tmp) / "deep.db")
        report = timed("import", lambda: import_bytes(ws, text.encode(), "deep.json"))
        tree = report.trees[0].tree
        leaf = Node.get((Node.tree == tree.id) & (Node.content == "end"))
        assert leaf.depth == args.depth
        doc = timed("export Open Loom", lambda: export_tree(ws, tree, "openloom"))
        timed("export Markdown (the path)", lambda: export_tree(ws, tree, "md", node=leaf))
        timed("export Loom Protocol", lambda: export_tree(ws, tree, "loom"))
        timed("import the Open Loom export",
              lambda: import_bytes(ws, str(doc).encode(), "deep.openloom"))
        ws.db.close()


if __name__ == "__main__":
    main()
