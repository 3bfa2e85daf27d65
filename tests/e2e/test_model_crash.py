"""The local model's process dies or hangs mid-generation, with the real model
and the real language server: kill -9, a SIGILL (as a CPU that cannot run the build
makes it), and a stop (a hang). Each time the request answers ``✗ MODEL_ERROR`` saying
what happened, nothing is written, the streamed text goes, every open buffer lives on,
and the next ``→ continue`` succeeds with a fresh model process."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from loom.llm.service.client import stop_all
from loom.llm.service.record import ServiceRecord
from tests.local_model import local_env, local_model_session, requires_local_model
from tests.lsp.conftest import Editor, open_demo, sql

pytestmark = requires_local_model

#: A runtime directory of this module's own: its kills never hit the suite's shared model.
RUNTIME = Path(tempfile.mkdtemp(prefix="loom-crash-runtime-"))
CONFIG = RUNTIME.parent / f"{RUNTIME.name}.toml"
CONFIG.write_text('[profiles.quick]\nprovider = "local"\nmodel = "SmolLM2-135M-Instruct"\n'
                  "timeout_s = 4\n\n[defaults]\nsubject = \"quick\"\n", encoding="utf-8")
ENV = local_env(LOOM_CONFIG=str(CONFIG), LOOM_RUNTIME_DIR=str(RUNTIME))
db, client, editor = local_model_session(ENV)


@pytest.fixture(scope="module", autouse=True)
def _runtime() -> Iterator[None]:
    yield
    stop_all(RUNTIME)
    shutil.rmtree(RUNTIME, ignore_errors=True)
    CONFIG.unlink(missing_ok=True)


def model_process() -> ServiceRecord:
    (path,) = [p for p in RUNTIME.glob("model-*.json") if not p.name.endswith(".exit.json")]
    return ServiceRecord.model_validate_json(path.read_text())


async def continue_(editor: Editor, uri: str, n: int, tokens: int) -> dict[str, Any]:
    return await editor.client.workspace_execute_command_async(lsp.ExecuteCommandParams(  # type: ignore[no-any-return]
        command="loom.continue", arguments=[{"uri": uri, "n": n, "tokens": tokens}]))


EXPECTED = {
    signal.SIGKILL: "✗ MODEL_ERROR: the local model process was killed (SIGKILL) while it "
                    "was generating",
    signal.SIGILL: "✗ MODEL_ERROR: the local model process died: illegal instruction (SIGILL)",
    signal.SIGSTOP: "✗ MODEL_ERROR: the local model process stopped answering",
}


@pytest.mark.parametrize("sig", list(EXPECTED), ids=lambda s: s.name)
async def test_the_model_process_dies_mid_generation_and_nothing_else_does(
        editor: Editor, sig: signal.Signals) -> None:
    uri = await open_demo(editor)
    tree, = sql(editor.db, "SELECT id FROM tree WHERE title LIKE 'The House%'")[0]
    root, = sql(editor.db, "SELECT n.local_id FROM tree t JOIN node n ON n.id = t.root "
                           "WHERE t.id = ?", tree)[0]
    other = f"loom://path/{tree}/{root}"  # a second buffer, open all along
    got = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=other))
    editor.open(other, got.text)
    warm = await continue_(editor, uri, 1, 3)  # the model process starts
    assert warm["ok"], warm
    first = model_process()
    before = editor.texts[uri]
    nodes = sql(editor.db, "SELECT count(*) FROM node")
    generations = sql(editor.db, "SELECT count(*) FROM generation")

    task = asyncio.ensure_future(continue_(editor, uri, 2, 400))
    await editor.wait_for(lambda: len(editor.texts[uri]) > len(before) + 10, timeout=30)
    os.kill(first.server_pid, sig)
    res = await asyncio.wait_for(task, 60)
    assert not res["ok"]
    assert res["message"].startswith(EXPECTED[sig]), res["message"]
    assert "hint:" in res["message"]
    if sig == signal.SIGILL:
        assert "this CPU cannot run the model server's build" in res["message"]
    # nothing written, the streamed text gone, the other buffer and the session alive
    assert sql(editor.db, "SELECT count(*) FROM node") == nodes
    assert sql(editor.db, "SELECT count(*) FROM generation") == generations
    await editor.wait_for(lambda: editor.texts[uri] == before)
    again = await editor.client.workspace_text_document_content_async(
        lsp.TextDocumentContentParams(uri=other))
    assert again.text == editor.texts[other]
    status = await editor.request("loom/status", {"uri": uri})
    assert not status["generating"]
    # the next continue starts a fresh model process and lands
    res = await continue_(editor, uri, 1, 6)
    assert res["ok"], res
    assert model_process().server_pid != first.server_pid
    assert sql(editor.db, "SELECT count(*) FROM generation") == [(generations[0][0] + 1,)]


async def test_doctor_through_the_server(editor: Editor) -> None:
    """VS Code's Loom: Doctor and :checkhealth loom ask the server; it starts the model and
    times a generation."""
    got = await editor.request("loom/doctor", {"generate": True})
    assert got["ok"], got["text"]
    texts = [c["text"] for c in got["checks"]]
    assert any(t.startswith("subject: quick (local: SmolLM2-135M-Instruct") for t in texts)
    assert any(t.startswith("generation: ") and " tokens in " in t for t in texts), texts
    assert any(t.startswith("language server memory: ") for t in texts), texts
    assert any("AMX instructions: 0" in t for t in texts) or os.environ.get("LOOM_LLAMA_SERVER")
    assert got["text"].startswith("Models\n  · subject: quick")
    assert all(c["status"] != "error" for c in got["checks"]), got["text"]


def test_doctor_on_the_command_line() -> None:
    import subprocess
    import sys

    env = {**ENV}
    done = subprocess.run([sys.executable, "-m", "loom.cli", "doctor"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Local model\n" in done.stdout and "  ✓ generation: " in done.stdout, done.stdout
    quick = subprocess.run([sys.executable, "-m", "loom.cli", "doctor", "--quick", "--json"],
                           env=env, capture_output=True, text=True, timeout=60, check=False)
    checks = json.loads(quick.stdout)["checks"]
    assert not any(c["text"].startswith("generation") for c in checks)
