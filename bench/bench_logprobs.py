"""The cost of storing and serving token probabilities. Prints figures; asserts
nothing.

1. **Writes**: ``→ continue n:5 tokens:50`` through the executor with a subject answering
   realistic per-token entries (k=5 alternatives), against the same without logprobs:
   milliseconds and database bytes per 1,000 generated tokens (the compact table, and what
   the same entries take as JSON).
2. **Colouring** a 2,000-node path (~250 KB buffer, model text with token data): the
   semantic tokens the server computes with the probability colours off and on (goal: ≤ 20
   ms added), in process (the server's own work) and over the wire.
3. **Serving**, the real server over stdio on that path: hover on a token (p50/p99), full
   semantic tokens off and on, and the delta answer after a keystroke.

Run: .venv/bin/python bench/bench_logprobs.py [--runs 40] [--deep 2000] [--model-share 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lsprotocol import types as lsp

from bench_lsp import pct, timed  # (bench/ is the script's directory)
from lsp_session import start_server, stop_server

WORDS = ("the house stood empty at the end of the lane she had not visited since her "
         "mother died and the windows watched her with something like reproach , . ; "
         "kitchen smelled of cold ash lavender clock wall stopped twenty past four key "
         "under third shutter walnut trees dropped leaves garden gate latch").split()


def report(name: str, ms: list[float], note: str = "") -> None:
    print(f"{name:<44} p50 {statistics.median(ms):7.2f} ms   p99 {pct(ms, 99):7.2f} ms"
          f"   (n={len(ms)}){'   ' + note if note else ''}")


def fake_entries(rng: random.Random, n: int, k: int = 5) -> list[dict[str, Any]]:
    """n tokens as a provider returns them: a word each, its logprob drawn the way a base
    model's are (mostly confident, a long tail), and k alternatives."""
    out = []
    for _ in range(n):
        word = rng.choice(WORDS)
        token = word if word in ",.;" else " " + word
        lp = -rng.expovariate(1.2)
        alts = sorted({(" " + rng.choice(WORDS), -rng.expovariate(0.6)) for _ in range(k - 1)},
                      key=lambda a: -a[1])
        top = [{"token": token, "logprob": lp}] + [{"token": a, "logprob": x} for a, x in alts]
        out.append({"token": token, "logprob": lp, "top_logprobs": top[:k]})
    return out


class Subject:
    def __init__(self, tokens: int, logprobs: bool, seed: int = 1) -> None:
        self.rng, self.tokens, self.logprobs = random.Random(seed), tokens, logprobs

    def generate(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        comps = []
        for i in range(request.n):
            entries = fake_entries(self.rng, self.tokens)
            comps.append(SimpleNamespace(index=i, text="".join(e["token"] for e in entries),
                                         finish_reason="length", usage=None,
                                         logprobs=entries if self.logprobs else None))
        raw = [{"choices": [{"index": c.index, "text": c.text,
                             "logprobs": {"tokens": [e["token"] for e in c.logprobs]}
                             if c.logprobs else None}]} for c in comps]
        return SimpleNamespace(completions=comps, model="bench", provider="openai-compatible",
                               params={"n": request.n, "logprobs": 5 if self.logprobs else None},
                               usage={}, latency_ms=1.0, raw=raw)


def db_bytes(db: Path) -> int:
    import sqlite3

    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = con.execute("PRAGMA page_count").fetchone()[0] * \
        con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    return size


def bench_writes(runs: int) -> None:
    from loom.app import open_app
    from loom.commands.context import Actor

    print("── writes: → continue n:5 tokens:50, k=5 ──")
    figures = {}
    for logprobs in (False, True):
        tmp = Path(tempfile.mkdtemp(prefix="loom-bench-lp-"))
        app = open_app(tmp / "w.db", use_default_subject=False)
        app.executor.subject = Subject(50, logprobs)
        tree = app.ws.create_tree("bench", root_content="Once.")
        actor = Actor(app.ws.human(), tree)
        start = db_bytes(tmp / "w.db")
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            res = app.executor.execute("→ continue n:5 tokens:50", actor)
            times.append((time.perf_counter() - t) * 1000)
            assert res.ok, res.text
        tokens = runs * 5 * 50
        grown = db_bytes(tmp / "w.db") - start
        figures[logprobs] = (statistics.median(times) / 250 * 1000, grown / tokens * 1000)
        if logprobs:
            rows = app.ws.db.execute_sql("SELECT sum(length(data)), sum(count) FROM node_tokens"
                                         ).fetchone()
            per_k = rows[0] / rows[1] * 1000
            rng = random.Random(1)
            as_json = len(json.dumps(fake_entries(rng, 1000), ensure_ascii=False).encode())
            print(f"token data: {per_k / 1024:.1f} KB per 1,000 tokens stored "
                  f"({rows[1]:,} tokens); the same entries as JSON: {as_json / 1024:.1f} KB "
                  f"({as_json / per_k:.0f}x)")
    (t0, b0), (t1, b1) = figures[False], figures[True]
    print(f"write time per 1,000 tokens: {t1:.1f} ms with logprobs, {t0:.1f} ms without "
          f"(+{t1 - t0:.1f} ms)")
    print(f"database growth per 1,000 tokens: {b1 / 1024:.1f} KB with logprobs, "
          f"{b0 / 1024:.1f} KB without (+{(b1 - b0) / 1024:.1f} KB)")


def build_path(db: Path, deep: int, model_share: float) -> tuple[str, list[tuple[int, int]]]:
    """A ``deep``-node path of ~125-character nodes; model nodes carry token data. Returns
    the URI and the (start, end) of each model node's text in the buffer."""
    from loom.model import tokens as T
    from loom.store import node_tokens as token_store
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace

    rng = random.Random(3)
    ws = Workspace(open_database(db))
    ws.human()
    ws.subject()
    tree = ws.create_tree("bench", "buffer", root_content="Once.")
    root = ws.node(tree.root)
    specs, entries, keys = [], {}, []
    for i in range(deep):
        model = rng.random() < model_share
        e = fake_entries(rng, 24)
        text = "".join(x["token"] for x in e)
        specs.append(NewNode(f"d{i}", keys[-1] if keys else None, text,
                             "model" if model else "human", "model" if model else "human"))
        if model:
            entries[f"d{i}"] = e
        keys.append(f"d{i}")
    built = ws.bulk_add(tree, root, specs)
    with ws.db.atomic():
        for key, e in entries.items():
            node = built[key]
            token_store.save(ws, node.id, T.align(e, node.content, 5), 5)
    tip = built[keys[-1]]
    ws.set_position(ws.human(), tree, tip, tip)
    spans, pos = [], len(root.content)
    for key in keys:
        n = built[key]
        if key in entries:
            spans.append((pos, pos + len(n.content)))
        pos += len(n.content)
    return f"loom://path/{tree.id}/{tip.local_id}", spans


def bench_colouring(db: Path, uri: str, samples: int) -> None:
    """The server's own work: semantic tokens of the open buffer, colours off and on."""
    from loom.lsp.documents import OpenDocuments
    from loom.lsp.features import decorations, probabilities
    from loom.lsp.views import render
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(db))
    docs = OpenDocuments(ws, ws.human(), "utf-16")
    doc = docs.did_open(uri, render(ws, uri, ws.human()).text)
    print(f"── colouring (in process): {len(doc.text.encode()) / 1024:.0f} KB buffer ──")

    def run(fn) -> tuple[list[float], list[int]]:  # type: ignore[no-untyped-def]
        out, data = [], []
        for _ in range(samples):
            t = time.perf_counter()
            data = fn(docs, doc)
            out.append((time.perf_counter() - t) * 1000)
        return out, data

    off, data_off = run(decorations.semantic_tokens)
    t = time.perf_counter()
    probabilities.semantic_tokens(docs, doc)
    cold = (time.perf_counter() - t) * 1000
    on, data_on = run(probabilities.semantic_tokens)
    report("semantic tokens, probabilities off", off, f"{len(data_off) // 5:,} tokens")
    report("semantic tokens, probabilities on", on,
           f"{len(data_on) // 5:,} tokens; first (cold: decode + encode per node) {cold:.0f} ms")
    print(f"probability colours add {statistics.median(on) - statistics.median(off):.1f} ms "
          f"(p50; goal ≤ 20 ms); as JSON {len(json.dumps(data_on)) / 1024:.0f} KB vs "
          f"{len(json.dumps(data_off)) / 1024:.0f} KB")


