"""Language-server benchmarks: the real server over stdio, a 100,000-node tree and a
2,000-node path (~300 KB buffer). Prints p50/p99; asserts nothing.

Targets on this 2-core machine: completion, hover, definition p99 ≤ 30 ms; a keystroke's
didChange ≤ 5 ms; full semantic tokens of the long buffer ≤ 100 ms.

Run: .venv/bin/python bench/bench_lsp.py [--nodes 100000] [--deep 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

from lsp_session import start_server, stop_server, timed


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def build(db: Path, nodes: int, deep: int) -> tuple[str, list[str]]:
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace

    rng = random.Random(3)
    ws = Workspace(open_database(db))
    ws.human()
    ws.subject()
    words = ("the house stood empty at the end of the lane she had not visited since her "
             "mother died and the windows watched her with something like reproach").split()
    tree = ws.create_tree("bench", "buffer", root_content="Once.")
    root = ws.node(tree.root)
    specs, keys = [], []
    for i in range(deep):
        text = " " + " ".join(rng.choice(words) for _ in range(26)) + "."
        specs.append(NewNode(f"d{i}", keys[-1] if keys else None, text,
                             "model" if i % 2 else "human", "model" if i % 2 else "human"))
        keys.append(f"d{i}")
    pool = list(keys)
    for i in range(nodes - deep - 1):
        parent = rng.choice(pool)
        specs.append(NewNode(f"n{i}", parent, " " + " ".join(rng.choice(words) for _ in
                                                             range(12)) + ".", "model", "model"))
        pool.append(f"n{i}")
    built = ws.bulk_add(tree, root, specs)
    tip = built[f"d{deep - 1}"]
    ws.set_position(ws.human(), tree, tip, tip)
    return f"loom://path/{tree.id}/{tip.local_id}", [built[k].local_id for k in keys]



def report(name: str, ms: list[float], target: str) -> None:
    print(f"{name:<34} p50 {statistics.median(ms):7.2f} ms   p99 {pct(ms, 99):7.2f} ms   "
          f"(n={len(ms)}; {target})")


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--deep", type=int, default=2_000)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-lsp-"))
    db = tmp / "bench.db"
    t = time.perf_counter()
    uri, path_ids = build(db, args.nodes, args.deep)
    print(f"built {args.nodes:,} nodes ({args.deep:,}-deep path) in "
          f"{time.perf_counter() - t:.1f} s")

    client = await start_server(db)
    content = await client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=uri))
    text = content.text
    print(f"path buffer: {len(text):,} characters, {len(text.encode()):,} bytes")
    version = 1
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="loom", version=1, text=text)))
    doc = lsp.TextDocumentIdentifier(uri=uri)
    lines = text.split("\n")
    last_line = len(lines) - 1
    # a command line at the end to complete, hover and jump from
    ref = path_ids[len(path_ids) // 2]
    cmd = f"\n→ view {ref} full"
    version += 1
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(last_line, len(lines[-1])),
                            lsp.Position(last_line, len(lines[-1]))), text=cmd)]))
    cmd_line = last_line + 1
    await client.protocol.send_request_async("loom/status", {"uri": uri})  # settle

    ref_char = len("→ view ") + 2
    rng = random.Random(5)

    async def completion(i: int) -> None:
        await client.text_document_completion_async(lsp.CompletionParams(
            text_document=doc, position=lsp.Position(cmd_line, len("→ view ") + 2)))

    async def hover(i: int) -> None:
        await client.text_document_hover_async(lsp.HoverParams(
            text_document=doc, position=lsp.Position(cmd_line, ref_char)))

    async def hover_text(i: int) -> None:
        await client.text_document_hover_async(lsp.HoverParams(
            text_document=doc, position=lsp.Position(0, rng.randint(0, 200_000))))

    async def definition(i: int) -> None:
        await client.text_document_definition_async(lsp.DefinitionParams(
            text_document=doc, position=lsp.Position(cmd_line, ref_char)))

    async def lenses(i: int) -> None:
        await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=doc))

    async def tokens(i: int) -> None:
        await client.text_document_semantic_tokens_full_async(
            lsp.SemanticTokensParams(text_document=doc))

    async def ping(i: int) -> None:
        await client.protocol.send_request_async("loom/status", {"uri": uri})

    n = args.samples
    for name, fn, count, target in (
        ("completion (localId after → view)", completion, n, "target p99 ≤ 30 ms"),
        ("hover (node reference)", hover, n, "target p99 ≤ 30 ms"),
        ("hover (text in the buffer)", hover_text, n, "target p99 ≤ 30 ms"),
        ("definition", definition, n, "target p99 ≤ 30 ms"),
        ("code lens (whole buffer)", lenses, 30, ""),
        ("semantic tokens, full", tokens, 30, "target ≤ 100 ms"),
    ):
        await fn(0)
        report(name, await timed(fn, count), target)

    baseline = await timed(ping, n)
    report("round trip baseline (loom/status)", baseline, "")
    state = {"version": version, "typed_end": 0}

    def keystroke(line: int, char: int) -> None:
        state["version"] += 1
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=state["version"]),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(lsp.Position(line, char), lsp.Position(line, char)), text="x")]))

    async def type_end(i: int) -> None:
        keystroke(cmd_line + 1 if i else cmd_line, 0 if i == 0 else i)
        await ping(i)

    end_line_text = "\n"
    state["version"] += 1
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=state["version"]),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(lsp.Position(cmd_line, len(cmd) - 1),
                            lsp.Position(cmd_line, len(cmd) - 1)), text=end_line_text)]))
    at_end = [x - statistics.median(baseline) for x in await timed(type_end, n)]
    report("didChange: typing at the end", at_end, "target ≤ 5 ms (net of round trip)")
    middle = 100_000

    async def type_middle(i: int) -> None:
        keystroke(0, middle + i)
        await ping(i)

    in_middle = [x - statistics.median(baseline) for x in await timed(type_middle, n)]
    report("didChange: typing in the middle", in_middle, "target ≤ 5 ms (net of round trip)")
    await stop_server(client)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
