"""``loom agent`` on a team's PostgreSQL is checked like the editor.

A reader may not start or ask a collaborator that can do more than they can (the rule the
language server's ``loom.askCollaborator`` applies, one function for both), and an agent
run on a database role that may not write stops with Loom's ``✗ PERMISSION_DENIED``, not
a traceback. The collaborator's model is the local fake chat server (no key, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loom.cli import main
from loom.llm import keys as llm_keys
from loom.redact import forget_secrets
from tests.conftest import new_pg_database
from tests.e2e.fake_provider import OPENAI_CHAT, FakeProvider, openai_chat_stream

ASK = "note it"
REPLY = '→ annotate root "written for a reader"\n'


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The collaborator's model: a scripted chat server, named in a config of its own."""
    monkeypatch.setenv("LOOM_API_KEY", "loom-agent-pg-test-key")
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    monkeypatch.delenv("LOOM_PARTICIPANT", raising=False)
    llm_keys.clear_cache()
    with FakeProvider() as server:
        config = tmp_path / "config.toml"
        config.write_text(
            '[defaults]\ncollaborator = "fake"\n\n[profiles.fake]\n'
            f'provider = "openai-compatible"\nbase_url = "{server.openai_base_url}"\n'
            'model = "fake-chat"\nbackoff_base_s = 0.01\nmax_attempts = 1\n',
            encoding="utf-8")
        monkeypatch.setenv("LOOM_CONFIG", str(config))
        yield server
    forget_secrets()


