"""Peak memory of an import against the file's size (64 MB took 1.0 GB,
a 500 MB single-node file 7.35 GB).

Each size is a generated Open Loom file (a chain of nodes of ~2 KB, or one node holding
the whole text with ``--one-node``), imported by ``loom import`` in a child process whose
peak resident size (``ru_maxrss``) is read when it ends; the file and the database live in
a temporary folder. Prints, per size: the file, the peak, the peak over the file, and the
goal (3× the file + 200 MB).

    .venv/bin/python bench/bench_import_memory.py [--sizes 16,64] [--one-node]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1024 * 1024


def write_openloom(path: Path, size: int, one_node: bool) -> None:
    """An Open Loom 2.0 file of about ``size`` bytes."""
    text = "The house stood empty at the end of the lane, and the windows watched. "
    with path.open("w", encoding="utf-8") as out:
        out.write('{"format": "open-loom", "version": "2.0", "trees": [{"id": "t1", '
                  '"title": "big", "rootId": "n0", "nodes": {')
        if one_node:
            body = text * (size // len(text))
            out.write(json.dumps("n0") + ": " + json.dumps({
                "id": "n0", "content": body, "author": {"role": "human"}}))
            edges: list[str] = []
        else:
            chunk = text * 28  # ~2 KB a node
            count = max(1, size // (len(chunk) + 120))
            edges = []
            for i in range(count):
                if i:
                    out.write(", ")
                out.write(json.dumps(f"n{i}") + ": " + json.dumps({
                    "id": f"n{i}", "content": chunk, "author": {"role": "human"}}))
                if i:
                    edges.append(json.dumps({"type": "continuation", "sources": [f"n{i - 1}"],
                                             "target": f"n{i}"}))
        out.write('}, "edges": [' + ", ".join(edges) + "]}]}")


def peak_of_import(file: Path, db: Path) -> tuple[int, float, int]:
    """(peak resident bytes, seconds, exit code) of ``loom import`` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), "import",
                           str(file)], capture_output=True, text=True,
                          env={**os.environ, "LOOM_SUBJECT": "none", "LOOM_SUMMARIES": "off"})
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode:
        print(f"    (exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]})")
    # ru_maxrss is the largest child so far (KiB on Linux): a smaller run after a larger
    # one cannot be read, so sizes run in ascending order
    return max(peak, before) * 1024, took, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,64", help="file sizes in MB, ascending")
    ap.add_argument("--one-node", action="store_true", help="one node holding all the text")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(f"import peak memory ({'one node' if args.one_node else '~2 KB nodes'}):")
    print("  file      peak      peak/file   goal (3x + 200 MB)   time")
    for mb in sizes:
        with tempfile.TemporaryDirectory(prefix="loom-bench-importmem-") as tmp:
            file = Path(tmp) / "big.openloom"
            write_openloom(file, mb * MB, args.one_node)
            real = file.stat().st_size
            peak, took, code = peak_of_import(file, Path(tmp) / "loom.db")
            goal = 3 * real + 200 * MB
            print(f"  {real / MB:>5.0f} MB  {peak / MB:>6.0f} MB  {peak / real:>7.1f}x"
                  f"   {goal / MB:>6.0f} MB {'(met)' if peak <= goal else '(over)'}"
                  f"       {took:.1f} s{'' if code == 0 else '  refused'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
