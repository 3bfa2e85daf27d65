"""Summary throughput with the bundled local model: nodes per minute (prints; no asserts).

Run: .venv/bin/python bench/bench_summaries.py [--nodes 24]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

SENTENCES = [
    " The lighthouse keeper climbed the stairs at dusk, counting each step aloud.",
    " Below, the sea had gone the colour of pewter and the gulls were quiet.",
    " He lit the lamp and watched its beam sweep the empty water twice.",
    " Somewhere past the reef a small light answered, then went out.",
    " He wrote the time in the log and underlined it, though nobody would read it.",
    " By midnight the wind had turned and the shutters knocked against the wall.",
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=24)
    args = ap.parse_args()
    os.environ.setdefault("LOOM_NO_KEYRING", "1")
    os.environ.setdefault("LOOM_CONFIG", str(Path(tempfile.gettempdir()) / "absent.toml"))
    from loom.llm.summaries import SummaryWorker
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(Path(tempfile.mkdtemp()) / "bench.db"))
    tree = ws.create_tree("Lighthouse", "buffer", root_content="The storm came in at six.")
    parent = ws.node(tree.root)
    for i in range(args.nodes):
        parent = ws.add_node(tree, parent, SENTENCES[i % len(SENTENCES)], ws.human())
    worker = SummaryWorker(ws)
    print(f"summary model: {worker.profile.provider}:{worker.profile.model}")
    worker.run_once(limit=1)  # load the model outside the timing
    pending = worker.pending()
    started = time.perf_counter()
    written = worker.run_once(limit=pending)
    elapsed = time.perf_counter() - started
    print(f"summaries: {written} written of {pending} jobs in {elapsed:.1f} s → "
          f"{60 * pending / elapsed:.0f} jobs/minute ({60 * written / elapsed:.0f} usable "
          "summaries/minute; the rest kept their extractive summary)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
