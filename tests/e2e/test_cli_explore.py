"""``→ explore`` from the command line, in processes of their own, with the local fake
provider as subject and judge: ``loom do TREE '→ explore …'`` explores and shows its
progress until it ends (before: ``✓ exploring …`` and nothing, its thread dying with the
process), and a ``kill -9`` of an exploring process leaves no branch lock behind to block
the human (before: up to 120 s of ``✗ CONFLICT``)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_provider import (
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    openai_chat_stream,
    openai_completion_stream,
)
from tests.lsp.conftest import write_fake_profile

TREE = "The House at the End of the Lane"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[FakeProvider, Path, dict[str, str]]]:
    config = tmp_path / "config.toml"
    with FakeProvider() as fake:
        write_fake_profile(config, fake.openai_base_url, "fake-base", "subject")
        with config.open("a", encoding="utf-8") as f:
            f.write('collaborator = "fake"\n')
        env = {**os.environ, "LOOM_CONFIG": str(config), "LOOM_API_KEY": "sk-test-not-a-secret",
               "LOOM_NO_KEYRING": "1", "LOOM_SUMMARIES": "off"}
        db = tmp_path / "loom.db"
        loom(db, env, "demo", "--no-editor")
        yield fake, db, env


def loom(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "loom.cli", "--db", str(db), *args],
                         capture_output=True, text=True, env=env, timeout=120)
    return out


def count(db: Path, sql: str) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute(sql).fetchone()[0])


def test_loom_do_explore_explores_and_shows_its_progress(setup) -> None:  # type: ignore[no-untyped-def]
    fake, db, env = setup
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" The gate creaked.",
                                                              " A dog barked."]))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — it moves"),
                openai_chat_stream("3/10 — flat"))
    before = count(db, "SELECT count(*) FROM node")
    done = loom(db, env, "do", TREE, "→ explore depth:1 n:2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("✓ exploring from ["), done.stdout  # its own line first
    assert any(" 8/10" in line for line in lines[1:]), done.stdout  # then its steps
    assert "explored from [" in done.stderr and "(depth 1 reached)" in done.stderr, \
        done.stderr
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1
    assert len(fake.requests_to(OPENAI_CHAT)) == 2
    assert count(db, "SELECT count(*) FROM node") == before + 2
    assert count(db, "SELECT count(*) FROM node WHERE pruned") == 1
    assert count(db, "SELECT count(*) FROM branch_lock") == 0
    # nothing is left running: a stop finds none
    after = loom(db, env, "do", TREE, "→ explore end")
    assert after.stdout.startswith(f'✓ no exploration is running in "{TREE}"'), after.stdout


def test_loom_do_explore_as_json_keeps_stdout_for_records(setup) -> None:  # type: ignore[no-untyped-def]
    import json

    fake, db, env = setup
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" The gate creaked."]))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — it moves"))
    done = loom(db, env, "do", TREE, "--format", "json", "→ explore depth:1 n:1")
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["ok"] for r in records] == [True, True], done.stdout
    assert records[1]["data"]["made"] == 1 and records[1]["data"]["ended"] == \
        "depth 1 reached"


def test_a_killed_exploration_leaves_no_lock_to_block_the_human(setup) -> None:  # type: ignore[no-untyped-def]
    """docs/agent.md: a crashed exploration blocks nothing. Before, its branch lock stayed
    up to 120 s after a kill -9: the human's → continue there was ✗ CONFLICT."""
    fake, db, env = setup
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        [" One very slow sentence that takes its time, word by word, to the end."],
        event_delay_s=0.5),
        openai_completion_stream([" The human's own continuation."]))
    exploring = subprocess.Popen(
        [sys.executable, "-m", "loom.cli", "--db", str(db), "agent", TREE, "--explore",
         "depth:2 n:1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 60  # a bound for a hang, not a speed claim
        while not fake.requests_to(OPENAI_COMPLETIONS) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests_to(OPENAI_COMPLETIONS), "the exploration never asked the model"
        assert count(db, "SELECT count(*) FROM branch_lock") == 1  # it holds the branch
    finally:
        exploring.send_signal(signal.SIGKILL)
        exploring.wait(timeout=30)
    human = loom(db, env, "do", TREE, "→ continue n:1")
    assert human.returncode == 0, human.stdout + human.stderr
    assert human.stdout.startswith("✓ "), human.stdout
    assert count(db, "SELECT count(*) FROM node WHERE content LIKE '%own continuation%'") == 1
    assert count(db, "SELECT count(*) FROM branch_lock") == 0
    with sqlite3.connect(db) as con:
        released = con.execute("SELECT payload FROM change WHERE kind = 'lock.release' "
                               "ORDER BY seq").fetchall()
    assert any("holder_died" in (r[0] or "") for r in released), released
