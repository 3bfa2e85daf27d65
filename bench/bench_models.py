"""Model-layer benchmarks (figures only, no assertions).

1. Overhead Loom adds to one streamed continuation (n=1) over a direct ``openai`` SDK
   call, both against the same local fake server: medians of RUNS interleaved runs.
   Target: ratio ≤ 1.1.
2. The bundled local model in its model service (llama-server), in one run on
   one machine: the cold start of the model process; raw llama.cpp making n x 50 tokens
   one after another without logprobs (the baseline: llama-server's own endpoint, no Loom)
   against Loom's ``continue n:3 tokens:50`` with top-5 logprobs through the real language
   server, warm (goal: <= 1.2x); the first streamed token in the editor (goal: <= 300 ms);
   resident memory of the language server and of the model process.
3. ``→ continue models:a,b`` with two local model processes (the bundled model and a copy
   of its file, so each profile has a process of its own) against the same two requests
   run one after the other (``model:a`` then ``model:b``), through the executor: medians
   of interleaved runs and their ratio (goal: <= 0.6x).

4. ``→ score`` of 1,000 tokens of a writer's text with the local model (teacher forcing,
   ``llm/scoring/forced.py``) against ``→ continue`` making 1,000 tokens, through the
   executor: medians of interleaved runs and their ratio (goal: <= 0.5x).
5. ``→ fill n:3`` on a 40-token span (the bundled model: told what comes before and after
   it, through its chat template) against ``→ continue n:3 tokens:40`` from the same node,
   both through the executor with ``tokens:40``, interleaved in one run: medians and their
   ratio (goal: <= 1.3x).

Run: ``.venv/bin/python bench/bench_models.py [--runs 50] [--local-runs 9] [--skip-local]
[--skip-overhead] [--skip-mixed] [--score-runs 3] [--skip-score] [--skip-fill]`` (the local
parts need ``loom model setup``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo, for tests.e2e

import openai
from lsprotocol import types as lsp
from tests.e2e.fake_provider import FakeProvider

from loom.llm import ModelError, ModelProfile, make_provider
from loom.llm.config import LOCAL_MODEL
from loom.llm.service import client as service
from loom.llm.service.record import ServiceRecord
from loom.lsp.positions import TextDoc
from lsp_session import start_server, stop_server  # (bench/ is the script's directory)

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
        await provider.aclose()  # type: ignore[attr-defined]


ISOLATED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_API_KEY", "LOOM_BASE_URL",
            "LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def raw_generate(record: ServiceRecord, prompt: str, tokens: int) -> int:
    """One continuation straight from llama.cpp's own endpoint, no logprobs: tokens made."""
    body = json.dumps({"prompt": prompt, "n_predict": tokens, "temperature": 0.9,
                       "cache_prompt": True}).encode()
    request = urllib.request.Request(f"{record.root_url}/completion", data=body, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {record.api_key}"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return int(json.load(reply).get("tokens_predicted", 0))


def human_path_uri(db: Path) -> str:
    """The path view through the human's position in the demo, as the editor opens it."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        tree, tip = con.execute(
            "SELECT p.tree, n.local_id FROM position p JOIN participant h ON h.id = "
            "p.participant JOIN node n ON n.id = p.tip WHERE h.name = 'human'").fetchone()
    finally:
        con.close()
    return f"loom://path/{tree}/{tip}"


class EditorSide:
    """The editor's half of a session, as small as a benchmark needs: it applies the
    server's edits to its copy and says so, noting when the first streamed edit came."""

    def __init__(self, client: Any, uri: str, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        self.first_edit: float | None = None

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            if self.first_edit is None:
                self.first_edit = time.perf_counter()
            for change in params.edit.document_changes or []:
                if isinstance(change, lsp.TextDocumentEdit):
                    self._apply(list(change.edits))
            for edits in (params.edit.changes or {}).values():
                self._apply(list(edits))
            return lsp.ApplyWorkspaceEditResult(applied=True)

        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="loom", version=1,
                                               text=text)))

    def _apply(self, edits: list[lsp.TextEdit]) -> None:
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                        reverse=True):
            doc = TextDoc(self.text, "utf-16")
            start = doc.offset_at(e.range.start.line, e.range.start.character)
            end = doc.offset_at(e.range.end.line, e.range.end.character)
            self.text = self.text[:start] + e.new_text + self.text[end:]
        self.version += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri,
                                                              version=self.version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=self.text)]))


