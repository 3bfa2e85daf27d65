"""Every request answered: the malformed-traffic set of ``tests/lsp/malformed.py`` against
the real server over stdio. Prints each case's outcome, the requests left without an
answer (the goal is 0) and the answer times; asserts nothing.

Run from the repository root: .venv/bin/python bench/bench_answered.py [--timeout 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.lsp.malformed import fresh_db, run_lifecycle, run_set


async def main(timeout: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = await run_set(fresh_db(Path(tmp) / "set"), timeout)
        outcomes += await run_lifecycle(fresh_db(Path(tmp) / "lifecycle"), timeout)
    for o in outcomes:
        print(f"{o.line}  ({o.seconds * 1000:.0f} ms)")
    unanswered = [o for o in outcomes if not o.answered]
    wrong = [o for o in outcomes if o.answered and not o.correct]
    times = [o.seconds * 1000 for o in outcomes if o.answered]
    print(f"\n{len(outcomes)} cases: {len(unanswered)} without an answer, "
          f"{len(wrong)} answered wrongly")
    if times:
        print(f"time to the expected answer: median {statistics.median(times):.0f} ms, "
              f"max {max(times):.0f} ms (cases that wait for a silent client include the "
              "server's own bound)")
    for o in wrong:
        print(f"  wrong: {o.case.name}: {str(o.got)[:300]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for each answer before counting it missing")
    asyncio.run(main(parser.parse_args().timeout))
