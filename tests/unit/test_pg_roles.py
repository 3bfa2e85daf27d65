"""docs/team.md's "Letting the database enforce it too" works as written: its SQL, run as
the owner, gives a reader role that PostgreSQL stops from writing (shown as Loom's own
``✗ PERMISSION_DENIED``, nothing written) and a writer role that writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from loom.cli import main
from tests.conftest import new_pg_database

DOC = Path(__file__).resolve().parents[2] / "docs" / "team.md"


def _documented_sql(dbname: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Letting the database enforce it too"):]
    block = re.search(r"```sql\n(.*?)```", section, re.S)
    assert block is not None, "docs/team.md lost its role SQL"
    sql = re.sub(r"--[^\n]*", "", block.group(1))  # comments
    sql = sql.replace("DATABASE loom", f"DATABASE {dbname}").replace("'…'", "'unused'")
    return [s.strip() for s in sql.split(";") if s.strip()]


def _cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_documented_roles_let_the_database_enforce_permissions(pg: Any,
                                                                   capsys: Any) -> None:
    url = new_pg_database(pg)
    dbname = url.split("@/")[1].split("?")[0]
    owner = ("--db", url, "--participant", "human")
    assert _cli(capsys, *owner, "new", "Shared", "--text", "Once.")[0] == 0
    # Loom's own grants, deliberately out of step for carol: Loom lets her write, so only
    # the database can stop her
    for name in ("carol", "alice"):
        assert _cli(capsys, *owner, "users", "add", name, "--preset", "writer")[0] == 0
    pg.admin("DROP ROLE IF EXISTS carol")
    pg.admin("DROP ROLE IF EXISTS alice")
    pg.admin("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'loom_team') "
             "THEN CREATE ROLE loom_team NOLOGIN; END IF; END $$")
    for statement in _documented_sql(dbname):
        if statement.startswith("CREATE ROLE loom_team"):
            continue  # made above, idempotently (roles outlive a database)
        pg.admin(statement, dbname)

    def nodes() -> int:
        import psycopg

        with psycopg.connect(url) as conn:
            return int(conn.execute("SELECT count(*) FROM node").fetchone()[0])

    before = nodes()
    carol = ("--db", pg.url(dbname, "carol"))
    code, out, _ = _cli(capsys, *carol, "do", "Shared", "→ tree")
    assert code == 0 and "Shared" in out  # a reader reads
    code, out, err = _cli(capsys, *carol, "do", "Shared", "→ annotate root \"mine\"")
    err = err or out
    assert code == 1
    assert err.startswith("✗ PERMISSION_DENIED: the database refused this write for your "
                          "database role"), err
    assert nodes() == before
    alice = ("--db", pg.url(dbname, "alice"))
    code, out, err = _cli(capsys, *alice, "do", "Shared", '→ annotate root "hers"')
    assert code == 0, err
    assert nodes() == before + 1


def test_text_postgresql_cannot_store_is_refused_clearly(pg: Any, capsys: Any) -> None:
    """PostgreSQL text holds no NUL (U+0000): the write is refused as what it is, not as a
    storage error to retry, and nothing is written."""
    url = new_pg_database(pg)
    owner = ("--db", url, "--participant", "human")
    assert _cli(capsys, *owner, "new", "Shared", "--text", "Once.")[0] == 0
    code, out, err = _cli(capsys, *owner, "do", "Shared", '→ annotate root "a\x00b"')
    err = err or out
    assert code == 1
    assert err.startswith("✗ INVALID_SYNTAX: PostgreSQL cannot store this text: it holds a "
                          "NUL character (U+0000)"), err
    assert "hint: remove the character" in err
    code, out, _ = _cli(capsys, *owner, "do", "Shared", '→ annotate root "ab"')
    assert code == 0, out