async def local_model(runs: int, tokens: int, n: int) -> None:
    """The bundled model through its service: cold start, raw llama.cpp against Loom's
    continue in the editor (warm), time to the first streamed token, memory."""
    from loom.demo import create_demo
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    runtime = tempfile.mkdtemp(prefix="loom-bench-runtime-")
    os.environ.update({"LOOM_RUNTIME_DIR": runtime, "LOOM_SUMMARIES": "off",
                       "LOOM_NO_KEYRING": "1", "LOOM_CONFIG": "/nonexistent/loom-bench.toml"})
    for key in ISOLATED:
        os.environ.pop(key, None)
    try:
        spec = service.spec_for(LOCAL_MODEL)
    except ModelError as exc:
        print(f"local model: skipped ({exc.message}; {exc.hint})")
        return
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    print(f"\nlocal model (SmolLM2-135M Q4_1 in llama-server, {spec.threads} threads, "
          f"{spec.parallel} slots; {cpu})")
    colds = []
    for _ in range(3):
        service.stop_all(Path(runtime))
        started = time.perf_counter()
        record = service.ensure_running(spec)
        colds.append((time.perf_counter() - started) * 1000)
    print(f"  cold start of the model process  median {statistics.median(colds):7.0f} ms  "
          f"(runs: {', '.join(f'{c:.0f}' for c in colds)})")

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "loom.db"
        create_demo(Workspace(open_database(db)))
        client = await start_server(db)
        try:
            uri = human_path_uri(db)
            start_node = uri.rsplit("/", 1)[1]
            got = await client.workspace_text_document_content_async(
                lsp.TextDocumentContentParams(uri=uri))
            editor = EditorSide(client, uri, got.text)
            prompt = got.text

            async def loom_continue() -> tuple[float, float]:
                editor.first_edit = None
                started = time.perf_counter()
                res = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                    command="loom.continue",
                    arguments=[{"uri": uri, "n": n, "tokens": tokens}]))
                done = time.perf_counter()
                if not res["ok"]:
                    raise SystemExit(f"continue failed: {res['message']}")
                first = (editor.first_edit or done) - started
                # back to where it started: every run continues the same prompt (a path
                # growing by 50 tokens a run would slow each run's decoding a little more)
                back = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                    command="loom.switchTo", arguments=[{"uri": uri, "node": start_node}]))
                if not back["ok"]:
                    raise SystemExit(f"switch back failed: {back['message']}")
                return (done - started) * 1000, first * 1000

            def raw() -> tuple[float, int]:
                started = time.perf_counter()
                made = sum(raw_generate(record, prompt, tokens) for _ in range(n))
                return (time.perf_counter() - started) * 1000, made

            # In blocks, not interleaved: each side's prompt stays in the server's cache
            # (interleaved, each would evict the other's and pay for its prompt again).
            # The baseline runs before and after Loom, so drift in load shows in both.
            raws, looms, firsts = [], [], []
            for block in ("before", "loom", "after"):
                if block == "loom":
                    await loom_continue()  # warm: its prompt cached, connections open
                    for _ in range(runs):
                        wall, first = await loom_continue()
                        looms.append(wall)
                        firsts.append(first)
                else:
                    raw()
                    raws += [raw()[0] for _ in range(runs)]
            record = service.running(spec) or record
            r, lo = statistics.median(raws), statistics.median(looms)
            print(f"  raw llama.cpp, {n} x {tokens} tokens one after another, no logprobs  "
                  f"median {r:7.0f} ms  (baseline: before and after Loom's runs)")
            print(f"  loom continue n:{n} tokens:{tokens}, top-5 logprobs, in the editor   "
                  f"median {lo:7.0f} ms  ratio {lo / r:5.2f}x  (goal <= 1.2x)")
            print(f"  first streamed token in the editor (warm)            median "
                  f"{statistics.median(firsts):7.0f} ms  (goal <= 300 ms)")
            server_pid = client._server.pid  # type: ignore[attr-defined]
            print(f"  resident memory: language server {rss_mb(server_pid):.0f} MB, "
                  f"model process {rss_mb(record.server_pid):.0f} MB")
        finally:
            await stop_server(client)
            service.stop_all(Path(runtime))
            shutil.rmtree(runtime, ignore_errors=True)


