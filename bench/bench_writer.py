"""What a writer waits for, measured on the real server over stdio: hovering a
node (its card: own text, labelled summary, generation details), opening the 764-node
socketteer import (reading its path and its overview, drawing its picture), and full-text
search over 100,000 nodes (FTS5), plus the people overview and picture of that tree.
Prints p50/p99; asserts nothing.

Run: .venv/bin/python bench/bench_writer.py [--nodes 100000] [--samples 100]
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
from pygls.lsp.client import LanguageClient

from lsp_session import start_server, stop_server, timed

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / \
    "socketteer-loom-demo.json"
WORDS = ("the house stood empty at the end of the lane she had not visited since her mother "
         "died and the windows watched her with something like reproach walnut key shutter "
         "kitchen ash lavender clock gate latch garden river letter notary village").split()


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def report(name: str, ms: list[float]) -> None:
    print(f"{name:<46} p50 {statistics.median(ms):8.2f} ms   p99 {pct(ms, 99):8.2f} ms   "
          f"(n={len(ms)})")



def build_big(db: Path, nodes: int) -> str:
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace

    rng = random.Random(11)
    ws = Workspace(open_database(db))
    ws.human()
    ws.subject()
    tree = ws.create_tree("a hundred thousand", "buffer", root_content="Once.")
    specs: list[NewNode] = []
    keys: list[str] = []
    for i in range(nodes - 1):
        parent = rng.choice(keys) if keys and rng.random() < 0.9 else (keys[-1] if keys else None)
        text = " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + "."
        specs.append(NewNode(f"n{i}", parent, text, "model" if i % 2 else "human",
                             "model" if i % 2 else "human"))
        keys.append(f"n{i}")
    ws.bulk_add(tree, ws.node(tree.root), specs)
    return tree.id


async def request(client: LanguageClient, method: str, params: object) -> object:
    return await client.protocol.send_request_async(method, params)


def get(obj: object, key: str) -> object:
    """A field of an answer (pygls gives objects for some, dicts for others)."""
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=100)
    args = ap.parse_args()
    n = args.samples
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-writer-"))

    # ── the 764-node socketteer import ──
    db = tmp / "import.db"
    from loom.app import open_app
    from loom.commands import syntax
    from loom.demo import create_demo

    app = open_app(db, use_default_subject=False)
    create_demo(app.ws)
    t = time.perf_counter()
    result = app.executor.execute(syntax.Import(path=str(FIXTURE)), app.actor(None))  # type: ignore[arg-type]
    print(f"import of the 764-node socketteer file: {(time.perf_counter() - t) * 1000:.0f} ms "
          f"({result.text.splitlines()[0]})")
    client = await start_server(db)
    trees = await request(client, "loom/trees", {})
    imported = next(x for x in trees if get(x, "title") != "The House at the End of the Lane")
    demo = next(x for x in trees if get(x, "title") == "The House at the End of the Lane")
    imported_path, imported_uri, imported_id = (get(imported, k) for k in ("pathUri", "uri",
                                                                            "id"))
    demo_path = get(demo, "pathUri")

    async def open_path(i: int) -> None:
        await request(client, "loom/read", {"uri": imported_path})

    async def open_overview(i: int) -> None:
        await request(client, "loom/read", {"uri": imported_uri})

    async def picture(i: int) -> None:
        await request(client, "loom/picture", {"tree": imported_id})

    report("open the imported path (loom/read)", await timed(open_path, n))
    report("open the imported overview (764 nodes)", await timed(open_overview, n))
    report("tree picture of the import (SVG + map)", await timed(picture, max(10, n // 5)))

    # hover on the demo's model text, through the open document
    read = await request(client, "loom/read", {"uri": demo_path})
    text = str(get(read, "text"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=str(demo_path), language_id="loom", version=1,
                                           text=text)))
    at = text.index("windows seemed") + 3

    async def hover(i: int) -> None:
        await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=str(demo_path)),
            position=lsp.Position(0, at)))

    await hover(0)
    report("hover on model text (card)", await timed(hover, n))
    await stop_server(client)

    # ── search over 100,000 nodes ──
    big = tmp / "big.db"
    t = time.perf_counter()
    tree_id = build_big(big, args.nodes)
    print(f"built {args.nodes:,} nodes (FTS index kept by triggers) in "
          f"{time.perf_counter() - t:.1f} s")
    client = await start_server(big)
    rng = random.Random(3)

    async def search_word(i: int) -> None:
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="loom.search", arguments=[{"query": rng.choice(WORDS)}]))

    async def search_two(i: int) -> None:
        await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="loom.search",
            arguments=[{"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)[:3]}"}]))

    async def symbols(i: int) -> None:
        await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=rng.choice(WORDS)))

    await search_word(0)
    report(f"search, one word ({args.nodes:,} nodes, 50 hits)", await timed(search_word, n))
    report("search, a word and a word's start", await timed(search_two, n))
    report("workspace/symbol (trees, bookmarks, text)", await timed(symbols, n))

    async def overview(i: int) -> None:
        await request(client, "loom/read", {"uri": f"loom://tree/{tree_id}"})

    report(f"overview of {args.nodes:,} nodes (first 3,000 lines)", await timed(overview, 5))
    await stop_server(client)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
