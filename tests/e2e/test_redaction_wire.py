"""Redaction on the wire (issues 12 and 13): the real SDKs talk to the local fake server.

Out: text holding every credential shape goes to each provider; the server must never
receive one. Back: a server that echoes the request's own headers (the API key) split
across stream chunks; the key must not reach the deltas, the result, the tree (content,
summaries, the collaborator's turn record), stdout, the exports or the database file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from loom.agent import Agent
from loom.agent.cli import add_agent_arguments, main_agent
from loom.agent.transcript import SqliteTurnLog
from loom.interchange.markdown import export_markdown
from loom.interchange.openloom import export_openloom
from loom.llm import ChatMessage, ModelProfile, make_provider
from loom.llm import keys as llm_keys
from loom.llm.subject import ProviderSubject
from loom.llm.summaries import SummaryWorker
from loom.model.sampling import Sampling
from loom.protocol import dumps
from loom.redact import PLACEHOLDER, forget_secrets
from loom.store.schema import Node, Tree
from tests.e2e.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    RecordedRequest,
    Reply,
    anthropic_events,
    sse_reply,
)
from tests.redaction_samples import SAMPLES

OPENAI_ENV, ANTHROPIC_ENV = "LOOM_REDACT_OPENAI_KEY", "LOOM_REDACT_ANTHROPIC_KEY"
OPENAI_KEY = next(s.secret for s in SAMPLES if s.pattern == "openai_project_key")
ANTHROPIC_KEY = next(s.secret for s in SAMPLES if s.pattern == "anthropic_api_key")
KEYS = (OPENAI_KEY, ANTHROPIC_KEY)
ALL_SHAPES = "Notes from the ops channel:\n" + "\n".join(
    f"- item {i}: {s.text}" for i, s in enumerate(SAMPLES)) + "\nEnd of notes."


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(OPENAI_ENV, OPENAI_KEY)
    monkeypatch.setenv(ANTHROPIC_ENV, ANTHROPIC_KEY)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    forget_secrets()
    llm_keys.clear_cache()
    yield
    forget_secrets()


def profile(fake: FakeProvider, provider: str, **kw: Any) -> ModelProfile:
    anthropic = provider == "anthropic"
    fields: dict[str, Any] = {
        "name": f"echo-{provider}", "provider": provider, "model": "echo-model",
        "base_url": fake.anthropic_base_url if anthropic else fake.openai_base_url,
        "api_key_env": ANTHROPIC_ENV if anthropic else OPENAI_ENV,
        "timeout_s": 5, "backoff_base_s": 0.01, "backoff_max_s": 0.05, **kw}
    return ModelProfile(**fields)


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def assert_never_received(fake: FakeProvider, secrets: list[str]) -> None:
    """No request body held any secret, raw or JSON-escaped, in any string."""
    assert fake.requests
    for request in fake.requests:
        raw = request.body.decode("utf-8")
        decoded = "\n".join(strings(request.json))
        for secret in secrets:
            assert secret not in decoded
            assert secret not in raw and json.dumps(secret)[1:-1] not in raw


# -- out: every shape, every provider, never on the wire ----------------------------------

SHAPE_SECRETS = [s.secret for s in SAMPLES]


@pytest.mark.parametrize("provider", ["openai", "openai-compatible"])
async def test_openai_completions_and_chat_never_send_a_secret(fake, provider):
    p = make_provider(profile(fake, provider, supports_n=False))
    await p.complete(ALL_SHAPES, Sampling(n=2, tokens=8, stop=[OPENAI_KEY]))
    await p.chat([ChatMessage(role="system", content=f"Context: {ALL_SHAPES}"),
                  ChatMessage(role="user", content=f"Summarize {ANTHROPIC_KEY} please")])
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 2 and fake.requests_to(OPENAI_CHAT)
    assert_never_received(fake, SHAPE_SECRETS)
    # The text around the secrets still arrives: only the secrets were taken out.
    prompt = fake.requests_to(OPENAI_COMPLETIONS)[0].json["prompt"]
    assert prompt.startswith("Notes from the ops channel:\n- item 0: ")
    assert prompt.count(PLACEHOLDER) >= len(SAMPLES)
    messages = fake.requests_to(OPENAI_CHAT)[0].json["messages"]
    assert messages[1]["content"] == f"Summarize {PLACEHOLDER} please"


@pytest.mark.parametrize("strategy", ["infill", "suffix", "prefix"])
async def test_a_fill_never_sends_a_secret_before_or_after_the_span(fake, strategy):
    """→ fill's text before and after the span goes through the redaction door too: the
    fill-in-the-middle endpoint, the completions suffix, and the chat replies of one
    request (``chats``)."""
    from tests.e2e.fake_provider import LLAMA_INFILL, llama_infill_stream

    fake.set_default(LLAMA_INFILL, llama_infill_stream(" filled"))
    p = make_provider(profile(fake, "openai-compatible"))
    await p.fill(ALL_SHAPES, f"after {OPENAI_KEY} the end", Sampling(n=2, tokens=8),
                 strategy=strategy)
    await p.chats([ChatMessage(role="user", content=f"{ALL_SHAPES} ___ {ANTHROPIC_KEY}")],
                  Sampling(n=2, tokens=8))
    assert_never_received(fake, SHAPE_SECRETS)
    sent = [r.json for r in fake.requests]
    assert any(PLACEHOLDER in json.dumps(b) for b in sent)
    if strategy == "infill":
        assert fake.requests_to(LLAMA_INFILL)[0].json["input_suffix"] == \
            f"after {PLACEHOLDER} the end"


async def test_anthropic_complete_and_chat_never_send_a_secret(fake):
    p = make_provider(profile(fake, "anthropic"))
    await p.complete(ALL_SHAPES, Sampling(n=2, tokens=8))
    await p.chat([ChatMessage(role="system", content=ALL_SHAPES),
                  ChatMessage(role="user", content=f"My key is {OPENAI_KEY}.")],
                 Sampling(stop=["\n\n"]))
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 3
    assert_never_received(fake, SHAPE_SECRETS)
    body = fake.requests_to(ANTHROPIC_MESSAGES)[-1].json
    assert body["system"][0]["text"].count(PLACEHOLDER) >= len(SAMPLES)
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": f"My key is {PLACEHOLDER}.",
         "cache_control": {"type": "ephemeral"}}]}]


async def test_the_reported_case_sk_proj_to_a_local_compatible_server(fake):
    """A message holding sk-proj-… reached a local OpenAI-compatible server."""
    p = make_provider(profile(fake, "openai-compatible", api_key_env=None))
    await p.chat([ChatMessage(role="user", content=f"here: {OPENAI_KEY}")])
    assert_never_received(fake, [OPENAI_KEY])


async def test_the_local_model_gets_a_redacted_prompt_and_gives_a_redacted_reply(
        fake_llama, monkeypatch):
    """The local model's service (here a stand-in llama-server that echoes a key back) gets
    the prompt with the key replaced, and its reply reaches nobody with the key in it."""
    monkeypatch.setenv("FAKE_LLAMA_TEXT", f"You said it and the key is {ANTHROPIC_KEY} indeed")
    p = make_provider(ModelProfile(name="local", provider="local", model=str(fake_llama.model),
                                   logprobs=False))
    shown: list[str] = []
    result = await p.complete(f"Continue: {OPENAI_KEY}", on_delta=lambda i, s: shown.append(s))
    chat = await p.chat([ChatMessage(role="user", content=f"key {OPENAI_KEY}")])
    got = fake_llama.requests()
    assert got[0]["body"]["prompt"] == f"Continue: {PLACEHOLDER}"
    assert got[1]["body"]["messages"] == [{"role": "user", "content": f"key {PLACEHOLDER}"}]
    for text in ("".join(shown), result.completions[0].text, chat.completions[0].text,
                 json.dumps(result.raw), json.dumps(chat.raw)):
        assert ANTHROPIC_KEY not in text and OPENAI_KEY not in text
        assert ANTHROPIC_KEY[:20] not in text and ANTHROPIC_KEY[-20:] not in text
    assert result.completions[0].text.endswith(f"the key is {PLACEHOLDER} indeed")


# -- back: a server that echoes the request headers ----------------------------------------


def echo_text(request: RecordedRequest) -> str:
    headers = request.headers
    return (f"Debug echo. authorization: {headers.get('authorization', '-')} "
            f"x-api-key: {headers.get('x-api-key', '-')} raw "
            f"{headers.get('x-api-key') or headers.get('authorization', '').split()[-1]} end.")


def chunked(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def echo_openai(request: RecordedRequest) -> Reply:
    body = request.json or {}
    parts = chunked(echo_text(request))
    base = {"id": "echo", "created": 1700000000, "model": body.get("model", "m")}
    if request.path == OPENAI_CHAT:
        frames = [{**base, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                  for p in parts]
        frames.append({**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    else:
        frames = [{**base, "object": "text_completion",
                   "choices": [{"index": i, "text": p, "logprobs": None, "finish_reason": None}]}
                  for p in parts for i in range(int(body.get("n") or 1))]
    return sse_reply(frames)


def echo_anthropic(request: RecordedRequest) -> Reply:
    events = anthropic_events("x", model=(request.json or {}).get("model", "m"))
    head = [e for e in events if e[0] in ("message_start", "content_block_start")]
    tail = [e for e in events if e[0] in ("content_block_stop", "message_delta", "message_stop")]
    deltas = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": p}})
              for p in chunked(echo_text(request))]
    return sse_reply(head + deltas + tail, done=False)


@pytest.fixture
def echo(fake: FakeProvider) -> FakeProvider:
    fake.set_default(OPENAI_COMPLETIONS, echo_openai)
    fake.set_default(OPENAI_CHAT, echo_openai)
    fake.set_default(ANTHROPIC_MESSAGES, echo_anthropic)
    return fake


def assert_clean(*texts: str) -> None:
    for text in texts:
        for key in KEYS:
            assert key not in text
            # no recognisable piece of it either (the echo splits it across 7-char chunks)
            assert all(key[i:i + 12] not in text for i in range(0, len(key) - 12, 6))


@pytest.mark.parametrize("register", [True, False], ids=["registered", "patterns-only"])
@pytest.mark.parametrize("provider", ["openai", "openai-compatible", "anthropic"])
async def test_an_echoed_key_is_redacted_in_deltas_text_and_raw(echo, provider, register,
                                                                monkeypatch):
    if not register:  # prove the shapes alone catch it, without the exact registered key
        monkeypatch.setattr(llm_keys, "register_secret", lambda _value: None)
    p = make_provider(profile(echo, provider))
    deltas: list[str] = []
    result = await p.complete("hello", Sampling(n=2), on_delta=lambda i, s: deltas.append(s))
    seen: list[str] = []
    reply = await p.chat([ChatMessage(role="user", content="hi")], on_delta=seen.append)
    key = ANTHROPIC_KEY if provider == "anthropic" else OPENAI_KEY
    sent = echo.requests[0].headers
    assert key in sent.get("authorization", "") + sent.get("x-api-key", "")  # it did go out
    texts = [c.text for c in result.completions] + [reply.completions[0].text]
    assert all("Debug echo." in t and PLACEHOLDER in t for t in texts)
    assert_clean("".join(deltas), "".join(seen), *texts, json.dumps(result.model_dump()),
                 json.dumps(reply.model_dump()))


# -- end to end: the tree, the collaborator, stdout, exports, the database ---------


def test_an_echoed_key_never_reaches_the_tree_stdout_exports_or_the_database(
        app, echo, tmp_path, monkeypatch, capsys):
    ws = app.ws
    tree = ws.create_tree("Echo Story", "buffer", root_content="The keeper climbed.",
                          description="A tree whose models echo their headers.")
    # A subject continuation (OpenAI key) streamed to the caller and stored.
    app.executor.subject = ProviderSubject(profile(echo, "openai-compatible", supports_n=True))
    streamed: list[str] = []
    result = app.executor.execute("→ continue n:2 tokens:40", app.actor(tree),
                                  on_delta=lambda i, s: streamed.append(s))
    assert result.ok, result.text
    made = list(Node.select().where((Node.tree == tree.id) & (Node.depth == 1)))
    assert len(made) == 2 and all("Debug echo." in n.content for n in made)

    # Summaries of the new nodes and of the tree (Anthropic key).
    ws.enqueue_summary("tree", tree.id, tree.id, priority=6)
    worker = SummaryWorker(ws, profile(echo, "anthropic"))
    assert worker.run_once(limit=10) >= 3
    made = [ws.node(n.id) for n in made]
    assert all(n.summary_source == "model" and "Debug echo." in n.summary for n in made)
    stored_tree = Tree.get_by_id(tree.id)
    assert "Debug echo." in stored_tree.summary

    # The collaborator (OpenAI key): its turn record, as kept and as printed.
    agent = Agent(ws, app.executor, tree, profile=profile(echo, "openai-compatible"),
                  turn_log=SqliteTurnLog(ws))
    events: list[Any] = []
    turn = asyncio.run(agent.run_turn("What do you see?", events.append))
    assert "Debug echo." in turn.message
    config = tmp_path / "config.toml"
    config.write_text(
        f'[defaults]\ncollaborator = "echo"\n\n[profiles.echo]\nprovider = "anthropic"\n'
        f'base_url = "{echo.anthropic_base_url}"\nmodel = "echo-model"\n'
        f'api_key_env = "{ANTHROPIC_ENV}"\nbackoff_base_s = 0.01\n', encoding="utf-8")
    monkeypatch.setenv("LOOM_CONFIG", str(config))
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    parser = argparse.ArgumentParser()
    parser.add_argument("--db")
    add_agent_arguments(parser)
    db = str(ws.db.database)
    assert main_agent(parser.parse_args(["--db", db, "Echo Story", "--ask", "Again?"])) == 0
    printed = capsys.readouterr()
    assert "Debug echo." in printed.out

    data = export_openloom(ws, tree)
    exports = [json.dumps(data, ensure_ascii=False), dumps(data),
               export_markdown(ws, tree, ws.descend(made[0]))]
    turns = SqliteTurnLog(ws).turns(agent.name, tree.id)
    assert len(turns) == 2
    assert_clean("".join(streamed), result.text, *(n.content for n in made),
                 *(n.summary for n in made), stored_tree.summary, turn.message,
                 repr(turn), repr(turns), repr([e.__dict__ for e in events]),
                 printed.out, printed.err, *exports)
    # Last, the whole database holds no trace of either key: on SQLite the file and its
    # write-ahead log, on PostgreSQL every row of every table.
    if ws.dialect.postgres:
        tables = [r[0] for r in ws.sql("SELECT tablename FROM pg_tables "
                                        "WHERE schemaname = current_schema()")]
        rows = "".join(str(r[0]) for t in tables for r in ws.sql(
            f'SELECT CAST(row_to_json(x) AS text) FROM "{t}" AS x'))
        for key in KEYS:
            assert key not in rows and key[-24:] not in rows
        return
    ws.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in Path(db).parent.glob(Path(db).name + "*"):
        data_bytes = path.read_bytes()
        for key in KEYS:
            assert key.encode() not in data_bytes
            assert key[-24:].encode() not in data_bytes
