"""Team benchmark: node writes/s and change propagation between processes, with 1, 4 and
16 concurrent writers, on PostgreSQL beside SQLite in the same run. Prints figures;
asserts nothing.

- writes/s: N writer processes each add ``--nodes`` nodes (``Workspace.add_node``, one
  transaction each) into one tree; wall time from the first to the last write.
- propagation: a second process follows the change log the way the language server's sync
  does — on PostgreSQL woken by NOTIFY (``Workspace.listen``), on SQLite polling every
  ``--poll`` seconds (the server's default watchInterval) — and records when each node's
  change reaches it; latency = arrival − the writer's commit time (same clock: one machine).

PostgreSQL runs from Debian's binaries in a temporary directory (tests/pg_cluster.py).

Run: .venv/bin/python bench/bench_team.py [--nodes 200] [--writers 1 4 16] [--poll 0.5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server")]

WRITER = textwrap.dedent("""
    import sys, time
    from loom.store.db import open_database
    from loom.store.workspace import Workspace
    ws = Workspace(open_database(sys.argv[1]))
    tree = ws.find_tree("bench")
    me = ws.ensure_participant(sys.argv[2], "human", "human", ["loom_aware", "loom_write"])
    parent = ws.node(tree.root)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(int(sys.argv[3])):
        node = ws.add_node(tree, parent, f"{sys.argv[2]} {i}", me)
        print(node.id, time.time(), flush=True)  # committed: add_node's transaction ended
        if i % 4 == 0:
            parent = node
""")

FOLLOWER = textwrap.dedent("""
    import sys, threading, time
    from loom.store.db import open_database
    from loom.store.workspace import Workspace
    ws = Workspace(open_database(sys.argv[1]))
    want, poll = int(sys.argv[2]), float(sys.argv[3])
    cursor = ws.follow()
    woken = threading.Event()
    listener = ws.listen(woken.set)
    if listener is not None:
        listener.ready.wait(10)
    print("ready", flush=True)
    got = 0
    while got < want:
        woken.clear()  # before reading: a commit during the read wakes the next wait
        changes = cursor.poll()
        now = time.time()  # when the reader has them
        for change in changes:
            if change.kind == "node.continuation":
                got += 1
                print(change.entity, now, flush=True)
        if got >= want:
            break
        if listener is not None:
            woken.wait(5.0)
        else:
            time.sleep(poll)
    if listener is not None:
        listener.stop()
""")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def run(target: str, writers: int, nodes: int, poll: float) -> tuple[float, float, float]:
    """(writes/s, p50 ms, p99 ms) for ``writers`` processes × ``nodes`` on ``target``."""
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(target))
    ws.create_tree("bench")
    ws.db.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    follower = subprocess.Popen([sys.executable, "-c", FOLLOWER, target, str(writers * nodes),
                                 str(poll)], stdout=subprocess.PIPE, text=True, env=env)
    assert follower.stdout is not None and follower.stdout.readline().strip() == "ready"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, target, f"w{k}", str(nodes)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for k in range(writers)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    started = time.time()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    committed: dict[str, float] = {}
    for p in procs:
        out, _ = p.communicate(timeout=1800)
        for line in out.split("\n"):
            if line.strip():
                nid, t = line.split()
                committed[nid] = float(t)
    elapsed = max(committed.values()) - started
    out, _ = follower.communicate(timeout=300)
    arrived = {nid: float(t) for nid, t in (ln.split() for ln in out.split("\n") if ln.strip())}
    latencies = [1000 * (arrived[n] - committed[n]) for n in committed if n in arrived]
    missing = len(committed) - len(latencies)
    if missing:
        print(f"    ({missing} changes never arrived)")
    return len(committed) / elapsed, statistics.median(latencies), pct(latencies, 99)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=200, help="per writer")
    ap.add_argument("--writers", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--poll", type=float, default=0.5, help="SQLite's poll interval (s)")
    args = ap.parse_args()

    from tests import pg_cluster

    print(f"{'backend':<11} {'writers':>7} {'nodes':>6} {'writes/s':>9} "
          f"{'p50 ms':>8} {'p99 ms':>8}")
    with pg_cluster.running() as cluster, tempfile.TemporaryDirectory() as tmp:
        for writers in args.writers:
            for backend in ("postgresql", "sqlite"):
                if backend == "sqlite":
                    target = str(Path(tmp) / f"w{writers}.db")
                else:
                    name = f"bench{writers}"
                    cluster.admin(f"CREATE DATABASE {name}")
                    target = cluster.url(name)
                rate, p50, p99 = run(target, writers, args.nodes, args.poll)
                print(f"{backend:<11} {writers:>7} {writers * args.nodes:>6} {rate:>9.0f} "
                      f"{p50:>8.1f} {p99:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
