"""A team's database restarted and down: how fast edits reach the other editor
before and after a restart, and how soon text saved while the database was down is
committed once it is back.

Two language servers (alice, bob) on one PostgreSQL workspace, from Debian's binaries in a
temporary directory (tests/pg_cluster.py), the sync loop's safety read 30 s away (so
anything faster came through NOTIFY). Prints:

- propagation: alice's save sent → bob's buffer shows the edit, p50/p95 over ``--edits``,
  before any restart and after each of ``--restarts`` restarts (``pg_ctl stop -m fast`` and
  ``start``), with the first edit after each restart shown on its own;
- outage: the database stopped, alice saves (answered "unreachable, kept"), the database
  started: the time from the server accepting connections again to alice's node being in
  the database, and to alice being told.

Run: ``python bench/bench_outage.py [--edits 20] [--restarts 4]``."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import pg_cluster
from tests.conftest import new_pg_database
from tests.lsp.conftest import Editor
from tests.lsp.test_team import _demo_path, _open, _rows, start_team
from tests.lsp.test_team_outage import _said


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _edit(alice: Editor, bob: Editor, uri: str, word: str, other: str) -> float:
    """Alice turns ``word`` into ``other`` and saves: ms until bob's buffer has it."""
    text = alice.texts[uri]
    at = text.index(word)
    alice.replace(uri, at, at + len(word), other)
    started = time.perf_counter()
    res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
    assert res["ok"], res
    await bob.wait_for(lambda: other in bob.texts[uri], timeout=30)
    return (time.perf_counter() - started) * 1000


async def _edits(alice: Editor, bob: Editor, uri: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        word, other = (("stopped", "paused") if "stopped at the gate" in alice.texts[uri]
                       else ("paused", "stopped"))
        out.append(await _edit(alice, bob, uri, f"{word} at the gate", f"{other} at the gate"))
    return out


def _line(name: str, ms: list[float]) -> None:
    print(f"  {name:<34} n={len(ms):>3}  p50 {statistics.median(ms):8.1f} ms  "
          f"p95 {pct(ms, 95):8.1f} ms  max {max(ms):8.1f} ms")


async def run(edits: int, restarts: int) -> None:
    with pg_cluster.running() as cluster:
        url = new_pg_database(cluster, template=False)
        alice, bob = await start_team(url)
        try:
            _tree, _tip, uri = _demo_path(url)
            await _open(alice, uri)
            await _open(bob, uri)
            print("propagation (alice's save → bob's buffer):")
            _line("before any restart", await _edits(alice, bob, uri, edits))
            firsts: list[float] = []
            after: list[float] = []
            for _ in range(restarts):
                cluster.halt("fast")
                cluster.resume()
                firsts += await _edits(alice, bob, uri, 1)
                after += await _edits(alice, bob, uri, edits)
            _line("first edit after a restart", firsts)
            _line("the edits after it", after)

            print("outage (saved while down; time from the database's return):")
            committed: list[float] = []
            told: list[float] = []
            for i in range(restarts):
                cluster.halt("fast")
                sentence = f" Saved while it was down, {i}."
                alice.append(uri, sentence)
                res = await alice.request("loom/save", {"uri": uri, "text": alice.texts[uri]})
                assert not res["ok"] and "unreachable" in res["message"], res
                seen = len(alice.client.messages)
                cluster.resume()
                back = time.perf_counter()
                while not _rows(url, "SELECT 1 FROM node WHERE content = %s", sentence):
                    await asyncio.sleep(0.01)
                committed.append((time.perf_counter() - back) * 1000)
                await alice.wait_for(lambda s=seen: any(
                    "the database is back" in m.message for m in alice.client.messages[s:]),
                    timeout=30)
                told.append((time.perf_counter() - back) * 1000)
                assert _said(alice, "committed")
            _line("back → alice's text committed", committed)
            _line("back → alice told", told)
        finally:
            for ed in (alice, bob):
                await ed.client.shutdown_session()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--restarts", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(run(args.edits, args.restarts))


if __name__ == "__main__":
    main()
