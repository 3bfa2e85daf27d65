"""Parser throughput on a mixed corpus: canonical, natural-language, typos, invalid.

Run: ``.venv/bin/python bench/bench_parse.py [--lines N] [--rounds R]``. Prints lines/s
(median of the rounds, by wall clock and by CPU time) and per-line p50/p99 in
microseconds, overall and per kind.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from loom.commands.grammar import parse

IDS = ("a7x2", "b3k9", "c4m2", "d5n7", "r001", "x9y3", "kzmqhb", "47", "8.2", "ann-3", "a7x2'")
DOCS = ("character notes", "research", "chapter 3", "notes")
TEXTS = (
    "this is where the tone shifts",
    "Marie's reluctance stems from her childhood",
    'she said \\"no\\" and left',
    "key turning point—character motivation established",
)

CANONICAL = (
    "→ view {id}",
    "→ view {id} full",
    "→ view {id} with-annotations",
    "→ view {id} summary",
    "→ view branch:{id} as:prose",
    "→ list {id} continuations",
    "→ list {id} annotations",
    "→ list {id} links",
    "→ tree",
    "→ tree from:{id} depth:3",
    "→ tree summary",
    "→ switch to {id}",
    '→ switch to {id} in tree:"earlier draft"',
    "→ continue",
    "→ continue from {id} n:3 tokens:40",
    '→ respond {id} "{text}" as:context',
    '→ annotate {id} "{text}"',
    "→ link {id} to b3k9",
    '→ link {id} to doc:"{doc}" note:"supports the theory"',
    '→ edit {id} "{text}"',
    '→ read doc:"{doc}"',
    '→ read doc:"{doc}" lines:1-50',
    '→ write doc:"{doc}" append "{text}"',
    '→ write doc:"{doc}" at:end "{text}"',
    "→ pin {id}",
    '→ pin doc:"{doc}" section:motivation',
    '→ stash "insight" "{text}"',
    '→ stash "ref" content-of:{id}',
    '→ recall "insight"',
    "→ drop pin:{id}",
    '→ drop stash:"old notes"',
    "→ memory",
    "→ memory trace",
    "→ help",
    "→ help view",
    "→ think {text}",
)
NATURAL = (
    "show me node {id}",
    "→ could you show me {id}?",
    "please view {id}",
    "go to {id}",
    "→ let's continue from {id} with n:3",
    "→ continue from {id}, 3 continuations",
    "→ view {id} please",
    "→ I'd like to see the annotations on {id}",
    "→ add a note to {id}: “{text}”",
    "→ show the tree",
    "→ list continuations of {id}",
    "→ generate three continuations from {id}",
    "→ switch to branch {id}",
)
TYPOS = (
    "→ veiw {id}",
    '→ anotate {id} "{text}"',
    "→ view {id} ful",
    "→ swtich to {id}",
    "→ contineu from {id} n:2",
    "→ memory trce",
    "→ hlep view",
    "→ tre summary",
)
INVALID = (
    "→ lint {id}",
    "→ {id}",
    "→ dance with {id}",
    "→ annotate {id}",
    '→ annotate {id} "open',
    "→ switch",
    "→ continue n:lots",
    "→ view {id} sideways",
    "→ drop lines:3-7",
    "→",
)
KINDS = {"canonical": CANONICAL, "natural": NATURAL, "typo": TYPOS, "invalid": INVALID}
WEIGHTS = {"canonical": 0.5, "natural": 0.2, "typo": 0.15, "invalid": 0.15}


def corpus(size: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    kinds = list(KINDS)
    lines: list[tuple[str, str]] = []
    for _ in range(size):
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        template = rng.choice(KINDS[kind])
        line = template.format(id=rng.choice(IDS), doc=rng.choice(DOCS), text=rng.choice(TEXTS))
        lines.append((kind, line))
    return lines


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    lines = corpus(args.lines)
    texts = [line for _, line in lines]
    for line in texts[:200]:  # warm the regex and rapidfuzz caches
        parse(line)
    rates: list[float] = []
    cpu_rates: list[float] = []  # CPU time: steadier than wall time on a busy machine
    for _ in range(args.rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        for line in texts:
            parse(line)
        rates.append(len(texts) / (time.perf_counter() - t0))
        cpu_rates.append(len(texts) / max(time.process_time() - c0, 1e-9))
    per_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    clock = time.perf_counter
    for kind, line in lines:
        t0 = clock()
        parse(line)
        per_kind[kind].append((clock() - t0) * 1e6)
    every = [us for values in per_kind.values() for us in values]
    print(f"corpus: {len(texts)} lines, {args.rounds} rounds")
    print(
        f"throughput: {statistics.median(rates):,.0f} lines/s (median; "
        f"min {min(rates):,.0f}, max {max(rates):,.0f})"
    )
    print(f"throughput per CPU second: {statistics.median(cpu_rates):,.0f} lines/s (median)")
    print(f"per line: p50 {_percentile(every, 0.5):.1f} µs, p99 {_percentile(every, 0.99):.1f} µs")
    for kind, values in per_kind.items():
        print(
            f"  {kind:<10} n={len(values):>5}  p50 {_percentile(values, 0.5):6.1f} µs  "
            f"p99 {_percentile(values, 0.99):6.1f} µs"
        )


if __name__ == "__main__":
    main()
