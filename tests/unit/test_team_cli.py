"""The team's command line: ``loom users`` on both backends, passwords (never from a URL,
from PGPASSWORD, ~/.pgpass or the keyring, never in a log), and ``loom migrate`` there and
back, checked by counts and content hashes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.store.db import open_database
from loom.store.transfer import models, table_hash
from loom.store.workspace import Workspace
from tests.conftest import new_pg_database


def _cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_users_add_set_and_no_escalation(db_target: str | Path, capsys: Any) -> None:
    db = str(db_target)
    admin = ("--db", db, "--participant", "human")  # on PostgreSQL the default is the role
    code, out, _ = _cli(capsys, *admin, "users", "add", "carol", "--preset", "reader")
    assert code == 0 and "carol may now: loom_aware, doc_read, cross_tree" in out
    code, out, _ = _cli(capsys, *admin, "users", "add", "dave")  # nobody is born able
    assert code == 0 and "✓ added dave (human, human) with no permissions" in out
    code, out, _ = _cli(capsys, *admin, "users", "grant", "dave", "write")
    assert code == 0 and "dave may now: loom_aware, loom_write" in out
    code, out, _ = _cli(capsys, *admin, "users")
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "(you)" in lines["human"] and "doc_read, cross_tree" in lines["carol"]
    # carol may not give what she lacks, nor raise herself
    code, _, err = _cli(capsys, "--db", db, "--participant", "carol", "users", "set", "dave",
                        "--preset", "writer")
    assert code == 1 and "PERMISSION_DENIED: loom_write is not yours to give" in err
    code, _, err = _cli(capsys, "--db", db, "--participant", "carol", "users", "set",
                        "carol", "--preset", "reader")
    assert code == 1 and "cannot change its own permissions" in err
    # nor take away what she lacks: a reader cannot strip a writer (dave writes now), nor
    # touch the human
    code, _, err = _cli(capsys, "--db", db, "--participant", "carol", "users", "revoke",
                        "dave", "aware")
    assert code == 1 and "dave holds loom_write, which you do not" in err
    code, out, _ = _cli(capsys, *admin, "users")
    assert "loom_aware, loom_write" in {line.split()[0]: line for line in out.splitlines()}[
        "dave"]
    code, _, err = _cli(capsys, "--db", db, "--participant", "carol", "users", "set", "human",
                        "--preset", "none")
    assert code == 1 and "the human always has every permission" in err
    code, out, _ = _cli(capsys, *admin, "users", "set", "dave", "--preset", "none")
    assert code == 0 and "dave may now: none" in out
    # and what a participant may not do, the executor refuses
    _cli(capsys, *admin, "new", "T", "--text", "Once.")
    code, _, err = _cli(capsys, "--db", db, "--participant", "carol", "do", "T",
                        '→ respond root "mine"')
    assert code == 1
    code, _, err = _cli(capsys, *admin, "users", "add", "carol")
    assert code == 1 and "CONFLICT" in err
    code, _, err = _cli(capsys, *admin, "users", "set", "nobody", "--preset", "reader")
    assert code == 1 and "NOT_FOUND" in err


def test_a_password_in_the_url_is_refused_and_not_shown(capsys: Any) -> None:
    code, out, err = _cli(capsys, "--db", "postgresql://bob:hunter22@127.0.0.1:1/x", "trees")
    assert code == 1 and "PERMISSION_DENIED" in err and "PGPASSWORD" in err
    assert "hunter22" not in out + err


@pytest.fixture
def secured(pg: Any) -> str:
    """A database whose role must give its password over TCP (scram)."""
    pg.admin("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pwuser') "
             "THEN CREATE ROLE pwuser LOGIN PASSWORD 'Corr3ct-h0rse'; END IF; END $$")
    url = new_pg_database(pg, template=False)
    name = url.split("/")[3].split("?")[0]
    pg.admin(f"ALTER DATABASE {name} OWNER TO pwuser")
    return str(pg.tcp_url(name, "pwuser"))


def test_passwords_from_env_pgpass_and_keyring(secured: str, tmp_path: Path, capsys: Any,
                                               monkeypatch: Any) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    code, _, err = _cli(capsys, "--db", secured, "trees")
    assert code == 1 and "PERMISSION_DENIED" in err and "~/.pgpass" in err

    monkeypatch.setenv("PGPASSWORD", "Corr3ct-h0rse")
    code, _out, err = _cli(capsys, "--db", secured, "trees")
    assert code == 0, err
    monkeypatch.delenv("PGPASSWORD")

    pgpass = tmp_path / "pgpass"
    pgpass.write_text("127.0.0.1:*:*:pwuser:Corr3ct-h0rse\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    code, _, err = _cli(capsys, "--db", secured, "trees")
    assert code == 0, err
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))

    from loom.llm import keys
    from loom.redact import redact

    asked: list[str] = []

    def keyring(name: str) -> str | None:
        asked.append(name)
        return "Corr3ct-h0rse"

    monkeypatch.setenv("LOOM_NO_KEYRING", "0")
    monkeypatch.setattr(keys, "keyring_lookup", keyring)
    code, _, err = _cli(capsys, "--db", secured, "trees")
    assert code == 0, err
    assert asked == [f"postgresql://pwuser@127.0.0.1:{secured.split(':')[2].split('/')[0]}/"
                     + secured.rsplit("/", 1)[1]]
    assert "Corr3ct-h0rse" not in redact("connecting with Corr3ct-h0rse")


def test_log_lines_never_show_the_password(caplog: Any, monkeypatch: Any) -> None:
    from loom.redact import DB_LOGGERS, install_log_redaction, register_secret

    register_secret("Sw0rdf1sh-db")
    install_log_redaction(DB_LOGGERS)
    with caplog.at_level(logging.WARNING):
        logging.getLogger("loom.store.feed").warning("lost postgresql://u:Sw0rdf1sh-db@h/d")
        logging.getLogger("psycopg").warning("password=Sw0rdf1sh-db failed")
    assert "Sw0rdf1sh-db" not in caplog.text


def _hashes(target: str | Path) -> dict[str, tuple[int, str]]:
    db = open_database(target)
    try:
        return {m._meta.table_name: (c.rows, c.sha256)
                for m in models() for c in [table_hash(db, m)]}
    finally:
        db.close()


def test_migrate_sqlite_to_postgres_and_back(pg: Any, tmp_path: Path, capsys: Any) -> None:
    from loom.demo import create_demo

    source = tmp_path / "solo.db"
    ws = Workspace(open_database(source))
    create_demo(ws)
    ws.db.close()
    team = new_pg_database(pg, template=False)
    code, out, err = _cli(capsys, "--db", str(source), "migrate", "--to", team)
    assert code == 0, err
    assert "count and content hash match" in out
    back = tmp_path / "back.db"
    code, out, err = _cli(capsys, "--db", team, "migrate", "--to", str(back))
    assert code == 0, err
    first, middle, last = _hashes(source), _hashes(team), _hashes(back)
    assert first == middle == last and first["node"][0] > 10
    # the copy is a working workspace: the same tree, and new ids follow the copied ones
    code, out, err = _cli(capsys, "--db", team, "do", "The House at the End of the Lane",
                          "→ tree")
    assert code == 0 and "The House at the End of the Lane" in out, err
    code, _, _ = _cli(capsys, "--db", team, "do", "The House at the End of the Lane",
                      '→ think "ids follow the copied ones"')
    assert code == 0
    # a second copy into a workspace that holds something is refused, nothing written
    code, _, err = _cli(capsys, "--db", str(source), "migrate", "--to", team)
    assert code == 1 and "CONFLICT: the target workspace is not empty" in err


def test_the_first_users_add_is_the_owners_and_all_or_nothing(pg: Any, capsys: Any,
                                                              monkeypatch: Any) -> None:
    """README's quick start on an empty team database: someone nobody
    added cannot add people (it printed "✓ added bob", then failed, leaving bob with
    nothing and alice made with nothing); the error says who can. The owner can, and then
    a writer may give others what she holds herself — but never the owner's."""
    url = new_pg_database(pg)
    monkeypatch.setenv("LOOM_DB", url)
    monkeypatch.setenv("LOOM_PARTICIPANT", "alice")

    def names() -> set[str]:
        import psycopg

        with psycopg.connect(url) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM participant")}

    code, out, err = _cli(capsys, "users", "add", "bob", "--preset", "writer")
    assert code == 1 and "✓" not in out, out
    assert err.startswith('✗ PERMISSION_DENIED: "alice" is no participant of this workspace '
                          "yet"), err
    assert "run it as the database's owner (loom)" in err and "LOOM_PARTICIPANT" in err
    assert not {"alice", "bob"} & names()
    monkeypatch.delenv("LOOM_PARTICIPANT")  # the owner, as the README says
    code, out, err = _cli(capsys, "users", "add", "alice", "--preset", "writer")
    assert code == 0 and out.startswith("✓ added alice (human, human)\n"), err
    monkeypatch.setenv("LOOM_PARTICIPANT", "alice")
    for line in (("users", "add", "bob", "--preset", "writer"),
                 ("users", "add", "carol", "--preset", "reader"),
                 ("users", "grant", "carol", "write")):  # hers to give: documented
        code, out, err = _cli(capsys, *line)
        assert code == 0, err
    code, out, err = _cli(capsys, "users", "set", "loom", "--preset", "none")
    assert code == 1 and "loom owns the database" in err, err
    monkeypatch.delenv("LOOM_PARTICIPANT")
    code, _, _ = _cli(capsys, "users", "add", "dora", "--preset", "reader")
    assert code == 0
    monkeypatch.setenv("LOOM_PARTICIPANT", "dora")
    code, out, err = _cli(capsys, "users", "add", "dave", "--preset", "writer")
    assert code == 1 and "loom_write is not dora's to give" in err, err
    assert "dave" not in names()
