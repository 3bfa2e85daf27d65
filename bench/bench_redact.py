"""Redaction benchmarks (figures only, no assertions).

1. ``redact`` throughput on clean prose (the socketteer demo tree's text, 0.34 MB) and on
   text dense with secrets (a sample of every shape in every line).
2. The stream redactor: microseconds per streamed piece, prose and secret-dense.
3. The provider door on a 50-piece streamed result: what ``_finish`` (flush, logprobs,
   raw scrubbing) costs per call.

Run: ``.venv/bin/python bench/bench_redact.py``
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repo, for tests.*

from tests.e2e.fake_provider import openai_completion_chunks  # noqa: E402
from tests.redaction_samples import SAMPLES  # noqa: E402

from loom.llm.base import Completion, GenerationResult  # noqa: E402
from loom.llm.redact_stream import StreamRedactor  # noqa: E402
from loom.llm.redacting import _finish  # noqa: E402
from loom.redact import PATTERNS, redact  # noqa: E402

FIXTURE = ROOT.parent / "shared" / "fixtures" / "socketteer-loom-demo.json"


def median_s(fn: Callable[[], object], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def texts_of(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts_of(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts_of(v)]
    return []


def pieces(text: str, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(text):
        step = rng.randint(2, 7)
        out.append(text[at:at + step])
        at += step
    return out


def stream_us(parts: list[str]) -> float:
    def run() -> None:
        r = StreamRedactor()
        for p in parts:
            r.feed(p)
        r.flush()

    return median_s(run) / len(parts) * 1e6


def main() -> None:
    print(f"patterns in the table: {len(PATTERNS)}")
    prose = "\n".join(texts_of(json.loads(FIXTURE.read_text(encoding="utf-8"))))
    dense = "".join(f"line {i}: {s.text} and prose.\n" for i, s in enumerate(SAMPLES)) * 20
    for name, text in (("prose (socketteer demo)", prose), ("secret-dense", dense)):
        seconds = median_s(lambda text=text: redact(text))
        print(f"redact {name:26s} {len(text) / 1e6:6.2f} MB  {len(text) / seconds / 1e6:7.1f} MB/s")
    changed = sum(1 for t in texts_of(json.loads(FIXTURE.read_text())) if redact(t) != t)
    print(f"false positives in the demo tree's {len(texts_of(json.loads(FIXTURE.read_text())))}"
          f" strings: {changed}")
    prose_parts = pieces(prose[:20_000])
    dense_parts = pieces(dense[:20_000])
    print(f"stream: {stream_us(prose_parts):6.2f} µs per piece (prose), "
          f"{stream_us(dense_parts):6.2f} µs per piece (secret-dense)")
    text = " ".join(f"word{i}" for i in range(50))
    raw = openai_completion_chunks([text])

    def finish() -> None:
        streams = [StreamRedactor()]
        for p in raw:
            for choice in p["choices"]:
                streams[0].feed(choice["text"])
        result = GenerationResult(completions=[Completion(index=0, text=text)], model="m",
                                  provider="p", latency_ms=1.0, raw=json.loads(json.dumps(raw)))
        _finish(result, streams, lambda _i, _s: None)

    print(f"door, one 50-piece continuation (stream + finish): {median_s(finish) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
