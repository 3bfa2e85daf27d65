"""``loom/nodeInfo`` and ``loom.siblings`` on a node with many siblings, through the real
server over stdio.

For each sibling count (default 500, 2,000 and 10,000) a fresh SQLite database holds
``root → d0 → P`` with that many model continuations under ``P`` (made three to a request,
as ``continue n:3`` makes them), the human's position on the middle one with a child
below it. It times, as medians:

- ``loom/nodeInfo {tree}`` (what the VS Code Loom view sends when a tree expands: the
  position's node, its path, siblings and children);
- ``loom/nodeInfo {tree, node: P}`` (a path node whose children are the many);
- ``loom.siblings {uri, node}`` (the sibling picker);
- a hover on the open path document sent while a ``loom/nodeInfo`` is in flight (does a
  slow request hold up the others?).

A request that does not answer within ``--timeout`` seconds is reported as such and the
server is killed (it would still be working on it). Figures only: nothing is asserted.

    .venv/bin/python bench/bench_siblings.py [--sizes 500,2000,10000] [--samples 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lsp_session import start_server, stop_server


def build(db: Path, n: int) -> dict[str, str]:
    from loom.store.db import open_database
    from loom.store.workspace import NewNode, Workspace

    ws = Workspace(open_database(db))
    ws.human()
    ws.subject()
    tree = ws.create_tree("siblings", "buffer", root_content="Once.")
    root = ws.node(tree.root)
    specs = [NewNode("d0", None, " The house stood empty.", "human"),
             NewNode("p", "d0", " She had not visited since her mother died.", "human")]
    for i in range(n):
        specs.append(NewNode(f"s{i}", "p", f" and the windows watched her ({i}), with "
                             "something like reproach.", "subject", "model"))
    mid = n // 2
    specs.append(NewNode("below", f"s{mid}", " She went in.", "human"))
    built = ws.bulk_add(tree, root, specs)
    # one provenance record per model node, three nodes to a request
    rows = []
    for i in range(n):
        node = built[f"s{i}"]
        rows.append((f"gen{i:06d}", node.id, "bench", "bench-model", "{}", "{}", 10.0, i % 3,
                     None, None, 1_700_000_000.0 + i // 3))
    ws.insert_rows("generation", ("id", "node", "provider", "model", "params", "usage",
                                  "latency_ms", "completion_index", "logprobs", "raw",
                                  "created"), rows)
    here, tip = built[f"s{mid}"], built["below"]
    ws.set_position(ws.human(), tree, here, tip)
    ws.db.close()
    return {"tree": tree.id, "parent": built["p"].local_id, "node": here.local_id,
            "uri": f"loom://path/{tree.id}/{tip.local_id}"}


def plain(answer: Any) -> Any:
    """An answer as JSON data (pygls hands custom answers back as named tuples)."""
    if hasattr(answer, "_asdict"):
        return {k: plain(v) for k, v in answer._asdict().items()}
    if isinstance(answer, dict):
        return {k: plain(v) for k, v in answer.items()}
    if isinstance(answer, (list, tuple)):
        return [plain(v) for v in answer]
    if hasattr(answer, "__dict__"):
        return plain(vars(answer))
    return answer


def size_of(answer: Any) -> int:
    return len(json.dumps(plain(answer)))


class TimedOut(Exception):
    pass


async def call(client: Any, method: str, params: Any, timeout: float) -> Any:
    try:
        return await asyncio.wait_for(client.protocol.send_request_async(method, params),
                                      timeout)
    except TimeoutError:
        raise TimedOut from None


async def median_ms(fn: Any, samples: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(samples):
        t = time.perf_counter()
        out = await fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def line(name: str, ms: float | None, extra: str = "") -> None:
    shown = "no answer" if ms is None else f"{ms:9.1f} ms"
    print(f"  {name:<44} {shown}  {extra}", flush=True)


async def run_size(n: int, samples: int, timeout: float, cases_wanted: list[str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-siblings-"))
    db = tmp / "bench.db"
    t = time.perf_counter()
    ids = build(db, n)
    print(f"{n:,} siblings (built in {time.perf_counter() - t:.1f} s)", flush=True)
    client = await start_server(db)
    alive = True
    try:
        text = (await client.workspace_text_document_content_async(
            lsp.TextDocumentContentParams(uri=ids["uri"]))).text
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=ids["uri"], language_id="loom", version=1,
                                               text=text)))
        await call(client, "loom/status", {"uri": ids["uri"]}, timeout)  # settle

        async def hover() -> Any:
            return await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=ids["uri"]),
                position=lsp.Position(0, 2))), timeout)

        hover_alone, _ = await median_ms(hover, samples)
        line("hover alone", hover_alone)
        cases = [
            ("loom/nodeInfo {tree}", "loom/nodeInfo", {"tree": ids["tree"]}),
            ("loom/nodeInfo {tree, node: the parent}", "loom/nodeInfo",
             {"tree": ids["tree"], "node": ids["parent"]}),
            ("loom.siblings {uri, node}", "workspace/executeCommand",
             lsp.ExecuteCommandParams(command="loom.siblings", arguments=[
                 {"uri": ids["uri"], "node": ids["node"]}])),
        ]
        for name, method, params in cases:
            if cases_wanted and not any(w in name for w in cases_wanted):
                continue
            try:
                ms, answer = await median_ms(lambda m=method, p=params:  # type: ignore[misc]
                                             call(client, m, p, timeout), samples)
            except TimedOut:
                line(name, None, f"(none within {timeout:.0f} s; server stopped)")
                alive = False
                return
            data = plain(answer)
            if method == "workspace/executeCommand":
                data = data.get("data", {})
            sib, kids = data.get("siblings"), data.get("children")
            shown = f"{len(sib)} siblings" if sib is not None else ""
            if kids is not None:
                shown += f", {len(kids)} children"
            line(name, ms, f"{size_of(answer) / 1e6:6.2f} MB  {shown}")
        if cases_wanted and "in flight" not in cases_wanted:
            return
        # a hover sent while a nodeInfo of the many is in flight
        waits = []
        for _ in range(samples):
            info = asyncio.ensure_future(call(client, "loom/nodeInfo",
                                              {"tree": ids["tree"], "node": ids["parent"]},
                                              timeout))
            await asyncio.sleep(0)
            t = time.perf_counter()
            await hover()
            waits.append((time.perf_counter() - t) * 1000)
            await info
        line("hover while a nodeInfo is in flight", statistics.median(waits))
    finally:
        if alive:
            await stop_server(client)
        else:
            server = getattr(client, "_server", None)
            if server is not None and server.returncode is None:
                server.kill()
            await client.stop()


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,2000,10000")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--cases", default="", help="comma-separated parts of the case names "
                    "to run (\"in flight\" for the hover), default all")
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        await run_size(n, args.samples, args.timeout,
                       [c for c in args.cases.split(",") if c])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
