"""Model-layer benchmarks (figures only, no assertions).

1. Overhead Loom adds to one streamed continuation (n=1) over a direct ``openai`` SDK
   call, both against the same local fake server: medians of RUNS interleaved runs.
   Target: ratio ≤ 1.1.
2. The bundled local model (SmolLM2-135M on llama-cpp-python): time to first token and
   tokens per second, medians of a few runs at max_tokens 64.

Run: ``.venv/bin/python bench/bench_models.py [--runs 50] [--skip-local]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo, for tests.e2e

import openai
from tests.e2e.fake_provider import FakeProvider

from loom.llm import ModelError, ModelProfile, make_provider

KEY_ENV = "LOOM_BENCH_KEY"
TEXT = " ".join(f"word{i}" for i in range(50))  # a 50-piece streamed continuation


async def overhead(runs: int) -> None:
    os.environ[KEY_ENV] = "bench-key-0123456789"
    os.environ["LOOM_NO_KEYRING"] = "1"
    with FakeProvider(text=TEXT) as fake:
        client = openai.AsyncOpenAI(
            api_key=os.environ[KEY_ENV], base_url=fake.openai_base_url, max_retries=0, timeout=30
        )
        provider = make_provider(
            ModelProfile(
                name="bench",
                provider="openai-compatible",
                model="fake-base",
                base_url=fake.openai_base_url,
                api_key_env=KEY_ENV,
                max_tokens=50,
            )
        )

        async def direct() -> str:
            parts: list[str] = []
            stream = await client.completions.create(
                model="fake-base",
                prompt="Once",
                max_tokens=50,
                temperature=0.9,
                n=1,
                stream=True,
            )
            async with stream:
                async for chunk in stream:
                    for choice in chunk.choices:
                        parts.append(choice.text)
            return "".join(parts)

        async def loom() -> str:
            parts: list[str] = []
            result = await provider.complete(
                "Once", n=1, on_delta=lambda _i, s: parts.append(s), cancel=asyncio.Event()
            )
            return result.completions[0].text

        for _ in range(5):  # warm up connections, imports, caches
            assert await direct() == await loom() == TEXT
        wall: dict[str, list[float]] = {"direct": [], "loom": []}
        cpu: dict[str, list[float]] = {"direct": [], "loom": []}
        for _ in range(runs):  # interleaved, so drift in machine load hits both alike
            for name, fn in (("direct", direct), ("loom", loom)):
                started, cpu_started = time.perf_counter(), time.process_time()
                await fn()
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.process_time() - cpu_started) * 1000)
        d, lo = statistics.median(wall["direct"]), statistics.median(wall["loom"])
        dc, lc = statistics.median(cpu["direct"]), statistics.median(cpu["loom"])
        print(f"continuation overhead (n=1, streaming, 50 chunks, {runs} runs each)")
        print(f"  direct openai SDK  median {d:7.2f} ms wall  {dc:7.2f} ms cpu")
        print(f"  loom provider      median {lo:7.2f} ms wall  {lc:7.2f} ms cpu")
        print(f"  ratio              {lo / d:7.3f}x wall  {lc / dc:7.3f}x cpu  (target ≤ 1.1x)")
        print("  (cpu: this process, fake server threads included, for both sides alike)")
        await client.close()


async def local_model(runs: int, max_tokens: int) -> None:
    provider = make_provider(
        ModelProfile(name="local", provider="local", model="SmolLM2-135M-Instruct")
    )
    started = time.perf_counter()
    try:
        await provider.complete("Hello", max_tokens=1)  # load once, outside the figures
    except ModelError as exc:
        print(f"local model: skipped ({exc.message}; {exc.hint})")
        return
    print(
        f"local model (SmolLM2-135M, max_tokens {max_tokens}, {runs} runs, "
        f"{os.cpu_count()} threads)"
    )
    print(f"  load + first call  {(time.perf_counter() - started) * 1000:7.0f} ms")
    ttfts, rates, counts = [], [], []
    for i in range(runs):
        first: list[float] = []

        def on_delta(_index: int, _piece: str, first: list[float] = first) -> None:
            if not first:
                first.append(time.perf_counter())

        t0 = time.perf_counter()
        result = await provider.complete(
            f"Story {i}: Once upon a time", max_tokens=max_tokens, on_delta=on_delta
        )
        end = time.perf_counter()
        tokens = result.completions[0].usage.completion_tokens or 0
        ttfts.append((first[0] - t0) * 1000)
        rates.append((tokens - 1) / (end - first[0]) if tokens > 1 else float("nan"))
        counts.append(tokens)
    print(f"  time to first token  median {statistics.median(ttfts):7.1f} ms")
    print(
        f"  tokens per second    median {statistics.median(rates):7.1f} tok/s "
        f"(tokens generated: {counts})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--local-runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    asyncio.run(overhead(args.runs))
    if not args.skip_local:
        asyncio.run(local_model(args.local_runs, args.max_tokens))


if __name__ == "__main__":
    main()
