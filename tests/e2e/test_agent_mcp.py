"""The collaborator's MCP tools end to end: a real MCP server written with the SDK's
``MCPServer`` (``tests/e2e/mcp_demo_server.py``, started by the config's ``command``, and
over streamable HTTP on loopback), a scripted instruct model (the real ``openai`` SDK
against ``fake_provider``) that writes ``→ demo.TOOL …`` lines, the real executor and
store. No network beyond 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loom.agent import Agent, ask
from loom.agent.hooks import loom_hooks
from loom.agent.outside.config import McpServerConfig, load_servers
from loom.agent.outside.tools import Outside
from loom.agent.transcript import MemoryTurnLog, render_conversation
from loom.llm import keys as llm_keys
from loom.llm.config import ModelProfile
from loom.redact import forget_secrets
from loom.store.schema import TraceEntry
from tests.e2e.fake_provider import OPENAI_CHAT, FakeProvider, chat_profile, openai_chat_stream

pytest.importorskip("mcp")

SERVER = Path(__file__).with_name("mcp_demo_server.py")
KEY_ENV = "LOOM_API_KEY"
KEY = "loom-agent-test-key-5d1e"
TOKEN = "tok-env-secret-8f2a61"  # an env value of the stdio server: a secret
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4ea0000000049454e44ae426082")


@pytest.fixture
def backend() -> str:
    """The MCP path does not touch storage differently: SQLite only (the agent tests
    cover both backends)."""
    return "sqlite"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    llm_keys.clear_cache()
    yield


@pytest.fixture(scope="module")
def calls_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "calls.jsonl"


def demo_config(name: str, log: Path, **kw: Any) -> McpServerConfig:
    return McpServerConfig(name=name, command=[sys.executable, str(SERVER)],
                           env={"LOOM_TEST_MCP_LOG": str(log), "TOKEN": TOKEN}, **kw)


@pytest.fixture(scope="module")
def outside(calls_log: Path) -> Iterator[Outside]:
    """Two servers from the one script (``calm`` asks no approval) and one that cannot
    start, connected once for the module."""
    servers = {"demo": demo_config("demo", calls_log),
               "calm": demo_config("calm", calls_log, approval="never", timeout_s=1.5),
               "broken": McpServerConfig(name="broken",
                                         command=[sys.executable, "-c",
                                                  "import sys; sys.stderr.write('boom: "
                                                  "no API token\\n'); sys.exit(3)"])}
    out = Outside(servers)
    yield out
    out.close()
    forget_secrets()


def tool_calls(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture(autouse=True)
def _fresh_log(calls_log: Path) -> None:
    if calls_log.exists():
        calls_log.unlink()


def say(fake: FakeProvider, *replies: str) -> None:
    fake.script(OPENAI_CHAT, *(openai_chat_stream(r) for r in replies))


def bodies(fake: FakeProvider) -> list[list[dict[str, Any]]]:
    return [r.json["messages"] for r in fake.requests_to(OPENAI_CHAT)]


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


@pytest.fixture
def world(app, clock):  # type: ignore[no-untyped-def]
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Marie", "dialogue", root_content="Let's study Marie.",
                          author=human)
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, "Marie's reluctance stems from her childhood.", human)
    ws.set_position(human, tree, a, a)
    return {"ws": ws, "tree": tree, "a": a, "app": app}


def make_agent(world: dict[str, Any], fake: FakeProvider, outside: Outside | bool,
               profile: ModelProfile | None = None, **kw: Any) -> Agent:
    kw.setdefault("turn_log", MemoryTurnLog())
    return Agent(world["ws"], world["app"].executor, world["tree"],
                 profile=profile or chat_profile(fake), outside=outside, **kw)


def traced(agent: Agent) -> list[TraceEntry]:
    return list(TraceEntry.select().where(TraceEntry.participant == agent.participant.id)
                .order_by(TraceEntry.id))


# ── the tool runs, the model reads its result, the call is on record ──────────────────


def test_a_tool_call_runs_and_its_result_goes_back(world, fake, outside,  # type: ignore[no-untyped-def]
                                                   calls_log) -> None:
    seen: list[tuple[str, str]] = []
    hooks = loom_hooks().add_tool_result(lambda command, result: seen.append(
        (command, result.text.split("\n", 1)[0])))
    say(fake, 'Let me ask the demo server.\n→ calm.echo_args text:"hello world" n:2\n',
        "It said hello twice.")
    agent = make_agent(world, fake, outside, hooks=hooks)
    turn = asyncio.run(agent.run_turn(ask("Use the echo tool.")))
    assert turn.stop_reason == "done" and turn.iterations == 2
    # the server really got these arguments (n a number, loud its default)
    assert tool_calls(calls_log) == [{"tool": "echo_args",
                                      "args": {"text": "hello world", "n": 2, "loud": False}}]
    sent = bodies(fake)
    # the model was told of the tools in its system prompt, with their arguments
    system = sent[0][0]["content"]
    assert "=== Outside tools (MCP servers) ===" in system
    assert "→ calm.echo_args text:string n:integer=1? loud:boolean=false? — Repeat a text" \
        in system
    assert "broken: not available (✗ MODEL_ERROR: the MCP server 'broken' did not start" \
        in system
    # the result came back in the next call, headed by the command
    fed = sent[1][-1]["content"]
    assert '→ calm.echo_args text:"hello world" n:2\n✓ calm.echo_args\nhello worldhello world' \
        in fed
    # in the turn record, the hook, the trace and the conversation view, with its arguments
    rec = turn.commands[0]
    assert (rec.tool, rec.arguments, rec.ok, rec.head) == (
        "calm.echo_args", {"text": "hello world", "n": 2}, True, "✓ calm.echo_args")
    assert rec.canonical == '→ calm.echo_args text:"hello world" n:2'
    assert seen == [('→ calm.echo_args text:"hello world" n:2', "✓ calm.echo_args")]
    assert [(e.command, e.ok) for e in traced(agent)][-1] == (
        '→ calm.echo_args text:"hello world" n:2', True)
    view = render_conversation([turn], agent.name)
    assert '→ calm.echo_args text:"hello world" n:2\n    ✓ calm.echo_args' in view


def test_json_arguments_and_a_quote_over_lines(world, fake, outside, calls_log) -> None:  # type: ignore[no-untyped-def]
    say(fake, '→ calm.echo_args {"text": "a", "n": 3, "loud": true}\n'
              '→ calm.echo_args text:"two\nlines"\n', "Done.")
    agent = make_agent(world, fake, outside)
    turn = asyncio.run(agent.run_turn(ask("Echo.")))
    assert [c["args"] for c in tool_calls(calls_log)] == [
        {"text": "a", "n": 3, "loud": True}, {"text": "two\nlines", "n": 1, "loud": False}]
    assert "✓ calm.echo_args\nAAA" in bodies(fake)[1][-1]["content"]
    assert all(c.ok for c in turn.commands)


def test_help_shows_a_tool_in_full(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ help calm.echo_args\n", "OK.")
    asyncio.run(make_agent(world, fake, outside).run_turn(ask("What does echo take?")))
    fed = bodies(fake)[1][-1]["content"]
    assert "n (integer, optional, default 1)" in fed and "text (string, required)" in fed


def test_the_recent_actions_name_tool_calls(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ calm.echo_args text:x\n", "Done.", "Nothing more.")
    agent = make_agent(world, fake, outside)
    asyncio.run(agent.run_turn(ask("Echo.")))
    asyncio.run(agent.run_turn(ask("And now?")))
    assert "called calm.echo_args" in bodies(fake)[2][1]["content"]


# ── refused before the call ──────────────────────────────────────────────────────


@pytest.mark.parametrize("answer", [False, True])
def test_approval_mode_asks_before_a_call(world, fake, outside, calls_log,  # type: ignore[no-untyped-def]
                                          answer: bool) -> None:
    asked: list[str] = []

    async def approve(command: str) -> bool:
        asked.append(command)
        return answer

    say(fake, "→ demo.echo_args text:secretive\n→ calm.echo_args text:quiet\n", "Done.")
    agent = make_agent(world, fake, outside, approve=approve)
    turn = asyncio.run(agent.run_turn(ask("Echo.")))
    # demo asks (the default, like a write); calm says approval = "never"
    assert asked == ["→ demo.echo_args text:\"secretive\""]
    texts = [c["args"]["text"] for c in tool_calls(calls_log)]
    assert texts == (["secretive", "quiet"] if answer else ["quiet"])
    assert turn.commands[0].approved is answer
    assert "(each call waits for the human's approval)" in bodies(fake)[0][0]["content"]
    if not answer:
        rec = turn.commands[0]
        assert not rec.executed
        assert rec.head == ('✗ PERMISSION_DENIED: the human declined '
                            '→ demo.echo_args text:"secretive"')
        fed = bodies(fake)[1][-1]["content"]
        assert "hint: ask the human in your message, or try something else" in fed
        entry = next(e for e in traced(agent) if e.command.startswith("→ demo."))
        assert (entry.ok, entry.code) == (False, "PERMISSION_DENIED")


def test_bad_arguments_are_refused_with_the_tools_arguments(world, fake, outside,  # type: ignore[no-untyped-def]
                                                            calls_log) -> None:
    say(fake, '→ calm.echo_args n:"many" text:"x"\n'
              "→ calm.echo_args txt:x\n"
              "→ calm.echo_arg text:x\n"
              "→ calm.echo_args n:2\n"
              "→ nowhere.tool a:1\n", "I will fix them.")
    agent = make_agent(world, fake, outside)
    turn = asyncio.run(agent.run_turn(ask("Echo.")))
    assert tool_calls(calls_log) == []  # nothing reached the server
    heads = [c.head for c in turn.commands]
    assert heads == [
        "✗ INVALID_SYNTAX: calm.echo_args: n: 'many' is not of type 'integer'",
        "✗ INVALID_SYNTAX: calm.echo_args takes no argument 'txt' (did you mean text?)",
        '✗ INVALID_SYNTAX: calm has no tool "echo_arg" (did you mean calm.echo_args?)',
        "✗ INVALID_SYNTAX: calm.echo_args needs text",
        '✗ INVALID_SYNTAX: no MCP server "nowhere"',
    ]
    fed = bodies(fake)[1][-1]["content"]
    assert ("hint: → calm.echo_args text:string n:integer=1? loud:boolean=false? "
            "(? marks an optional argument; → help calm.echo_args)") in fed
    assert "hint: the MCP servers: demo, calm, broken" in fed
    assert not any(c.executed for c in turn.commands)


# ── failures are results, never crashes ──────────────────────────────────────────


def test_a_server_that_did_not_start_and_loom_commands_still_work(world, fake,  # type: ignore[no-untyped-def]
                                                                  outside) -> None:
    a = world["a"]
    say(fake, f"→ broken.anything x:1\n→ view {a.local_id}\n", "The server is down.")
    agent = make_agent(world, fake, outside)
    turn = asyncio.run(agent.run_turn(ask("Try it.")))
    assert turn.stop_reason == "done"
    broken, view = turn.commands
    assert broken.head.startswith("✗ MODEL_ERROR: the MCP server 'broken' did not start (")
    assert view.ok and view.canonical == f"→ view {a.local_id}"
    fed = bodies(fake)[1][-1]["content"]
    # its stderr explains why; the hint says Loom's own commands still work
    assert "its last words: boom: no API token" in fed
    assert "Loom's own commands still work" in fed
    assert f"[{a.local_id}]" in fed


def test_a_tool_error_and_a_timeout(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, '→ calm.fail reason:"kaput"\n→ calm.slow seconds:5\n→ calm.echo_args text:ok\n',
        "Done.")
    agent = make_agent(world, fake, outside)
    started = time.monotonic()
    turn = asyncio.run(agent.run_turn(ask("Go.")))
    assert time.monotonic() - started < 5  # the call's 1.5 s limit, not the tool's sleep
    heads = [c.head for c in turn.commands]
    assert heads[0] == "✗ MODEL_ERROR: calm.fail failed: Error executing tool fail"
    assert heads[1] == "✗ MODEL_ERROR: calm.slow did not answer within 1.5 s"
    assert heads[2] == "✓ calm.echo_args"  # the session survived the timeout


def test_a_long_result_is_summarized_like_a_commands(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ calm.lines count:400\n", "Long.")
    agent = make_agent(world, fake, outside)
    turn = asyncio.run(agent.run_turn(ask("Lines.")))
    assert turn.commands[0].summarized
    fed = bodies(fake)[1][-1]["content"]
    assert "line 1: the quick brown fox" in fed and "line 400:" not in fed
    assert "ask calm.lines for less (→ help calm.lines shows its arguments)]" in fed


def test_secrets_of_the_config_never_reach_the_model(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ calm.whoami\n", "Done.")
    agent = make_agent(world, fake, outside)
    turn = asyncio.run(agent.run_turn(ask("Who are you?")))
    fed = bodies(fake)[1][-1]["content"]
    assert "token=[REDACTED]" in fed  # the server had it; the model is not told it
    assert TOKEN not in json.dumps(bodies(fake)) and TOKEN not in turn.model_dump_json()
    assert TOKEN not in repr(outside.configs["calm"])


# ── images ───────────────────────────────────────────────────────────────────────


def test_an_image_reaches_a_model_that_sees_images(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ calm.pixel\n", "A tiny transparent pixel.")
    agent = make_agent(world, fake, outside, profile=chat_profile(fake, images=True))
    asyncio.run(agent.run_turn(ask("Show me the picture.")))
    last = bodies(fake)[1][-1]
    assert last["role"] == "user" and isinstance(last["content"], list)
    text, image = last["content"]
    assert text["type"] == "text" and "[image 1: image/png, 69 bytes, attached below]" in \
        text["text"]
    assert image == {"type": "image_url", "image_url": {
        "url": "data:image/png;base64," + base64.b64encode(PIXEL).decode()}}
    # the first call, without images, kept its plain text shape
    assert all(isinstance(m["content"], str) for m in bodies(fake)[0])


def test_a_text_only_model_is_told_an_image_was_returned(world, fake, outside) -> None:  # type: ignore[no-untyped-def]
    say(fake, "→ calm.pixel\n", "I cannot see it.")
    agent = make_agent(world, fake, outside)  # openai-compatible: no images by default
    asyncio.run(agent.run_turn(ask("Show me the picture.")))
    last = bodies(fake)[1][-1]
    assert isinstance(last["content"], str)
    assert "[image 1: image/png, 69 bytes: returned, but this model is not sent images]" in \
        last["content"]


# ── streamable HTTP on loopback, and config.toml ───────────────────────────────────


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(calls_log: Path) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "LOOM_TEST_MCP_LOG": str(calls_log)}
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.fail("the HTTP MCP server exited")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_server_over_streamable_http_from_config_toml(world, fake, http_server,  # type: ignore[no-untyped-def]
                                                        calls_log, tmp_path,
                                                        monkeypatch) -> None:
    secret = "Bearer http-secret-4b7c19"
    config = tmp_path / "config.toml"
    config.write_text(f'[mcp.servers.web]\nurl = "{http_server}"\n'
                      f'headers = {{ Authorization = "{secret}" }}\napproval = "never"\n')
    monkeypatch.setenv("LOOM_CONFIG", str(config))
    out = Outside.from_config()
    assert out is not None and out.configs["web"].transport == "http"
    try:
        say(fake, '→ web.echo_args text:"over http"\n→ web.whoami\n', "Done.")
        agent = make_agent(world, fake, out)
        turn = asyncio.run(agent.run_turn(ask("Echo over HTTP.")))
    finally:
        out.close()
        forget_secrets()
    assert [c.ok for c in turn.commands] == [True, True]
    assert tool_calls(calls_log)[0] == {"tool": "echo_args",
                                        "args": {"text": "over http", "n": 1, "loud": False}}
    fed = bodies(fake)[1][-1]["content"]
    assert "✓ web.echo_args\nover http" in fed
    assert "authorization=[REDACTED]" in fed  # the header arrived, and is not shown
    assert "http-secret-4b7c19" not in json.dumps(bodies(fake))


def test_config_toml_mcp_servers(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[mcp.servers.files]\ncommand = ["npx", "-y", "server-fs", "/notes"]\n'
                      'env = { API_TOKEN = "cfg-secret-77a1" }\n'
                      '[mcp.servers.off]\nurl = "http://127.0.0.1:9/mcp"\nenabled = false\n')
    servers = load_servers(config)
    assert list(servers) == ["files"]
    files = servers["files"]
    assert files.command == ["npx", "-y", "server-fs", "/notes"]
    assert (files.transport, files.approval, files.timeout_s) == ("stdio", "always", 60.0)
    assert "cfg-secret-77a1" not in repr(files)
    from loom.redact import redact

    assert redact("the token is cfg-secret-77a1") == "the token is [REDACTED]"
    forget_secrets()