def models_at_once(runs: int, tokens: int) -> None:
    from loom.app import open_app
    from loom.llm.service.setup import bundled_gguf
    from loom.llm.subject import ProviderSubject

    gguf = bundled_gguf()
    if gguf is None:
        print("models:a,b — skipped: the local model is not set up (loom model setup)")
        return
    work = Path(tempfile.mkdtemp(prefix="loom-bench-mixed-"))
    try:
        copy = work / "second.gguf"
        shutil.copyfile(gguf, copy)  # another file: a model process of its own
        config = work / "config.toml"
        config.write_text(f'[profiles.a]\nprovider = "local"\nmodel = "{LOCAL_MODEL}"\n\n'
                          f'[profiles.b]\nprovider = "local"\nmodel = "{copy}"\n',
                          encoding="utf-8")
        os.environ["LOOM_CONFIG"] = str(config)
        app = open_app(work / "loom.db", use_default_subject=False)
        app.executor.subject = ProviderSubject(ModelProfile(name="a", provider="local",
                                                            model=LOCAL_MODEL))
        tree = app.ws.create_tree("Bench", "buffer",
                                  root_content="The lighthouse keeper climbed the stairs")
        actor = app.actor(tree)

        def run(line: str) -> float:
            started = time.perf_counter()
            result = app.executor.execute(line, actor)
            if not result.ok:
                raise SystemExit(f"{line}: {result.text}")
            return time.perf_counter() - started

        ask = f"n:1 tokens:{tokens} temperature:0"
        run(f"→ continue from root models:a,b {ask}")  # both processes started, warm
        apart: list[float] = []
        together: list[float] = []
        for _ in range(runs):
            apart.append(run(f"→ continue from root model:a {ask}")
                         + run(f"→ continue from root model:b {ask}"))
            together.append(run(f"→ continue from root models:a,b {ask}"))
        a, t = statistics.median(apart), statistics.median(together)
        print(f"models:a,b ({tokens} tokens each, two local model processes, {runs} runs, "
              f"{os.cpu_count()} CPUs): one after the other {a * 1000:.0f} ms, at once "
              f"{t * 1000:.0f} ms — ratio {t / a:.2f} (goal <= 0.6)")
    finally:
        spec = service.spec_for(str(work / "second.gguf"))
        record = service.running(spec)
        if record is not None:  # the copy's process: the bundled model's stays for others
            service.stop_record(record, service.files_of(spec))
        shutil.rmtree(work, ignore_errors=True)


