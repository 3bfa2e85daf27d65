"""Token counts and speed of the Loom Protocol against JSON, YAML and TOON.

Counts tokens offline with real tokenizers (``bpe_openai``: o200k_base, and cl100k_base as a
second column), checks that every payload round-trips, and times encode/decode.

    .venv/bin/python bench/bench_protocol.py            # full run
    .venv/bin/python bench/bench_protocol.py --quick    # fewer timing repeats
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import bpe_openai
import toon_format
import yaml

from loom import protocol
from loom.protocol.seed_examples import EXAMPLE_2_VALUE, EXAMPLE_3_VALUE

# -- payloads ---------------------------------------------------------------------------------

SEED_1 = {
    "intent": "WORKFLOW_CREATE",
    "confidence": 0.95,
    "reasoning": "User wants to create a scheduled workflow with Slack notification",
    "extractedEntities": {
        "trigger": "schedule",
        "services": ["slack", "email"],
        "actions": ["send"],  # the seed's JSON has a one-element array here
    },
}

SEED_2 = EXAMPLE_2_VALUE
SEED_3 = EXAMPLE_3_VALUE

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Tim"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson"]

PROSE = [
    "The lighthouse keeper had not spoken to anyone in eleven days.",
    "She counted the stairs again, as if the number might have changed overnight.",
    "Outside, the fog pressed against the glass like a patient animal.",
    "He remembered the letter, folded twice, still unopened in his coat pocket.",
    "Nobody in the village believed the light had ever really gone out.",
    "The radio crackled, and for a moment she thought she heard her name.",
    "It was not the storm that frightened him, but the silence after it.",
    "Below, the tide was turning, slow and certain, the way it always had.",
    "She wrote the date in the log, then crossed it out and wrote it again.",
    "There was a boat on the horizon where no boat should have been.",
    "The old keeper used to say that the sea keeps its own calendar.",
    "He lit the lamp an hour early, just to have something to do.",
]

SUMMARIES = [
    "Keeper counts the stairs; fog arrives",
    "The unopened letter resurfaces",
    "Radio static, a voice, then nothing",
    "A boat appears where none should be",
    "Village rumours about the light",
    "She rewrites the date in the log",
    "Storm passes, silence remains",
    "The tide turns at dusk",
]


def users(n: int = 50) -> list[dict[str, Any]]:
    rng = random.Random(50)
    out = []
    for i in range(1, n + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        out.append(
            {
                "id": i,
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower()}{i}@example.com",
                "age": rng.randint(19, 77),
                "active": rng.random() < 0.7,
            }
        )
    return out


def local_id(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdefghjkmnpqrstvwxyz") for _ in range(4))


def node_list(n: int = 20) -> list[dict[str, Any]]:
    rng = random.Random(20)
    authors = ["human", "claude-3.5", "llama-3-8b", "human"]
    return [
        {
            "id": local_id(rng),
            "author": rng.choice(authors),
            "time": f"{rng.randint(1, 59)}m ago",
            "summary": rng.choice(SUMMARIES),
        }
        for _ in range(n)
    ]


NODE_VIEW = {
    "node": "a7x2",
    "author": "human",
    "time": "3m ago",
    "depth": 7,
    "summary": "The keeper finds the letter, unopened, in his coat pocket",
    "continuations": 3,
    "annotations": 1,
    "links": 1,
    "siblings": 2,
    "tree": "The Lighthouse",
    "path": ["r00t", "b3k9", "c4m2", "d8q1", "e2w7", "f5n3", "a7x2"],
    "mode": "buffer",
    "tokens": 412,
    "pinned": False,
    "editedFrom": None,
}


def tree_export(count: int = 30) -> dict[str, Any]:
    """A nested tree of ``count`` nodes with prose; some continuations start mid-sentence
    (a leading space) or span paragraphs, as model continuations do."""
    rng = random.Random(30)
    made = 0

    def text() -> str:
        parts = rng.sample(PROSE, rng.randint(1, 3))
        body = " ".join(parts)
        roll = rng.random()
        if roll < 0.2:
            return " " + body  # continues the previous node's sentence
        if roll < 0.4:
            return body + "\n\n" + rng.choice(PROSE)
        return body

    def node(depth: int) -> dict[str, Any]:
        nonlocal made
        made += 1
        author = "human" if depth % 2 == 0 else "claude-3.5"
        out: dict[str, Any] = {"id": local_id(rng), "author": author, "text": text()}
        children = []
        width = 1 if depth > 3 else rng.randint(1, 3)
        for _ in range(width):
            if made >= count:
                break
            children.append(node(depth + 1))
        out["children"] = children
        return out

    root = node(0)
    while made < count:  # graft what is left onto the root
        root["children"].append(node(1))
    return {"tree": "The Lighthouse", "exported": "2025-01-14T09:30:00Z", "root": root}


MEMORY_STATE = {
    "budget": {"limit": 8000, "used": 5230, "counted": "o200k_base"},
    "pins": [
        {"node": "a7x2", "label": "the letter", "tokens": 120},
        {"node": "c4m2", "label": "keeper's voice", "tokens": 340},
        {"node": "e2w7", "label": "storm scene", "tokens": 415},
    ],
    "stashes": [
        {"id": "s1", "label": "village rumours", "tokens": 830, "from": "d8q1"},
        {"id": "s2", "label": "radio transcript", "tokens": 1210, "from": "f5n3"},
        {"id": "s3", "label": "tide tables", "tokens": 95, "from": "b3k9"},
        {"id": "s4", "label": "first draft of the ending", "tokens": 2020, "from": "a7x2"},
    ],
    "trace": [
        {"step": 1, "action": "view", "target": "a7x2", "result": "ok", "tokens": 120},
        {"step": 2, "action": "search", "target": "lighthouse", "result": "4 hits", "tokens": 210},
        {"step": 3, "action": "pin", "target": "a7x2", "result": "ok", "tokens": 0},
        {"step": 4, "action": "continue", "target": "a7x2", "result": "3 nodes", "tokens": 540},
        {"step": 5, "action": "view", "target": "c4m2", "result": "ok", "tokens": 340},
        {"step": 6, "action": "annotate", "target": "c4m2", "result": "ann-3", "tokens": 45},
        {"step": 7, "action": "stash", "target": "d8q1", "result": "s1", "tokens": 830},
        {"step": 8, "action": "link", "target": "e2w7", "result": "ok", "tokens": 0},
        {"step": 9, "action": "edit", "target": "a7x2", "result": "a7x2'", "tokens": 150},
        {"step": 10, "action": "yield", "target": "human", "result": "ok", "tokens": 0},
    ],
}

PAYLOADS: dict[str, Any] = {
    "seed 1 classifier": SEED_1,
    "seed 2 enrichment": SEED_2,
    "seed 3 workflow": SEED_3,
    "50 user records": {"users": users()},
    "20 node records": {"nodes": node_list()},
    "loom node view": NODE_VIEW,
    "loom tree export": tree_export(),
    "loom memory state": MEMORY_STATE,
}
GROUPS = {
    "seed examples": ["seed 1 classifier", "seed 2 enrichment", "seed 3 workflow"],
    "uniform records": ["50 user records", "20 node records"],
    "loom payloads": ["loom node view", "loom tree export", "loom memory state"],
}

# -- formats ----------------------------------------------------------------------------------

FORMATS: dict[str, Callable[[Any], str]] = {
    "loom": protocol.dumps,
    "json": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "json-pretty": lambda v: json.dumps(v, indent=2, ensure_ascii=False),
    "yaml": lambda v: yaml.safe_dump(v, allow_unicode=True, sort_keys=False),
    "toon": toon_format.encode,
}
DECODERS: dict[str, Callable[[str], Any]] = {
    "loom": protocol.loads,
    "json": json.loads,
    "yaml": yaml.safe_load,
    "toon": toon_format.decode,
}


def token_table(encoding: str) -> tuple[list[list[str]], dict[str, dict[str, int]]]:
    enc = bpe_openai.get_encoding(encoding)
    counts: dict[str, dict[str, int]] = {}
    for name, value in PAYLOADS.items():
        counts[name] = {f: len(enc.encode_ordinary(dump(value))) for f, dump in FORMATS.items()}
    rows = []
    for name in PAYLOADS:
        rows.append([name, *_cells(counts[name])])
    for group, names in GROUPS.items():
        total = {f: sum(counts[n][f] for n in names) for f in FORMATS}
        rows.append([f"total: {group}", *_cells(total)])
    grand = {f: sum(c[f] for c in counts.values()) for f in FORMATS}
    rows.append(["total: all", *_cells(grand)])
    return rows, counts


def _cells(c: dict[str, int]) -> list[str]:
    base = c["json"]
    return [f"{c[f]} ({c[f] / base:.2f})" if f != "json" else str(base) for f in FORMATS]


def round_trips() -> list[list[str]]:
    rows = []
    for name, value in PAYLOADS.items():
        row = [name]
        for f in ("loom", "toon", "yaml"):
            try:
                ok = DECODERS[f](FORMATS[f](value)) == value
            except Exception as e:  # a baseline that cannot read its own output
                ok = False
                row.append(f"error: {type(e).__name__}")
                continue
            row.append("ok" if ok else "MISMATCH")
        rows.append(row)
    return rows


def speed(repeat: int) -> list[list[str]]:
    rows = []
    for name, value in PAYLOADS.items():
        row = [name]
        for f in ("loom", "json", "toon"):
            text = FORMATS[f](value)
            row.append(_median_us(lambda f=f, value=value: FORMATS[f](value), repeat))
            row.append(_median_us(lambda f=f, text=text: DECODERS[f](text), repeat))
        rows.append(row)
    return rows


def _median_us(fn: Callable[[], Any], repeat: int) -> str:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()  # enough calls for about 0.2 s
    number = max(1, number // 4)
    runs = timer.repeat(repeat=repeat, number=number)
    return f"{statistics.median(runs) / number * 1e6:.1f}"


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        print("  ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timing repeats")
    parser.add_argument("--no-timing", action="store_true", help="token counts only")
    parser.add_argument("--show", metavar="PAYLOAD", help="print one payload in Loom and TOON")
    args = parser.parse_args()
    if args.show:
        value = PAYLOADS[args.show]
        print(protocol.dumps(value), "\n---\n", toon_format.encode(value), sep="")
        return 0

    header = ["payload", *FORMATS]
    for encoding in ("o200k_base", "cl100k_base"):
        rows, _ = token_table(encoding)
        print_table(f"Tokens ({encoding}); (ratio to compact json)", header, rows)

    checks = round_trips()
    print_table("Round trip: decode(encode(v)) == v", ["payload", "loom", "toon", "yaml"], checks)
    failures = sum(1 for r in checks if r[1] != "ok")

    if args.no_timing:
        return 1 if failures else 0
    timing = speed(5 if args.quick else 15)
    print_table(
        "Speed: median µs per call",
        ["payload", "loom enc", "loom dec", "json enc", "json dec", "toon enc", "toon dec"],
        timing,
    )
    print(f"\nLoom round-trip failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
