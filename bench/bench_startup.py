"""The first moments (start-up): what a person meets each time an editor or a terminal
starts Loom. Each row is the median of ``--runs`` fresh processes (default 7), every Loom
run alternating with its baseline in the same loop, so both see the same machine:

- Python's own start (``python -c pass``) and a trivial pygls server (``LanguageServer(…)
  .start_io()``, spawned → ``initialize`` answered): the floors;
- ``loom serve`` spawned → ``initialize`` answered, as a ratio to the trivial server (goal
  ≤ 1.2×);
- ``loom trees`` on the demo database, the whole process (goal ≤ 150 ms);
- in a fresh server on the big tree of ``bench_scale.py`` (100,000 nodes, a 2,000-node
  path, a ~250 KB buffer), run as a person runs it (the subject model resolved, the key
  store asked; only the summary worker off): the first ``workspace/textDocumentContent``
  of the path sent the moment ``initialized`` is, as an editor restoring its tabs does
  (goal ≤ 100 ms); then the first 30 hovers and 30 completions in it, alternating: the
  first of each and the p99 of the 30 (goals ≤ 10 and ≤ 15 ms); beside them the same
  request's median once warm, and the first open of another path of the same size in the
  same server (Python warm, SQLite's pages for that path cold) to tell SQLite's cold cache
  from Python's cold paths.

Prints one table and asserts nothing.

    .venv/bin/python bench/bench_startup.py [--runs 7] [--settle 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lsprotocol import types as lsp

import bench_scale
from lsp_session import start_server, stop_server

PY = sys.executable
TRIVIAL_SERVER = ('from pygls.lsp.server import LanguageServer\n'
                  'LanguageServer("trivial", "1").start_io()\n')


# ── JSON-RPC over a child's pipes, with nothing in between ──────────────────
def _frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream: Any) -> dict[str, Any]:
    length = 0
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))  # type: ignore[no-any-return]


def initialize_ms(argv: list[str], env: dict[str, str], options: dict[str, Any]) -> float:
    """Spawned → the answer to ``initialize`` read, in milliseconds; then shut down."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": None, "capabilities": {},
        "initializationOptions": options}}))
    proc.stdin.flush()
    while "id" not in (msg := _read_message(proc.stdout)) or msg.get("id") != 1:
        pass
    took = (time.perf_counter() - t) * 1000
    for out in ({"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
                {"jsonrpc": "2.0", "method": "exit"}):
        proc.stdin.write(_frame(out))
        proc.stdin.flush()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return took


def process_ms(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """A whole process: wall and CPU milliseconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    return wall, cpu


# ── the first requests in a fresh server on the big tree ────────────────────
def warm_client(client: Any) -> None:
    """This Python client's own first decoding of each answer type (cattrs writes a
    function per type: 9 ms for a completion list) is not the server's time, and VS Code's
    and Neovim's clients do not pay it: done before anything is measured."""
    from loom.lsp import warm

    conv = client.protocol._converter
    for method, (_params, result) in warm._samples().items():
        response = lsp.METHOD_TO_TYPES[method][1]
        conv.structure(conv.unstructure(response(id=1, result=result)), response)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def first_requests(db: Path, facts: dict[str, Any], settle: float,
                         env: dict[str, str], firsts: int = 30) -> dict[str, float]:
    """One fresh server: the first open sent the moment ``initialized`` is (as an editor
    restoring its tabs does), then the first ``firsts`` hovers and completions in it,
    alternating, each timed; then the same requests warm, and another path's first open."""
    client = await start_server(db, "bench-startup", prepare=warm_client, env=env)
    out: dict[str, float] = {}
    if settle:
        await asyncio.sleep(settle)
    uri = facts["uri"]
    other = facts["other_uri"]

    async def content(u: str) -> str:
        got = await client.workspace_text_document_content_async(
            lsp.TextDocumentContentParams(uri=u))
        return got.text

    t = time.perf_counter()
    text = await content(uri)
    out["open"] = (time.perf_counter() - t) * 1000

    lines = text.split("\n")
    typed = "\n→ view "
    t = time.perf_counter()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="loom", version=1,
                                           text=text + typed)))
    doc = lsp.TextDocumentIdentifier(uri=uri)
    await client.protocol.send_request_async("loom/status", {"uri": uri})  # opened
    out["status"] = (time.perf_counter() - t) * 1000
    middle = lsp.Position(len(lines) // 2, 3)
    at_command = lsp.Position(len(lines), len("→ view "))
    empty = 0

    async def hover() -> float:
        nonlocal empty
        t = time.perf_counter()
        got = await client.text_document_hover_async(lsp.HoverParams(text_document=doc,
                                                                     position=middle))
        took = (time.perf_counter() - t) * 1000
        empty += got is None
        return took

    async def complete() -> float:
        nonlocal empty
        t = time.perf_counter()
        got = await client.text_document_completion_async(lsp.CompletionParams(
            text_document=doc, position=at_command))
        took = (time.perf_counter() - t) * 1000
        empty += not got or not got.items
        return took

    hovers, completions = [], []
    for _ in range(firsts):
        hovers.append(await hover())
        completions.append(await complete())
    out["hover"], out["completion"] = hovers[0], completions[0]
    out["hover p99"], out["completion p99"] = pct(hovers, 99), pct(completions, 99)
    out["hover warm"] = statistics.median([await hover() for _ in range(15)])
    out["completion warm"] = statistics.median([await complete() for _ in range(15)])
    t = time.perf_counter()
    await content(other)
    out["open another"] = (time.perf_counter() - t) * 1000
    warm = []
    for _ in range(5):
        t = time.perf_counter()
        await content(uri)
        warm.append((time.perf_counter() - t) * 1000)
    out["open warm"] = statistics.median(warm)
    await stop_server(client)
    if empty:
        raise SystemExit(f"{empty} hovers or completions answered nothing: not measured")
    return out


SPLIT = """
import json, sys, time
t0 = time.perf_counter()
from loom.lsp.documents import OpenDocuments
from loom.store.db import open_database
from loom.store.workspace import Workspace
imported = time.perf_counter() - t0

def open_docs():
    ws = Workspace(open_database(sys.argv[1]))
    who = ws.human()
    return ws, OpenDocuments(ws, who, "utf-16", ws.open_session(who))

def first_open(docs):
    t = time.perf_counter()
    docs.text_for(sys.argv[2])
    return (time.perf_counter() - t) * 1000

ws, docs = open_docs()
cold = first_open(docs)  # Python's paths and SQLite's pages both cold
ws.db.close()
ws, docs = open_docs()  # a new connection, new session caches: SQLite's pages cold
sqlite_cold = first_open(docs)  # Python's paths warm
print(json.dumps({"cold": cold, "sqlite cold": sqlite_cold}))
"""


def split_first_open(db: Path, uri: str) -> dict[str, float]:
    """A first open in a fresh process, then one on a new connection (SQLite's cache
    empty, Python's paths warm): which of the two a first open's time is."""
    out = subprocess.run([PY, "-c", SPLIT, str(db), uri], check=True, capture_output=True,
                         text=True, env={**os.environ, "LOOM_SUMMARIES": "off"})
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def other_path(db: Path, facts: dict[str, Any]) -> str:
    """A second path as deep as the first: the spine's next-to-last node's other child."""
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(db))
    try:
        tree = ws.trees()[0][0]
        parent = ws.resolve(tree, facts["spine"][-2])
        side = next(c for c in ws.children(parent) if c.local_id != facts["spine"][-1])
        return f"loom://path/{tree.id}/{side.local_id}"
    finally:
        ws.db.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds between initialized and the first open (default 0: an "
                         "editor restores its tabs at once)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"median of {args.runs} fresh processes per row")
    env = {**os.environ, "LOOM_SUMMARIES": "off", "LOOM_SUBJECT": "none",
           "LOOM_NO_KEYRING": "1"}
    # the server on the big tree as a person runs it: the subject model looked up (the
    # key store asked); only the summary worker off, which would summarize 100,000 nodes
    served = {**os.environ, "LOOM_SUMMARIES": "off"}
    rows: dict[str, list[float]] = {k: [] for k in (
        "python", "trivial", "serve", "trees", "trees cpu")}
    with tempfile.TemporaryDirectory(prefix="loom-bench-startup-") as tmp:
        demo = Path(tmp) / "demo.db"
        subprocess.run([PY, "-m", "loom.cli", "--db", str(demo), "demo", "--no-editor"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        trivial = Path(tmp) / "trivial_server.py"
        trivial.write_text(TRIVIAL_SERVER)
        opts = {"database": str(demo)}
        for _ in range(args.runs):
            rows["python"].append(process_ms([PY, "-c", "pass"], env)[0])
            rows["trivial"].append(initialize_ms([PY, str(trivial)], env, {}))
            rows["serve"].append(initialize_ms([PY, "-m", "loom.cli", "serve"], env, opts))
            wall, cpu = process_ms([PY, "-m", "loom.cli", "--db", str(demo), "trees"], env)
            rows["trees"].append(wall)
            rows["trees cpu"].append(cpu)

        cached, facts, _specs = bench_scale.prepare(100_000, 2_000, 50)
        big = Path(tmp) / "scale.db"
        shutil.copyfile(cached, big)
        facts["other_uri"] = other_path(big, facts)
        firsts: dict[str, list[float]] = {}
        for _ in range(args.runs):
            shutil.copyfile(cached, big)  # the same file each time, fresh from the cache
            for k, v in asyncio.run(first_requests(big, facts, args.settle, served)).items():
                firsts.setdefault(k, []).append(v)
            for k, v in split_first_open(big, facts["uri"]).items():
                firsts.setdefault(f"in process, {k}", []).append(v)

    med = {k: statistics.median(v) for k, v in {**rows, **firsts}.items()}
    ratio = med["serve"] / med["trivial"]

    def line(name: str, value: str, goal: str, ok: bool | None) -> None:
        mark = "" if ok is None else ("✓" if ok else "✗")
        print(f"{name:<58} {value:>22}  {goal:<14} {mark}")

    print(f"{'moment':<58} {'median':>22}  {'goal':<14}")
    line("python -c pass (floor)", f"{med['python']:.0f} ms", "", None)
    line("trivial pygls server: spawned → initialize answered", f"{med['trivial']:.0f} ms",
         "", None)
    line("loom serve: spawned → initialize answered", f"{med['serve']:.0f} ms  {ratio:.2f}×",
         "≤ 1.2×", ratio <= 1.2)
    line("loom trees (whole process, demo database)",
         f"{med['trees']:.0f} ms ({med['trees cpu']:.0f} CPU)", "≤ 150 ms",
         med["trees"] <= 150)
    line("first open of the 2,000-deep path, sent with initialized",
         f"{med['open']:.0f} ms (warm {med['open warm']:.0f})", "≤ 100 ms",
         med["open"] <= 100)
    line("  then the first open of another path as deep",
         f"{med['open another']:.0f} ms", "", None)
    line("  in one process: the first open, everything cold",
         f"{med['in process, cold']:.0f} ms", "", None)
    line("  then on a new connection: SQLite's pages cold, Python warm",
         f"{med['in process, sqlite cold']:.0f} ms", "", None)
    line("didOpen → loom/status answered", f"{med['status']:.0f} ms", "", None)
    line("first hover", f"{med['hover']:.1f} ms (warm {med['hover warm']:.1f})", "≤ 10 ms",
         med["hover"] <= 10)
    line("  p99 of the first 30 hovers", f"{med['hover p99']:.1f} ms", "≤ 10 ms",
         med["hover p99"] <= 10)
    line("first completion",
         f"{med['completion']:.1f} ms (warm {med['completion warm']:.1f})", "≤ 15 ms",
         med["completion"] <= 15)
    line("  p99 of the first 30 completions", f"{med['completion p99']:.1f} ms", "≤ 15 ms",
         med["completion p99"] <= 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
