"""docs/team.md's set-up and the README's quick start work as written:
their shell blocks run in order, from an empty PostgreSQL server, each in a shell
of its own (each person's machine), with only the machine's particulars swapped in — the
server's socket for ``db.lab``, the test server's superuser behind ``sudo -u postgres``,
no password prompt (the socket trusts), and ``pip install`` already done. Then the result
is checked: the people the owner added, and the database refusing what a reader's role
may not do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg_cluster

REPO = Path(__file__).resolve().parents[2]

# the machine: what `sudo -u postgres TOOL`, `pip` and `psql` are here
PRELUDE = r"""set -euo pipefail
sudo() {
  [ "$1" = -u ] && shift 2
  local tool=$1; shift
  local args=()
  for a in "$@"; do [ "$a" = --pwprompt ] || args+=("$a"); done
  "$PGBIN/$tool" -h "$PGSOCK" -p "$PGPORT" -U "$PGSUPER" "${args[@]}"
}
pip() { :; }  # (installed already)
psql() { "$PGBIN/psql" -X -q "$@"; }
"""


def sh_blocks(path: Path, section: str) -> list[str]:
    """The ```sh blocks of one ``## section`` of a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 3)
    return re.findall(r"```sh\n(.*?)```", text[start:end if end > 0 else None], re.S)


@pytest.fixture
def server() -> Iterator[pg_cluster.Cluster]:
    """An empty PostgreSQL server of its own: the docs start from nothing."""
    if pg_cluster.binaries()[0] is None:
        pytest.skip(pg_cluster.binaries()[1])
    cluster = pg_cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def run_blocks(cluster: pg_cluster.Cluster, home: Path, blocks: list[str]) -> list[str]:
    """Each block in a fresh shell (a person at their machine); what each printed."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOOM_DB", "LOOM_PARTICIPANT", "PG"))}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}:{env['PATH']}",
               LOOM_SUBJECT="none", LOOM_NO_KEYRING="1", LOOM_SUMMARIES="off",
               PGBIN=str(cluster.bindir), PGSOCK=str(cluster.socket_dir),
               PGPORT=str(cluster.port), PGSUPER=pg_cluster.SUPERUSER)
    here = f"@/loom?host={cluster.socket_dir}"  # (the port: PGPORT; an & would fork)
    outputs = []
    for block in blocks:
        script = PRELUDE + block.replace("@db.lab/loom", here)
        done = subprocess.run(["bash", "-c", script], env=env, cwd=home, text=True,
                              capture_output=True, timeout=300, check=False)
        assert done.returncode == 0, f"{block}\n→ {done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    return outputs


def _rows(cluster: pg_cluster.Cluster, user: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(cluster.url("loom", user)) as conn:
        return list(conn.execute(query).fetchall())


def _people(cluster: pg_cluster.Cluster) -> dict[str, str]:
    return dict(_rows(cluster, pg_cluster.SUPERUSER, "SELECT name, permissions FROM "
                      "participant WHERE kind = 'human'"))


def test_team_md_set_up_and_roles_as_written(server: pg_cluster.Cluster,
                                            tmp_path: Path) -> None:
    home = tmp_path / "home"
    solo = home / ".local" / "share" / "loom" / "loom.db"
    solo.parent.mkdir(parents=True)
    from loom.demo import create_demo
    from loom.store.db import open_database
    from loom.store.workspace import Workspace

    ws = Workspace(open_database(solo))  # the workspace the owner moves there
    create_demo(ws)
    ws.db.close()
    doc = REPO / "docs" / "team.md"
    set_up = sh_blocks(doc, "Setting it up")
    enforce = sh_blocks(doc, "Letting the database enforce it too")
    assert len(set_up) == 4 and len(enforce) == 2, "docs/team.md's steps changed: look here"
    out = run_blocks(server, home, set_up)
    assert "✓ copied" in out[1]
    people = _people(server)
    assert people["alice"] == '["loom_aware", "loom_write", "loom_generate", "doc_read", ' \
        '"doc_write", "cross_tree"]'
    assert people["carol"] == '["loom_aware", "doc_read", "cross_tree"]'
    assert "The House at the End of the Lane" in out[3]  # alice, on the shared role
    out = run_blocks(server, home, enforce)
    assert "The House at the End of the Lane" in out[1]  # carol, as herself
    # and the database refuses carol what a reader may not do, as the issue tried it
    import psycopg

    with psycopg.connect(server.url("loom", "carol")) as conn:
        for statement in ("DELETE FROM change", "UPDATE node SET content = ''",
                          "UPDATE participant SET permissions = '[]' WHERE name = 'alice'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
            conn.rollback()
        assert conn.execute("DELETE FROM position").rowcount == 0  # only hers: none yet


def test_readme_quick_start_as_written(server: pg_cluster.Cluster, tmp_path: Path) -> None:
    """The first person to set up a team database follows the README top to bottom."""
    home = tmp_path / "home"
    home.mkdir()
    block, = sh_blocks(REPO / "README.md", "For a team: PostgreSQL")
    out, = run_blocks(server, home, [block])
    assert "no trees yet" in out
    people = _people(server)
    assert people["bob"] == '["loom_aware", "doc_read", "cross_tree"]'
    assert "loom_write" in people["alice"] and "loomadmin" in people
