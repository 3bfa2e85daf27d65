"""``→ explore`` typed in a buffer, through a language server with VS Code's and Neovim's
capabilities: the exploration shows as work-done progress (begin, cancellable, a report a
step, the summary at the end); the editor's cancel stops it with nothing half-written; a
``loom do TREE "→ explore end"`` in another process (the CLI) stops it; a start in
another process while it runs is refused; ``model:`` and sampling reach the wire. Loom's VS
Code extension, which declares ``experimental.loomExplorationProgress``, is sent
``loom/exploring`` instead (shown as a notification with Cancel, ``loom.stopExploring``);
``loom.explore`` explores from the node at the cursor with the options as typed. The
subject and the judge are the local fake provider, through the real SDK."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.e2e.fake_provider import (
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    openai_chat_stream,
    openai_completion_stream,
)
from tests.lsp.conftest import SERVER, Editor, open_demo, sql, start_session, write_fake_profile

CONFIG = Path(tempfile.gettempdir()) / f"loom-lsp-exploring-{os.getpid()}.toml"
ENV = {**os.environ, "LOOM_CONFIG": str(CONFIG), "LOOM_API_KEY": "sk-test-not-a-secret",
       "LOOM_NO_KEYRING": "1", "LOOM_SUMMARIES": "off"}
FIGURES = re.compile(r"^\d+ nodes? · \d+ scored · \d+ pruned · [\d,]+/20,000 tokens")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    """The fake as the subject model (profile ``fake``) and the collaborator's judge, and a
    second profile ``other`` for ``model:``."""
    with FakeProvider() as server:
        write_fake_profile(CONFIG, server.openai_base_url, "fake-base", "subject")
        with CONFIG.open("a", encoding="utf-8") as config:
            config.write('collaborator = "fake"\n'
                         f'\n[profiles.other]\nprovider = "openai-compatible"\n'
                         f'model = "other-base"\nbase_url = "{server.openai_base_url}"\n')
        yield server
    CONFIG.unlink(missing_ok=True)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV),
                    params=["visual_studio_code", "neovim"])
async def client(request: Any, lsp_client: LanguageClient, db: Path,  # type: ignore[no-untyped-def]
                 fake: FakeProvider):
    async for _ in start_session(request, lsp_client, db):
        yield


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV),
                    params=["visual_studio_code"])
async def extension(request: Any, lsp_client: LanguageClient, db: Path,  # type: ignore[no-untyped-def]
                    fake: FakeProvider):
    """VS Code with Loom's extension: it asks for ``loom/exploring``."""
    async for _ in start_session(request, lsp_client, db,
                                 experimental={"loomExplorationProgress": True}):
        yield


async def explore(editor: Editor, options: str) -> tuple[str, dict[str, Any]]:
    """Type ``→ explore OPTIONS`` at the end of the demo path and run it (``loom.run``)."""
    uri = await open_demo(editor)
    editor.append(uri, f"\n→ explore {options}")
    line = editor.doc(uri).line_count - 1
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.run", arguments=[{"uri": uri, "line": line}]))
    return uri, res


def reports(editor: Editor) -> dict[str, list[Any]]:
    return {token: values for token, values in editor.client.progress_reports.items()
            if str(token).startswith("loom-explore-")}


async def progress_token(editor: Editor) -> str:
    await editor.wait_for(lambda: any(v for v in reports(editor).values()), timeout=10)
    (token,) = reports(editor)
    return token


async def ended(editor: Editor, token: str, timeout: float = 20) -> lsp.WorkDoneProgressEnd:
    await editor.wait_for(lambda: any(isinstance(v, lsp.WorkDoneProgressEnd)
                                      for v in reports(editor)[token]), timeout=timeout)
    end = reports(editor)[token][-1]
    assert isinstance(end, lsp.WorkDoneProgressEnd)
    return end


def nodes(editor: Editor) -> int:
    return sql(editor.db, "SELECT count(*) FROM node")[0][0]  # type: ignore[arg-type]


def explore_log(editor: Editor) -> list[tuple[str, str]]:
    return sql(editor.db, "SELECT kind, payload FROM change WHERE kind LIKE 'explore.%' "  # type: ignore[arg-type]
                          "ORDER BY seq")