async def bench_serving(db: Path, uri: str, spans: list[tuple[int, int]], deep: int,
                        samples: int) -> None:
    from loom.lsp.positions import TextDoc

    client = await start_server(db)
    text = (await client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))).text
    print(f"── serving: {deep:,}-node path, {len(text.encode()) / 1024:.0f} KB buffer, "
          f"{len(spans):,} model nodes with token data ──")
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="loom", version=1, text=text)))
    doc = lsp.TextDocumentIdentifier(uri=uri)
    text_doc = TextDoc(text, "utf-16")
    await client.protocol.send_request_async("loom/status", {"uri": uri})
    rng = random.Random(7)

    async def hover(_i: int) -> None:
        start, end = rng.choice(spans)
        got = await client.text_document_hover_async(lsp.HoverParams(
            text_document=doc, position=lsp.Position(*text_doc.position_at(
                rng.randrange(start, end)))))
        assert got is not None and "\n▸ " in got.contents.value
    report("hover on a model token", await timed(hover, samples))

    async def tokens(_i: int) -> None:
        await client.text_document_semantic_tokens_full_async(
            lsp.SemanticTokensParams(text_document=doc))
    off = await timed(tokens, max(10, samples // 10))
    report("semantic tokens, probabilities off", off)
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.toggleProbabilities", arguments=[{"on": True}]))
    first = await timed(tokens, 1)
    on = await timed(tokens, max(10, samples // 10))
    report("semantic tokens, probabilities on", on, f"first (cold) {first[0]:.1f} ms")
    print(f"over the wire (the bench's client parses with pygls): "
          f"+{statistics.median(on) - statistics.median(off):.1f} ms")
    last = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=doc))
    lines = text.split("\n")
    version = 1

    async def keystroke_delta(i: int) -> None:
        nonlocal last, version
        version += 1
        end = lsp.Position(len(lines) - 1, len(lines[-1]) + i)
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(end, end), text="x")]))
        got = await client.text_document_semantic_tokens_full_delta_async(
            lsp.SemanticTokensDeltaParams(text_document=doc,
                                          previous_result_id=last.result_id or ""))
        last = got  # type: ignore[assignment]
    report("a keystroke's delta, probabilities on", await timed(keystroke_delta, 30),
           "the edit of the previous answer")
    await stop_server(client)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--deep", type=int, default=2_000)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--model-share", type=float, default=1.0,
                    help="share of the path's nodes written by the model (1.0: all)")
    args = ap.parse_args()
    bench_writes(args.runs)
    db = Path(tempfile.mkdtemp(prefix="loom-bench-lp-lsp-")) / "s.db"
    uri, spans = build_path(db, args.deep, args.model_share)
    bench_colouring(db, uri, max(10, args.samples // 10))
    asyncio.run(bench_serving(db, uri, spans, args.deep, args.samples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