def _writers_text(chars: int) -> str:
    """Human prose: the writers' own text in the socketteer/loom demo tree beside the
    project (``../shared/fixtures``), else the demo's notes, to ``chars`` characters."""
    fixture = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / \
        "socketteer-loom-demo.json"
    pieces: list[str] = []
    if fixture.exists():
        stack = [json.loads(fixture.read_text(encoding="utf-8"))["root"]]
        while stack and sum(map(len, pieces)) < chars:
            node = stack.pop()
            if (node.get("meta") or {}).get("source") == "prompt" and node.get("text"):
                pieces.append(node["text"])
            stack.extend(reversed(node.get("children") or []))
    if sum(map(len, pieces)) < chars:
        from loom.demo import NOTES

        pieces += [NOTES] * (chars // len(NOTES) + 1)
    return "".join(pieces)[:chars]


def scoring(runs: int, tokens: int) -> None:
    from loom.app import open_app
    from loom.llm.config import BUILTIN_PROFILES
    from loom.llm.service.setup import bundled_gguf
    from loom.llm.subject import ProviderSubject
    from loom.llm.tokenizer import load_tokenizer

    if bundled_gguf() is None:
        print("score — skipped: the local model is not set up (loom model setup)")
        return
    tok = load_tokenizer()
    text = _writers_text(tokens * 8)
    while tok is not None and len(tok.encode(text).ids) > tokens:
        text = text[:int(len(text) * 0.97)]
    work = Path(tempfile.mkdtemp(prefix="loom-bench-score-"))
    try:
        app = open_app(work / "loom.db", use_default_subject=False)
        app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
        tree = app.ws.create_tree("Bench", "buffer", root_content=text)
        # the continuation starts from a sentence, so that both read contexts of the same
        # lengths (0 to 1,000 tokens): continuing the 1,000 tokens reads twice as much
        short = app.ws.create_tree("Bench short", "buffer", root_content=text[:60])
        actor, short_actor = app.actor(tree), app.actor(short)

        def run(line: str) -> tuple[float, int]:
            started = time.perf_counter()
            result = app.executor.execute(line, short_actor if "continue" in line else actor)
            if not result.ok:
                raise SystemExit(f"{line}: {result.text}")
            took = time.perf_counter() - started
            if "tokens" in result.data:  # → score: how many it scored
                return took, int(result.data["tokens"])
            made = app.ws.node(result.data["created"][0])
            gen = app.ws.generations([made.id])[0]
            return took, int((gen.usage or {}).get("completion_tokens") or 0)

        # the end-of-text tokens banned: a continuation of exactly `tokens` tokens
        ask = f"→ continue from root n:1 tokens:{tokens} temperature:1 logit_bias:\"0:-100,2:-100\""
        run("→ score root")  # both model processes started, warm
        run("→ continue from root n:1 tokens:8")
        scored, made = [], []
        for _ in range(runs):
            scored.append(run("→ score root"))
            made.append(run(ask))
        s_t = statistics.median(t for t, _ in scored)
        g_t = statistics.median(t for t, _ in made)
        print(f"score ({scored[0][1]} tokens of a writer's text, teacher forcing, {runs} runs, "
              f"{os.cpu_count()} CPUs): {s_t * 1000:.0f} ms; continue making "
              f"{made[0][1]} tokens: {g_t * 1000:.0f} ms — ratio {s_t / g_t:.2f} (goal <= 0.5)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: A story whose middle sentence is the span filled (about 40 tokens of the bundled model's).
FILL_BEFORE = ("The storm had passed by morning, and the harbour lay flat and grey under a "
               "low sky. ")
FILL_SPAN = ("The old keeper climbed the narrow iron stairs of the lighthouse one last time, "
             "counting each step as his father had taught him, and paused at the top to "
             "catch his breath and look at the sea.")
FILL_AFTER = (" Below him the village was waking: smoke from the bakery, a dog on the quay, "
              "the first boat pushing out past the breakwater.")


def fill_against_continue(runs: int) -> None:
    from loom.app import open_app
    from loom.llm.config import BUILTIN_PROFILES
    from loom.llm.service.setup import bundled_gguf
    from loom.llm.subject import ProviderSubject
    from loom.llm.tokenizer import local_tokenizer

    if bundled_gguf() is None:
        print("fill n:3 — skipped: the local model is not set up (loom model setup)")
        return
    count = local_tokenizer()
    work = Path(tempfile.mkdtemp(prefix="loom-bench-fill-"))
    try:
        os.environ["LOOM_CONFIG"] = str(work / "absent.toml")
        app = open_app(work / "loom.db", use_default_subject=False)
        app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
        tree = app.ws.create_tree("Bench", "buffer", root_content=FILL_BEFORE)
        me = app.me()
        node = app.ws.add_node(tree, app.ws.node(tree.root), FILL_SPAN + FILL_AFTER, me)
        actor = app.actor(tree)

        def run(line: str) -> float:
            started = time.perf_counter()
            result = app.executor.execute(line, actor)
            if not result.ok:
                raise SystemExit(f"{line}: {result.text}")
            return time.perf_counter() - started

        fill = f"→ fill {node.label} at:0-{len(FILL_SPAN)} n:3 tokens:40 temperature:0.8"
        grow = f"→ continue from {node.label} n:3 tokens:40 temperature:0.8"
        run(fill), run(grow)  # warm: the model process, its prompt cache
        filled: list[float] = []
        continued: list[float] = []
        for _ in range(runs):
            filled.append(run(fill))
            continued.append(run(grow))
        f, c = statistics.median(filled), statistics.median(continued)
        span = f"{count(FILL_SPAN)}-token" if count is not None else "~40-token"
        print(f"fill n:3 on a {span} span against continue n:3 tokens:40 (the bundled "
              f"model, {runs} runs, {os.cpu_count()} CPUs): fill {f * 1000:.0f} ms, continue "
              f"{c * 1000:.0f} ms — ratio {f / c:.2f} (goal <= 1.3)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--local-runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("-n", type=int, default=3, help="continuations per request")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-mixed", action="store_true")
    parser.add_argument("--score-runs", type=int, default=3)
    parser.add_argument("--score-tokens", type=int, default=1000)
    parser.add_argument("--skip-score", action="store_true")
    parser.add_argument("--skip-fill", action="store_true")
    args = parser.parse_args()
    if not args.skip_overhead:
        asyncio.run(overhead(args.runs))
    if not args.skip_local:
        asyncio.run(local_model(args.local_runs, args.tokens, args.n))
    if not args.skip_mixed:
        models_at_once(args.local_runs, args.tokens)
    if not args.skip_score:
        scoring(args.score_runs, args.score_tokens)
    if not args.skip_fill:
        fill_against_continue(args.local_runs)


if __name__ == "__main__":
    main()