def _cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _count(url: str, query: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return int(conn.execute(query).fetchone()[0])


def _annotations(url: str) -> int:
    return _count(url, "SELECT count(*) FROM node WHERE content = 'written for a reader'")


def _workspace(pg: Any, capsys: Any) -> tuple[str, tuple[str, ...]]:
    url = new_pg_database(pg)
    owner = ("--db", url, "--participant", "human")
    assert _cli(capsys, *owner, "new", "Shared", "--text", "Once upon a time.")[0] == 0
    return url, owner


def _collaborator(capsys: Any, fake: FakeProvider, owner: tuple[str, ...]) -> None:
    """The human's collaborator (all six permissions), made by a turn of the human's."""
    fake.script(OPENAI_CHAT, openai_chat_stream("Hello."))
    code, out, err = _cli(capsys, *owner, "agent", "Shared", "--ask", "hi")
    assert code == 0 and "Hello." in out, (out, err)


def test_a_reader_cannot_ask_through_loom_agent(pg: Any, fake: FakeProvider,
                                                capsys: Any) -> None:
    """Item 3: carol (reader) asking ``loom agent`` is refused as the editor refuses her,
    before anything is written or any model is called; alice (writer) asks and it writes."""
    url, owner = _workspace(pg, capsys)
    assert _cli(capsys, *owner, "users", "add", "carol", "--preset", "reader")[0] == 0
    assert _cli(capsys, *owner, "users", "add", "alice", "--preset", "writer")[0] == 0
    carol = ("--db", url, "--participant", "carol")

    # no collaborator yet: carol's ask would make one holding what she lacks
    participants = _count(url, "SELECT count(*) FROM participant")
    code, out, err = _cli(capsys, *carol, "agent", "Shared", "--ask", ASK)
    assert code == 1, (out, err)
    assert err.startswith("✗ PERMISSION_DENIED: the collaborator would hold loom_write, "
                          "loom_generate, doc_write, which carol does not"), err
    assert "\n  hint: " in err and "Traceback" not in err
    assert _count(url, "SELECT count(*) FROM participant") == participants
    assert not fake.requests_to(OPENAI_CHAT)

    # the human's collaborator exists (all six): asking it is as refused
    _collaborator(capsys, fake, owner)
    asked, turns = len(fake.requests_to(OPENAI_CHAT)), _count(url, "SELECT count(*) FROM "
                                                                   "agent_turn")
    fake.script(OPENAI_CHAT, openai_chat_stream(REPLY), openai_chat_stream("Noted."))
    code, out, err = _cli(capsys, *carol, "agent", "Shared", "--ask", ASK)
    assert code == 1 and err.startswith("✗ PERMISSION_DENIED: the collaborator would hold "
                                        "loom_write"), (out, err)
    assert len(fake.requests_to(OPENAI_CHAT)) == asked
    assert _annotations(url) == 0
    assert _count(url, "SELECT count(*) FROM agent_turn") == turns

    # nor may she make it her own size by asking for a role: she may not change it
    code, _out, err = _cli(capsys, *carol, "agent", "Shared", "--ask", ASK,
                           "--role", "analysis assistant")
    assert code == 1 and err.startswith("✗ PERMISSION_DENIED"), err
    assert _count(url, "SELECT count(*) FROM participant WHERE name = 'collaborator' "
                  "AND permissions LIKE '%loom_generate%'") == 1

    # the same rule as the language server's: the same words
    from loom.agent.participant import AgentSpec, may_start
    from loom.app import open_app
    from loom.errors import LoomError

    app = open_app(url, participant="carol")
    with pytest.raises(LoomError) as refused:
        may_start(app.ws, app.me(), AgentSpec())
    assert err.startswith(f"✗ PERMISSION_DENIED: {refused.value.message}")
    app.ws.db.close()

    # a writer's ask still works
    code, out, err = _cli(capsys, "--db", url, "--participant", "alice", "agent", "Shared",
                          "--ask", ASK)
    assert code == 0, (out, err)
    assert "✓" in out and _annotations(url) == 1


def test_a_reader_may_run_an_assistant_no_stronger_than_herself(pg: Any, fake: FakeProvider,
                                                                 capsys: Any) -> None:
    """The rule refuses escalation, not readers: an analysis assistant (look, read
    documents) is within a reader's permissions; its annotate is refused by the executor."""
    url, owner = _workspace(pg, capsys)
    assert _cli(capsys, *owner, "users", "add", "carol", "--preset", "reader")[0] == 0
    fake.script(OPENAI_CHAT, openai_chat_stream(REPLY), openai_chat_stream("I may not."))
    code, out, err = _cli(capsys, "--db", url, "--participant", "carol", "agent", "Shared",
                          "--name", "helper", "--role", "analysis assistant", "--ask", ASK)
    assert code == 0, (out, err)
    assert "✗ PERMISSION_DENIED: loom_write not enabled" in out
    assert _annotations(url) == 0


#: What each database role below may write beside reading (the tables exist in the template)
READS_ONLY: tuple[str, ...] = ()
#: the writes every Loom process makes while reading: where it is, its trace, the change log
WHILE_READING = ("GRANT INSERT, UPDATE, DELETE ON position, trace_entry, change TO {role}",
                 "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
#: and a branch's turn lock (the tree's row lock first): only the node itself is refused
TURN_LOCKS = (*WHILE_READING, "GRANT UPDATE ON tree TO {role}",
              "GRANT INSERT, UPDATE, DELETE ON branch_lock TO {role}")


def _dbname(url: str) -> str:
    return url.split("@/")[1].split("?")[0]


def _reader_role(pg: Any, url: str, name: str, grants: tuple[str, ...]) -> str:
    """A database role that may read Loom's tables and write only what ``grants`` says
    (minimal SQL of its own: docs/team.md's section is being rewritten). Roles outlive a
    database: ``name`` is new for each test."""
    dbname = _dbname(url)
    pg.admin(f"CREATE ROLE {name} LOGIN")
    pg.admin(f"GRANT CONNECT ON DATABASE {dbname} TO {name}")
    pg.admin(f"GRANT USAGE ON SCHEMA public TO {name}", dbname)
    pg.admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {name}", dbname)
    for grant in grants:
        pg.admin(grant.format(role=name), dbname)
    return pg.url(dbname, name)


@pytest.mark.parametrize(("grants", "newcomer", "model_calls"), [
    (READS_ONLY, True, 0),  # refused placing the newcomer: no model call
    (READS_ONLY, False, 1),  # refused taking the branch's turn lock for the annotation
    (WHILE_READING, False, 1),  # the same, its position and trace written
    (TURN_LOCKS, False, 1),  # the annotation itself refused: the model is not asked again
], ids=["reads-only-newcomer", "reads-only", "while-reading", "turn-locks"])
def test_the_agent_on_a_readers_database_role_says_permission_denied(
        pg: Any, fake: FakeProvider, capsys: Any, grants: tuple[str, ...], newcomer: bool,
        model_calls: int) -> None:
    """Item 4: Loom lets dora write (its grants out of step with the database's), so only
    PostgreSQL stops her, wherever in the turn: ``✗ PERMISSION_DENIED`` for her role,
    exit 1, no traceback, no annotation, no turn kept."""
    url, owner = _workspace(pg, capsys)
    name = f"dora_{_dbname(url)}"  # the participant her role names (docs/team.md)
    assert _cli(capsys, *owner, "users", "add", name, "--preset", "writer")[0] == 0
    if newcomer:  # made, never placed: where it stands is its first write
        from loom.agent.participant import ensure_agent
        from loom.app import open_app

        app = open_app(url, participant="human")
        ensure_agent(app.ws)
        app.ws.db.close()
    else:
        _collaborator(capsys, fake, owner)
    asked = len(fake.requests_to(OPENAI_CHAT))
    turns = _count(url, "SELECT count(*) FROM agent_turn")
    dora = _reader_role(pg, url, name, grants)
    fake.script(OPENAI_CHAT, openai_chat_stream(REPLY), openai_chat_stream("Noted."))
    code, out, err = _cli(capsys, "--db", dora, "agent", "Shared", "--ask", ASK)
    assert code == 1, (out, err)
    assert ("\n" + err).count("\n✗ ") == 1, err  # said once
    assert ("\n✗ PERMISSION_DENIED: the database refused this write for your database role"
            "\n  hint: ") in "\n" + err, err
    assert "Traceback" not in out + err and "SqliteTurnLog" not in out + err
    assert len(fake.requests_to(OPENAI_CHAT)) == asked + model_calls
    assert _annotations(url) == 0
    assert _count(url, "SELECT count(*) FROM agent_turn") == turns


def test_the_rule_and_its_check_before_each_turn(app: Any) -> None:
    """``may_start`` on both backends: what a new collaborator would hold, what an existing
    one holds, and a change asked for (before and after) must all be the starter's; the
    agent checks again before each turn, with both permissions as they are then."""
    import asyncio

    from loom.agent import Agent, AgentSpec
    from loom.agent.participant import may_start
    from loom.errors import LoomError
    from loom.llm.config import ModelProfile
    from loom.model import permissions as perms

    ws = app.ws
    tree = ws.create_tree("Mine", "buffer", root_content="Once.")
    reader = ws.ensure_participant("carol", "human", "human",
                                   ["loom_aware", "doc_read", "cross_tree"])
    writer = ws.ensure_participant("alice", "human", "human", list(perms.ORDER))
    assistant = AgentSpec(name="helper", role="analysis assistant")
    may_start(ws, reader, assistant)  # within hers
    may_start(ws, writer, AgentSpec())
    with pytest.raises(LoomError) as new:
        may_start(ws, reader, AgentSpec())
    assert new.value.code == "PERMISSION_DENIED"
    assert "loom_write, loom_generate, doc_write" in new.value.message
    # a dangling permission does nothing, so it is nothing to gain
    may_start(ws, ws.ensure_participant("dan", "human", "human", ["doc_read"]),
              AgentSpec(name="lone", permissions=("doc_read", "loom_write")))

    profile = ModelProfile(name="unused", provider="openai-compatible",
                           base_url="http://127.0.0.1:9", model="unused")
    agent = Agent(ws, app.executor, tree, spec=AgentSpec(), profile=profile, starter=writer)
    with pytest.raises(LoomError):  # an existing one: changing it takes holding both
        may_start(ws, reader, AgentSpec(role="analysis assistant"))
    ws.set_permissions(ws.participant("alice"), ["loom_aware", "doc_read"])  # alice narrowed
    nodes = ws.tree_counts(tree).nodes
    with pytest.raises(LoomError) as later:
        asyncio.run(agent.run_turn("note it"))
    assert later.value.code == "PERMISSION_DENIED" and "which alice does not" in \
        later.value.message
    assert ws.tree_counts(tree).nodes == nodes and not agent.busy
    assert not agent.turn_log.turns(agent.name, tree.id)
