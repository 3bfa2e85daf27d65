"""`loom mcp` with the MCP SDK's own client, over stdio and over streamable HTTP: the tools
and resources an outside agent sees, commands run as a restricted participant (refused
with the seeds' errors, nothing written), a human's commit from another process arriving
as a resource update, and the HTTP token refused and accepted."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

pytestmark = pytest.mark.anyio

ENV = {"LOOM_SUBJECT": "none", "LOOM_SUMMARIES": "off", "LOOM_NO_KEYRING": "1"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def loom(db: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), *args],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, **ENV})
    assert out.returncode == 0, f"loom {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "loom.db"
    loom(path, "demo", "--no-editor")
    loom(path, "users", "add", "reader")
    loom(path, "users", "grant", "reader", "loom_aware")
    loom(path, "users", "add", "scout")
    loom(path, "users", "grant", "scout", "loom_aware", "loom_write")
    return path


def tree_id(db: Path) -> str:
    with sqlite3.connect(db) as con:
        return str(con.execute("SELECT id FROM tree").fetchone()[0])


def node_like(db: Path, text: str) -> str:
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT local_id FROM node WHERE content LIKE ? AND kind != "
                          "'annotation' ORDER BY created LIMIT 1", (f"%{text}%",)).fetchone()
    return str(row[0])


def annotations(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute(
            "SELECT content FROM node WHERE kind = 'annotation' ORDER BY created")]


def stdio(db: Path, participant: str = "human") -> Client:
    return Client(StdioServerParameters(
        command=sys.executable,
        args=["-m", "loom.cli", "--db", str(db), "--participant", participant, "mcp"],
        env={**ENV, "PATH": os.environ.get("PATH", "")}))


def text_of(result) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def test_an_outside_agent_sees_the_tools_and_resources_and_works_as_the_human(
        db: Path) -> None:
    tree = tree_id(db)
    gate = node_like(db, "She stopped at the gate")
    async with stdio(db) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"loom", "loom_trees"}
        described = tools["loom"].description or ""
        # the collaborator's help, from the catalogue: the overview and each tool's syntax
        assert "Available tools" in described and '→ annotate [localId] "[content]"' in \
            described and "→ continue" in described, described
        assert tools["loom"].input_schema["required"] == ["commands"]

        listed = text_of(await client.call_tool("loom_trees", {}))
        assert tree in listed and "The House at the End of the Lane" in listed

        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {f"loom://tree/{tree}/{p}" for p in ("overview", "path", "context")} <= uris
        assert "loom://trees" in uris and any(u.startswith("loom://document/") for u in uris)
        overview = (await client.read_resource(f"loom://tree/{tree}/overview")).contents[0]
        assert f"[{gate}] She stopped at the gate." in overview.text, overview.text
        path = (await client.read_resource(f"loom://tree/{tree}/path")).contents[0].text
        assert path.startswith("The house stood empty at the end of the lane.")

        # several lines at once, each answered as the seeds answer it
        result = await client.call_tool("loom", {
            "commands": f'→ view {gate}\n→ annotate {gate} "from outside: a good beat"\n'
                        "→ flarp"})
        said = text_of(result)
        assert said.startswith(f"[{gate}]") and "She stopped at the gate" in said
        assert "✓ annotation [" in said and f"added to [{gate}]" in said, said
        assert "✗ INVALID_SYNTAX" in said and "  hint:" in said, said
        assert result.is_error  # one of them failed
        assert "from outside: a good beat" in annotations(db)

        prompt = await client.get_prompt("loom_context", {"tree": tree})
        context = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "=== Operational Memory ===" in context and "=== Loom Context ===" in context
        assert "annotated " + gate in context  # its own recent actions
        assert "Commands (the loom tool) start with →" in context

        missing = await client.call_tool("loom", {"commands": "→ view zzzz99"})
        assert missing.is_error and text_of(missing).startswith("✗ NOT_FOUND")


async def test_a_restricted_participant_is_refused_with_the_seeds_errors_and_nothing_written(
        db: Path) -> None:
    gate = node_like(db, "She stopped at the gate")
    before = annotations(db)
    async with stdio(db, "reader") as client:
        described = next(t for t in (await client.list_tools()).tools
                         if t.name == "loom").description or ""
        assert "requires loom_write permission (you don't have this)" in described
        # docs/mcp.md: "the tools its permissions allow and each one's syntax": the
        # syntax of view, not of the writes it may not make (listed before)
        assert "→ view [localId]" in described and "→ tree summary" in described
        for refused_syntax in ("→ continue from", '→ annotate [localId] "',
                               '→ respond [localId] "', '→ write doc:', '→ edit [localId]'):
            assert refused_syntax not in described, (refused_syntax, described)
        refused = await client.call_tool("loom", {
            "commands": f'→ annotate {gate} "should not land"'})
        assert refused.is_error
        assert text_of(refused).startswith("✗ PERMISSION_DENIED: loom_write not enabled"), \
            text_of(refused)
        assert "\n  hint: " in text_of(refused)
        ok = await client.call_tool("loom", {"commands": f"→ view {gate}"})
        assert not ok.is_error  # reading is granted
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert not any(u.startswith("loom://document/") for u in uris)  # no doc_read
    assert annotations(db) == before


async def test_a_humans_commit_arrives_as_a_resource_update(db: Path) -> None:
    tree = tree_id(db)
    path_uri = f"loom://tree/{tree}/path"
    async with stdio(db, "scout") as client:
        async with client.listen(resource_subscriptions=[path_uri]) as events:
            # a human writes from another process (the CLI, as an editor's commit would)
            tip = node_like(db, "kitchen smelled of cold ash")
            loom(db, "do", tree, f'→ respond {tip} " The kettle was still warm."')
            with anyio.fail_after(15):
                event = await events.__anext__()
        assert getattr(event, "uri", None) == path_uri, event
        text = (await client.read_resource(path_uri)).contents[0].text
        # scout's own path: the demo's, which the human's respond continued
        assert "The house stood empty" in text


async def test_a_2025_client_subscribes_and_is_notified(db: Path) -> None:
    """A client of the 2025 protocol (Claude Desktop's era): resources/subscribe, then
    notifications/resources/updated."""
    tree = tree_id(db)
    overview = f"loom://tree/{tree}/overview"
    got: list[str] = []

    async def on_message(message) -> None:  # type: ignore[no-untyped-def]
        params = getattr(getattr(message, "params", None), "uri", None)
        if params is not None:
            got.append(str(params))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "loom.cli", "--db", str(db), "--participant", "scout", "mcp"],
        env={**ENV, "PATH": os.environ.get("PATH", "")})
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(overview)
        tip = node_like(db, "The gate was locked")
        loom(db, "do", tree, f'→ respond {tip} " She climbed it."')
        with anyio.fail_after(15):
            while overview not in got:
                await anyio.sleep(0.05)
        assert "She climbed it." in (await client.read_resource(overview)).contents[0].text


@asynccontextmanager
async def http_server(db: Path, token_file: Path) -> AsyncIterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "loom.cli", "--db", str(db), "--participant", "scout", "mcp",
         "--http", "127.0.0.1:0", "--token-file", str(token_file)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, **ENV})
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        url = None
        while url is None and time.monotonic() < deadline:
            line = await anyio.to_thread.run_sync(proc.stderr.readline)
            if not line:
                break
            found = re.search(r"listening on (http://\S+)", line)
            url = found.group(1) if found else None
        assert url, "loom mcp --http did not say where it listens"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_http_needs_the_token(db: Path, tmp_path: Path) -> None:
    token = "a-long-random-token-for-the-test-0123456789"
    token_file = tmp_path / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    async with http_server(db, token_file) as url:
        async with httpx2.AsyncClient() as plain:
            refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1,
                                                  "method": "tools/list"})
            assert refused.status_code == 401
            wrong = await plain.post(url, headers={"Authorization": "Bearer nope"},
                                     json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert wrong.status_code == 401
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"loom", "loom_trees"}
            gate = node_like(db, "She stopped at the gate")
            result = await client.call_tool("loom", {
                "commands": f'→ annotate {gate} "over http"'})
            assert not result.is_error, text_of(result)
    assert "over http" in annotations(db)


async def test_http_declares_the_resource_list_changes_it_sends(db: Path,
                                                                 tmp_path: Path) -> None:
    """Over HTTP as over stdio, a 2025 client is told ``resources.listChanged: true``
    (the server sends ``notifications/resources/list_changed``; before, HTTP declared
    false)."""
    token_file = tmp_path / "token"
    token_file.write_text("another-long-random-token-0123456789abcdef")
    token_file.chmod(0o600)
    headers = {"Authorization": f"Bearer {token_file.read_text()}"}
    declared = {}
    async with stdio(db, "scout") as client_stdio:
        caps = client_stdio.server_capabilities
        declared["stdio"] = caps.resources.list_changed if caps and caps.resources else None
    async with http_server(db, token_file) as url, \
            httpx2.AsyncClient(headers=headers) as http:
        for mode in ("legacy", "auto"):
            async with Client(streamable_http_client(url, http_client=http),
                              mode=mode) as client:
                caps = client.server_capabilities
                declared[f"http {mode}"] = (caps.resources.list_changed
                                            if caps and caps.resources else None)
    assert declared == {"stdio": True, "http legacy": True, "http auto": True}, declared


def test_every_malformed_stdio_request_is_answered(db: Path) -> None:
    """Issue 44 item 24: ``params: "garbage"`` on tools/call, a lone surrogate in
    ``commands`` and broken JSON were never answered (the client waited); now each gets a
    JSON-RPC answer and the server goes on serving."""
    import json
    import select

    proc = subprocess.Popen(
        [sys.executable, "-m", "loom.cli", "--db", str(db), "--participant", "scout", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, **ENV})
    assert proc.stdin is not None and proc.stdout is not None
    got: dict[object, dict] = {}

    def send(line: str) -> None:
        proc.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def until(wanted: set[object]) -> None:
        deadline = time.monotonic() + 60  # a bound for a hang, not a speed claim
        while not wanted <= set(got) and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 0.5)[0]:
                answer = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
                got[answer.get("id")] = answer
        assert wanted <= set(got), f"never answered: {wanted - set(got)}; got {got}"

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}))
        until({1})
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"garbage"}')
        send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"loom",'
             '"arguments":{"commands":"→ view \\ud800"}}}')
        send('{"jsonrpc":"2.0","id":4,"method":"tools/call",')
        send('{"jsonrpc":"2.0","id":5,"method":"tools/list"}')
        until({2, 3, None, 5})
        assert got[2]["error"]["code"] == -32602
        assert "params must be an object" in got[2]["error"]["message"]
        said = got[3]["result"]["content"][0]["text"]
        assert said.startswith("✗ ") and "\ufffd" in said, said  # answered, the text kept
        assert got[None]["error"]["code"] == -32700
        assert {t["name"] for t in got[5]["result"]["tools"]} == {"loom", "loom_trees"}
    finally:
        proc.kill()
        proc.wait(timeout=10)


async def test_tree_defaults_to_the_tree_the_agent_was_last_in(tmp_path: Path) -> None:
    """docs/mcp.md: "`tree` (title or id; default: the tree it was last in)". Before, a
    call naming a tree recorded nothing, so with two trees the next call without one was
    ``✗ INVALID_SYNTAX: which tree? …`` and ``loom_trees`` never marked where it was."""
    db = tmp_path / "two.db"
    loom(db, "demo", "--no-editor")
    loom(db, "new", "Second Tree", "--text", "A second beginning.")
    loom(db, "users", "add", "agent")
    loom(db, "users", "grant", "agent", "loom_aware", "loom_write")
    with sqlite3.connect(db) as con:
        demo, second = (str(con.execute("SELECT id FROM tree WHERE title = ?",
                                        (t,)).fetchone()[0])
                        for t in ("The House at the End of the Lane", "Second Tree"))
    async with stdio(db, "agent") as client:
        unsure = await client.call_tool("loom", {"commands": "→ view root"})
        assert text_of(unsure).startswith("✗ INVALID_SYNTAX: which tree?")
        named = await client.call_tool("loom", {"commands": "→ view root", "tree": second})
        assert not named.is_error and "A second beginning." in text_of(named)
        again = await client.call_tool("loom", {"commands": "→ view root"})
        assert not again.is_error, text_of(again)
        assert "A second beginning." in text_of(again)
        listed = text_of(await client.call_tool("loom_trees", {}))
        assert f'{second}  "Second Tree"' in listed and "(you were last here)" in listed
        # without cross_tree, the tree it is in is the only one it may read or act in,
        # as the docs' "cross_tree for a tree it is not in" says
        elsewhere = await client.call_tool("loom", {"commands": "→ view root",
                                                    "tree": demo})
        assert elsewhere.is_error
        assert text_of(elsewhere).startswith("✗ PERMISSION_DENIED: cross_tree not enabled")
        assert demo not in listed
    loom(db, "users", "grant", "agent", "cross_tree")
    async with stdio(db, "agent") as client:
        moved = await client.call_tool("loom", {"commands": "→ view root", "tree": demo})
        assert not moved.is_error and "The house stood empty" in text_of(moved)
        back = await client.call_tool("loom", {"commands": "→ view root"})
        assert "The house stood empty" in text_of(back)  # now the last one it was in
        hop = await client.call_tool("loom", {
            "commands": f"→ view root\n→ switch to root in tree:{second}"})
        assert not hop.is_error, text_of(hop)
        there = await client.call_tool("loom", {"commands": "→ view root"})
        assert "A second beginning." in text_of(there)  # where its switch took it
