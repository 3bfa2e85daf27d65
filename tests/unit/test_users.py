"""Identity: only the human is born with every permission; ``loom users`` lists, adds,
grants and revokes, each grant a ``grant`` command by the human through the executor."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.cli import main
from loom.model import permissions as perms


@pytest.fixture(autouse=True)
def db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "users.db"
    monkeypatch.setenv("LOOM_DB", str(path))
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_only_the_human_is_born_with_every_permission(app) -> None:  # type: ignore[no-untyped-def]
    assert list(app.ws.human().permissions) == list(perms.ORDER)
    alice = app.ws.human("alice")
    assert alice.kind == "human" and list(alice.permissions) == []
    assert app.ws.human("alice").id == alice.id  # found again, not re-created


def test_users_lists_adds_grants_and_revokes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "users")
    assert code == 0
    assert out.splitlines()[0].split()[:3] == ["human", "human", "human"]
    assert out.splitlines()[0].removesuffix(" (you)").endswith(", ".join(perms.ORDER))
    assert "model" in out and "no permissions" in out
    code, out, _ = run(capsys, "users", "add", "alice")
    assert code == 0 and out.startswith("✓ added alice (human, human) with no permissions")
    code, _, err = run(capsys, "users", "add", "alice")
    assert code == 1 and err.startswith('✗ CONFLICT: participant "alice" already exists')
    # write needs aware: granting write brings it, or write would do nothing
    code, out, _ = run(capsys, "users", "grant", "alice", "write", "doc_read")
    assert (code, out) == (0, "✓ alice may now: loom_aware, loom_write, doc_read\n")
    code, out, _ = run(capsys, "users", "grant", "alice", "all")
    assert out == "✓ alice may now: " + ", ".join(perms.ORDER) + "\n"
    # revoking aware takes what needs it too
    code, out, _ = run(capsys, "users", "revoke", "alice", "aware")
    assert (code, out) == (0, "✓ alice may now: doc_read, doc_write\n")
    code, out, _ = run(capsys, "users")
    assert next(line for line in out.splitlines() if line.startswith("alice")).endswith(
        "doc_read, doc_write")


def test_users_refuses_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "users", "add", "bot", "--kind", "model", "--role", "analysis assistant")
    for argv, code_text in [
            (("users", "grant", "bot", "fly"), "✗ INVALID_SYNTAX: unknown permission fly"),
            (("users", "revoke", "bot", "fly"), "✗ INVALID_SYNTAX: unknown permission fly"),
            (("users", "grant", "nobody", "write"),
             '✗ NOT_FOUND: participant "nobody" does not exist'),
            (("users", "revoke", "human", "write"),
             "✗ PERMISSION_DENIED: the human always has every permission"),
            (("users", "add", "9lives"), "✗ INVALID_SYNTAX: '9lives' is not a usable "
                                         "participant name")]:
        code, out, err = run(capsys, *argv)
        assert code == 1 and err.startswith(code_text), (argv, err)
        assert "Error" not in err and "Traceback" not in err
    code, out, _ = run(capsys, "users")
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("bot")] == [
        ["bot", "model"]]
    assert "analysis assistant" in out


def test_a_grant_is_the_humans_command(capsys: pytest.CaptureFixture[str], db: Path) -> None:
    run(capsys, "users", "add", "alice")
    run(capsys, "users", "grant", "alice", "read")
    from loom.app import open_app
    from loom.store import memory_repo

    app = open_app(db, use_default_subject=False)
    trace = memory_repo.trace(app.ws, app.ws.human())
    assert [(e.command, e.ok) for e in trace][-1] == ('→ grant "alice" doc_read', True)
