"""Collaborator benchmarks: prints figures, asserts nothing.

1. Tokens per operation: the arrow syntax plus its per-request overhead (seed 001's
   addendum and the system-level loom context) against the same operations as provider JSON
   tool calls, whose definitions are generated from the command model
   (``loom.commands.syntax`` → ``model_json_schema()`` per verb, as ``{name, description,
   input_schema}``) and billed once per request, as providers do. A scripted session of
   ~20 operations in 12 model requests; results are the same text either way and are left
   out. Counted with ``bpe_openai`` o200k_base. Goal: arrow ≤ 0.5× JSON.
2. Context assembly time on a 100,000-node tree (built with ``Workspace.bulk_add`` like
   ``bench_core.py``): median of 20 assemblies at a 2,000-deep position and at a shallow
   one.
3. What a context that caches saves: a scripted five-turn session (three model
   calls a turn: read, write, answer) through the real loop and the real ``openai`` SDK
   against a local wire-format server, on the demo tree and on a 15,000-word tree. For
   each call: characters and tokens sent, and the share of its prompt that is an exact
   prefix of the previous call's (goal ≥ 80% within a turn); then the session's cost in
   prompt tokens at Anthropic's published prices for Claude Haiku 4.5 ($1.00 per million
   input tokens; cache writes $1.25, cache reads $0.10): uncached, and cached (each
   call's shared prefix read, the rest written). Anthropic caches prefixes of at least
   4,096 tokens on Haiku 4.5; shorter prompts are counted uncached.

Run: .venv/bin/python bench/bench_agent.py [--nodes 100000] [--skip-assembly]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bpe_openai

# A realistic session: what a collaborator does when asked "which branch works better?"
# Each inner list is one model request (consecutive commands batch into one request).
SESSION: list[list[str]] = [
    ["→ tree"],
    ["→ list a7x2 continuations", "→ view b3k9", "→ view c4m2"],
    ["→ view b3k9 full"],
    ["→ list b3k9 annotations"],
    ['→ read doc:"character notes" section:motivation'],
    ["→ pin b3k9", '→ stash "marie insight" content-of:b3k9'],
    ['→ annotate b3k9 "the father theme lands here; keep it"'],
    ["→ continue from b3k9 n:3 tokens:60"],
    ["→ view e6p4", "→ view f7q8", "→ view g8r2", "→ list e6p4 links"],
    ['→ link e6p4 to doc:"character notes" note:"motivation made explicit"'],
    ['→ respond e6p4 "What if Marie hears this from her mother instead?"',
     "→ switch to e6p4"],
    ["→ memory", '→ recall "marie insight"'],
]

AMBIENT = ('=== Loom Context ===\nTree: "Marie Character Study" (dialogue)\n'
           "You are at ⟨node:a7x2k3 depth:12 siblings:2 annotations:1 links:1⟩ "
           "⟨permissions:aware,write,generate,read,docwrite,crosstree⟩\n"
           "Human active at [c4m2], depth:8\n===")


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(x) for x in schema]
    return schema


def tool_definitions() -> list[dict[str, Any]]:
    """One provider tool definition per verb, from the pydantic command models."""
    from loom.commands import syntax
    from loom.commands.catalogue import TOOLS_BY_NAME

    models = [syntax.View, syntax.List, syntax.ShowTree, syntax.Switch, syntax.Continue,
              syntax.Respond, syntax.Annotate, syntax.MakeLink, syntax.Edit, syntax.Read,
              syntax.Write, syntax.PinBlock, syntax.StashBlock, syntax.Recall, syntax.Drop,
              syntax.Memory, syntax.Help, syntax.Think]
    out = []
    for model in models:
        schema = _strip_titles(model.model_json_schema(by_alias=True))
        verb = model.model_fields["verb"].default
        schema["properties"].pop("verb", None)
        if "verb" in schema.get("required", []):
            schema["required"].remove("verb")
        tool = TOOLS_BY_NAME[verb]
        out.append({"name": f"loom_{verb}",
                    "description": f"{tool.description}. {tool.note}",
                    "input_schema": schema})
    return out


def tool_call(line: str, i: int) -> dict[str, Any]:
    """The same command as an Anthropic ``tool_use`` block."""
    from loom.commands import syntax
    from loom.commands.executor import parse_line

    cmd = parse_line(line)
    assert not isinstance(cmd, syntax.ParseError), (line, cmd)
    data = cmd.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    data.pop("verb", None)
    return {"type": "tool_use", "id": f"toolu_01A{i:06d}bench", "name": f"loom_{cmd.verb}",
            "input": data}


def token_bench() -> None:
    from loom.agent.assembly import ADDENDUM

    enc = bpe_openai.get_encoding("o200k_base")

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    perms = "loom_aware, loom_write, loom_generate, doc_read, doc_write, cross_tree"
    addendum = ADDENDUM.format(permissions=perms)
    definitions = json.dumps(tool_definitions(), ensure_ascii=False)
    ops = sum(len(batch) for batch in SESSION)
    requests = len(SESSION)
    arrow_calls = sum(n("\n".join(batch)) for batch in SESSION)
    arrow_overhead = requests * (n(addendum) + n(AMBIENT))
    k = 0
    json_calls = 0
    for batch in SESSION:
        blocks = []
        for line in batch:
            blocks.append(tool_call(line, k))
            k += 1
        json_calls += n(json.dumps(blocks, ensure_ascii=False))
    json_overhead = requests * n(definitions)
    arrow = arrow_calls + arrow_overhead
    js = json_calls + json_overhead
    print(f"tokens (o200k_base), {ops} operations in {requests} requests:")
    print(f"  arrow: calls {arrow_calls:,} + addendum {n(addendum)} & loom context "
          f"{n(AMBIENT)} per request = {arrow:,} ({arrow / ops:,.1f}/operation)")
    print(f"  JSON tool calls: calls {json_calls:,} + {len(tool_definitions())} definitions "
          f"{n(definitions):,} per request = {js:,} ({js / ops:,.1f}/operation)")
    print(f"  ratio arrow/JSON: {arrow / js:.2f}× (goal ≤ 0.5×); calls alone: "
          f"{arrow_calls / json_calls:.2f}×")


def assembly_bench(nodes: int, deep: int, runs: int) -> None:
    from loom.agent import assembly as cx
    from loom.agent.participant import ensure_agent
    from loom.app import open_app
    from loom.commands.context import Actor
    from loom.store.workspace import NewNode

    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-agent-"))
    app = open_app(tmp / "bench.db", use_default_subject=False)
    ws = app.ws
    words = ("the house stood empty at end of lane she hadnt visited since her mothers death "
             "and windows seemed to watch approach with something like reproach").split()

    def sentence() -> str:
        return " " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "."

    t0 = time.perf_counter()
    tree = ws.create_tree("bench", "dialogue", root_content="Once.")
    root = ws.node(tree.root)
    specs: list[NewNode] = []
    keys: list[str] = []
    for i in range(deep):
        key = f"d{i}"
        who = "model" if i % 2 else "human"
        specs.append(NewNode(key, keys[-1] if keys else None, sentence(), who, who))
        keys.append(key)
    pool = list(keys)
    for i in range(nodes - deep - 1):
        parent = pool[-rng.randint(1, min(len(pool), 50))] if rng.random() < 0.7 \
            else rng.choice(pool)
        key = f"n{i}"
        who = rng.choice(("human", "model"))
        specs.append(NewNode(key, parent, sentence(), who, who))
        pool.append(key)
    built = ws.bulk_add(tree, root, specs)
    print(f"built {nodes:,} nodes in {time.perf_counter() - t0:.1f} s")
    agent = ensure_agent(ws)
    actor = Actor(agent, tree)
    app.executor.execute("→ view " + built["d5"].local_id, actor)
    app.executor.execute(f"→ pin {built['d3'].local_id}", actor)
    for label, node in (("2,000-deep position", built[f"d{deep - 1}"]),
                        ("shallow position (depth 10)", built["d9"])):
        ws.set_position(agent, tree, node, node)
        for budget in (cx.DEFAULT_BUDGET, 100_000):
            cx.fit(cx.draft(ws, actor, budget, turn_input="The human asks: what now?"))  # warm
            ms = []
            for _ in range(runs):
                t = time.perf_counter()
                out = cx.fit(cx.draft(ws, actor, budget, turn_input="The human asks: what now?"))
                ms.append((time.perf_counter() - t) * 1000)
            how = "exact" if out.exact else "estimated"
            print(f"assemble, {label}, budget {budget:,}: median {statistics.median(ms):.1f} ms "
                  f"(max {max(ms):.1f}; {out.tokens:,} tokens {how}; pruned={out.pruned}, "
                  f"{out.summarized_nodes} summarized, {out.elided_nodes} left out)")


PRICE_INPUT, PRICE_WRITE, PRICE_READ = 1.00, 1.25, 0.10  # $ per million tokens
MIN_CACHED = 4_096  # Haiku 4.5's shortest cacheable prefix


def _serial(messages: list[dict[str, Any]]) -> str:
    return "\x1e".join(f"{m['role']}\x1f{m['content']}" for m in messages)


def _shared(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def caching_bench() -> None:
    import asyncio
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.e2e.fake_provider import OPENAI_CHAT, FakeProvider, openai_chat_stream

    from loom.agent import Agent, ask
    from loom.agent.transcript import MemoryTurnLog
    from loom.app import open_app
    from loom.demo import create_demo
    from loom.llm.config import ModelProfile
    from loom.memory.counting import count_tokens

    os.environ.setdefault("LOOM_API_KEY", "bench-key")
    os.environ["LOOM_NO_KEYRING"] = "1"
    rng = random.Random(3)
    words = ("the house stood empty at the end of the lane she had not visited since her "
             "mother died and the windows seemed to watch her come with something like "
             "reproach").split()
    for name in ("the demo tree", "a 15,000-word tree"):
        tmp = Path(tempfile.mkdtemp(prefix="loom-bench-cache-"))
        app = open_app(tmp / "bench.db", use_default_subject=False)
        ws = app.ws
        if name == "the demo tree":
            tree = create_demo(ws)
        else:
            tree = ws.create_tree("long", "buffer", root_content="The house stood empty.")
            node = ws.node(tree.root)
            for i in range(300):
                text = " " + " ".join(rng.choice(words) for _ in range(50)) + "."
                node = ws.add_node(tree, node, text, ws.human() if i % 2 else ws.subject())
            ws.set_position(ws.human(), tree, node, node)
        with FakeProvider() as fake:
            profile = ModelProfile(name="bench", provider="openai-compatible",
                                   base_url=fake.openai_base_url, model="bench-chat",
                                   timeout_s=10, max_attempts=1, api_key_env="LOOM_API_KEY")
            agent = Agent(ws, app.executor, tree, profile=profile, turn_log=MemoryTurnLog())
            _node, tip = ws.position(ws.human(), tree)
            label = tip.local_id
            # turns four minutes apart, as a human reads and answers between them
            start, later = time.time(), [0.0]
            ws.clock = lambda start=start, later=later: start + later[0]
            for t in range(5):
                later[0] = 240.0 * t
                fake.script(OPENAI_CHAT,
                            openai_chat_stream(f"→ view {label} full\n→ list {label} "
                                               "continuations\n"),
                            openai_chat_stream(f'→ annotate {label} "note {t}: keep the '
                                               f'quiet here"\n→ pin {label}\n'),
                            openai_chat_stream(f"Turn {t}: the quiet carries it; I noted "
                                               "why and pinned the node."))
                asyncio.run(agent.run_turn(ask(f"Question {t}: what works here?")))
            calls = [r.json["messages"] for r in fake.requests_to(OPENAI_CHAT)]
        print(f"\nprompt caching, {name} ({len(calls)} calls in 5 turns, 4 minutes apart):")
        print("  call  chars   tokens  shared with the previous call: of this prompt, "
              "of that one")
        within: list[float] = []
        plain = cached = 0.0
        previous = ""
        for i, messages in enumerate(calls):
            text = _serial(messages)
            tokens = count_tokens("\n\n".join(m["content"] for m in messages))[0]
            common = _shared(previous, text)
            share = common / len(text) if previous else 0.0
            reused = common / len(previous) if previous else 0.0
            if i % 3:
                within.append(share)
            print(f"  {i + 1:>4}  {len(text):>6,}  {tokens:>6,}  {share:>6.0%}  {reused:>6.0%}"
                  f"{'' if i % 3 else '  (a turn begins)'}")
            plain += tokens * PRICE_INPUT
            hit = int(tokens * share) if tokens * share >= MIN_CACHED else 0
            cached += hit * PRICE_READ + (tokens - hit) * (PRICE_WRITE if tokens >= MIN_CACHED
                                                          else PRICE_INPUT)
            if os.environ.get("LOOM_BENCH_BREAKS") and previous and share < 0.9:
                # where the prompt stopped being the previous one's, and what came instead
                print(f"      break: …{previous[common - 120:common]!r}"
                      f"‖{previous[common:common + 80]!r}")
                print(f"         now …{text[common:common + 80]!r}")
            previous = text
        print(f"  within a turn: median prefix share {statistics.median(within):.0%} "
              f"(goal ≥ 80%); all calls: {sum(len(_serial(c)) for c in calls):,} characters")
        print(f"  prompt cost at Haiku 4.5 prices: ${plain / 1e6:.4f} uncached, "
              f"${cached / 1e6:.4f} cached ({cached / plain:.2f}×)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--deep", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--skip-assembly", action="store_true")
    args = ap.parse_args()
    token_bench()
    caching_bench()
    if not args.skip_assembly:
        assembly_bench(args.nodes, args.deep, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