def loom(editor: Editor, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, in a process of its own, on the same database and config."""
    return subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(editor.db), *args],
                          capture_output=True, text=True, env=ENV, timeout=60, check=False)


def slow(fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [" One very slow sentence that takes its time, word by word, to the end."],
        event_delay_s=0.4))


async def test_progress_begins_reports_and_ends_and_model_reaches_the_wire(
        editor: Editor, fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" Rain.", " Wind."]))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — alive"),
                openai_chat_stream("2/10 — flat"))
    _uri, res = await explore(editor, "depth:1 n:2 model:other temperature:0.25 tokens:30")
    assert res["ok"] and res["message"].startswith("✓ exploring from ["), res
    token = await progress_token(editor)
    end = await ended(editor, token)
    values = reports(editor)[token]
    begin = values[0]
    assert isinstance(begin, lsp.WorkDoneProgressBegin)
    assert re.fullmatch(r"Loom: exploring from \[\w+\]", begin.title) and begin.cancellable
    messages = [v.message for v in values if isinstance(v, lsp.WorkDoneProgressReport)]
    assert any(FIGURES.match(m or "") for m in messages), messages
    assert "2 nodes · 2 scored · 1 pruned · " in messages[-1], messages
    assert end.message and "2 made, 2 scored, 1 pruned" in end.message
    assert "depth 1 reached" in end.message
    # the summary as a message too (VS Code's client does not show a progress's end)
    await editor.wait_for(lambda: any(m.message.startswith("✓ explored from [")
                                      for m in editor.client.messages))
    # model: and the sampling, on the wire of the continue the exploration made
    (asked,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert asked["model"] == "other-base" and asked["temperature"] == 0.25
    assert asked["max_tokens"] == 30
    assert [k for k, _ in explore_log(editor)] == ["explore.start", "explore.end"]


async def test_the_editors_cancel_stops_it_with_nothing_half_written(
        editor: Editor, fake: FakeProvider) -> None:
    slow(fake)
    before = nodes(editor)
    _uri, res = await explore(editor, "depth:3 n:1")
    assert res["ok"], res
    token = await progress_token(editor)
    await editor.wait_for(lambda: bool(fake.requests_to(OPENAI_COMPLETIONS)), timeout=10)
    editor.client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(
        token=token))
    end = await ended(editor, token, timeout=10)
    assert end.message and "(stopped)" in end.message and "0 made" in end.message
    await editor.wait_for(lambda: any(m.message.startswith("✓ stopped exploring from [")
                                      for m in editor.client.messages))
    assert nodes(editor) == before  # the continuation in flight was not stored
    assert not fake.requests_to(OPENAI_CHAT)
    # the stop ran through the executor as the human who started it
    traced = sql(editor.db, "SELECT p.name FROM trace_entry t JOIN participant p "  # type: ignore[arg-type]
                            "ON p.id = t.participant WHERE t.command = '→ explore end'")
    assert traced == [("human",)]
    assert sql(editor.db, "SELECT count(*) FROM branch_lock")[0][0] == 0  # type: ignore[arg-type]


async def test_a_stop_from_another_process_stops_it(editor: Editor,
                                                   fake: FakeProvider) -> None:
    slow(fake)
    before = nodes(editor)
    uri, res = await explore(editor, "depth:3 n:1")
    assert res["ok"], res
    token = await progress_token(editor)
    await editor.wait_for(lambda: bool(fake.requests_to(OPENAI_COMPLETIONS)), timeout=10)
    tree = uri.split("/")[-2]
    stopped = await asyncio.to_thread(loom, editor, "do", tree, "→ explore end")
    assert stopped.returncode == 0, stopped.stderr
    assert re.match(r"✓ asked the exploration from \[\w+\] running in another process to "
                    r"stop: it stopped, 0 nodes made", stopped.stdout), stopped.stdout
    end = await ended(editor, token, timeout=10)
    assert end.message and "(stopped)" in end.message
    # the writer here is told it ended, though the stop came from elsewhere
    await editor.wait_for(lambda: any(m.message.startswith("✓ explored from [")
                                      and "(stopped)" in m.message
                                      for m in editor.client.messages))
    assert nodes(editor) == before
    assert [k for k, _ in explore_log(editor)] == ["explore.start", "explore.stop",
                                                   "explore.end"]


async def test_a_start_in_another_process_is_refused_while_it_explores(
        editor: Editor, fake: FakeProvider) -> None:
    slow(fake)
    uri, res = await explore(editor, "depth:3 n:1")
    assert res["ok"], res
    token = await progress_token(editor)
    tree = uri.split("/")[-2]
    refused = await asyncio.to_thread(loom, editor, "do", tree, "→ explore depth:1")
    assert re.match(r"✗ CONFLICT: collaborator is already exploring \[\w+\] in \"[^\"]+\"\n"
                    r"  hint: → explore end ends it", refused.stdout), (refused.stdout,
                                                                        refused.stderr)
    stop = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.cancel", arguments=[{}]))  # Neovim's :Loom cancel
    assert stop["ok"] and stop["message"] == "✓ stopping the exploration", stop
    await ended(editor, token, timeout=10)
    assert [k for k, _ in explore_log(editor)] == ["explore.start", "explore.end"]


def exploring(editor: Editor) -> list[Any]:
    return [p for m, p in editor.notifications if m == "loom/exploring"]


async def test_the_extension_is_sent_notifications_and_its_cancel_stops_it(
        extension: LanguageClient, fake: FakeProvider) -> None:
    editor: Editor = extension.editor  # type: ignore[attr-defined]
    slow(fake)
    before = nodes(editor)
    uri, res = await explore(editor, "depth:3 n:1")
    assert res["ok"], res
    await editor.wait_for(lambda: bool(exploring(editor)))
    begin = exploring(editor)[0]
    assert begin.kind == "begin" and re.fullmatch(r"Loom: exploring from \[\w+\]",
                                                  begin.title), begin
    assert begin.tree == uri.split("/")[-2] and begin.token.startswith("loom-explore-")
    assert not reports(editor)  # no work-done progress besides: it would show twice
    await editor.wait_for(lambda: bool(fake.requests_to(OPENAI_COMPLETIONS)), timeout=10)
    # the notification's Cancel
    stop = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.stopExploring", arguments=[{"tree": begin.tree}]))
    assert stop["ok"] and stop["message"] == "✓ stopping the exploration", stop
    await editor.wait_for(lambda: exploring(editor)[-1].kind == "end", timeout=10)
    end = exploring(editor)[-1]
    assert end.token == begin.token and "(stopped)" in end.message and "0 made" in end.message
    assert {p.token for p in exploring(editor)} == {begin.token}
    assert [p.kind for p in exploring(editor)][1:-1] == ["report"] * (len(exploring(editor)) - 2)
    await editor.wait_for(lambda: any(m.message.startswith("✓ stopped exploring from [")
                                      for m in editor.client.messages))
    assert nodes(editor) == before
    traced = sql(editor.db, "SELECT p.name FROM trace_entry t JOIN participant p "  # type: ignore[arg-type]
                            "ON p.id = t.participant WHERE t.command = '→ explore end'")
    assert traced == [("human",)]
    # nothing to stop now: the executor says so
    again = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.stopExploring", arguments=[{"uri": uri}]))
    assert again["ok"] and again["message"].startswith("✓ no exploration is running in"), again


async def test_explore_from_the_node_at_the_cursor_with_the_options_as_typed(
        editor: Editor, fake: FakeProvider) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" Rain.", " Wind."]))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — alive"),
                openai_chat_stream("6/10 — fine"))
    uri = await open_demo(editor)
    first = sql(editor.db, "SELECT id FROM node WHERE parent IS NULL")[0][0]  # type: ignore[arg-type]
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.explore", arguments=[{
            "uri": uri, "line": 0, "character": 3,
            "options": "depth:many n:2"}]))
    assert not res["ok"] and res["message"].startswith("✗ INVALID_SYNTAX"), res
    assert not explore_log(editor)
    res = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.explore", arguments=[{
            "uri": uri, "line": 0, "character": 3,
            "options": 'depth:1  n:2\n judge:"vivid, and it moves"'}]))
    assert res["ok"] and res["message"].startswith("✓ exploring from ["), res
    await editor.wait_for(lambda: [k for k, _ in explore_log(editor)][-1:] == [
        "explore.end"], timeout=20)
    made = sql(editor.db, "SELECT n.parent, n.content FROM change c JOIN node n "  # type: ignore[arg-type]
                          "ON n.id = c.entity WHERE c.kind = 'node.continuation' AND c.seq > "
                          "(SELECT min(seq) FROM change WHERE kind = 'explore.start')")
    assert sorted(made) == [(first, " Rain."), (first, " Wind.")]
    (asked, _) = [r.json for r in fake.requests_to(OPENAI_CHAT)]
    assert "vivid, and it moves" in str(asked["messages"])
    traced = sql(editor.db, "SELECT command FROM trace_entry "  # type: ignore[arg-type]
                            "WHERE command LIKE '→ explore from %'")
    local = sql(editor.db, "SELECT local_id FROM node WHERE id = ?", first)[0][0]  # type: ignore[arg-type]
    # the failed one is traced too, as any command
    assert traced == [(f"→ explore from {local} depth:many n:2",),
                      (f'→ explore from {local} depth:1 n:2 judge:"vivid, and it moves"',)]
    bad = await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="loom.explore", arguments=[{"uri": uri, "options": "depth:9"}]))
    assert not bad["ok"] and "depth:1 to depth:6" in bad["message"], bad
