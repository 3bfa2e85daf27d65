"""One rule for who may ask a collaborator, wherever from. On a team's
PostgreSQL, a reader's editor (``loom.askCollaborator``) and the same reader's ``loom
agent`` are refused with the same words, before anything is written; no model is needed to
say no."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import new_pg_database
from tests.lsp.conftest import NO_MODEL_ENV, SERVER, make_demo


def _rows(url: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return list(conn.execute(query).fetchall())


async def test_a_readers_editor_and_loom_agent_are_refused_alike(pg: Any, capsys: Any) -> None:
    url = new_pg_database(pg)
    make_demo(url)  # type: ignore[arg-type]  # the demo has the human's collaborator
    from loom.cli import main

    assert main(["--db", url, "--participant", "human", "users", "add", "carol",
                 "--preset", "reader"]) == 0
    tree, tip = _rows(url, "SELECT p.tree, n.local_id FROM position p JOIN participant h "
                           "ON h.id = p.participant JOIN node n ON n.id = p.tip "
                           "WHERE h.name = 'human'")[0]
    capsys.readouterr()
    watched = "SELECT (SELECT count(*) FROM node), (SELECT count(*) FROM agent_turn), " \
              "(SELECT count(*) FROM participant), (SELECT count(*) FROM position)"
    before = _rows(url, watched)

    assert main(["--db", url, "--participant", "carol", "agent", tree, "--ask",
                 "note it"]) == 1
    from_cli = capsys.readouterr().err.strip()
    assert from_cli.startswith("✗ PERMISSION_DENIED: the collaborator would hold "), from_cli

    client: LanguageClient = await ClientServerConfig(  # type: ignore[assignment]
        server_command=SERVER, server_env=NO_MODEL_ENV).start()
    try:
        await client.initialize_session(lsp.InitializeParams(
            capabilities=client_capabilities("visual_studio_code"),
            initialization_options={"database": url, "participant": "carol",
                                    "documentProvider": "textDocumentContent"}))
        uri = f"loom://path/{tree}/{tip}"
        await client.protocol.send_request_async("loom/read", {"uri": uri})
        answer = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="loom.askCollaborator", arguments=[{"uri": uri, "message": "note it"}]))
        await client.shutdown_session()
    finally:
        if not client.stopped:
            await client.stop()
    assert answer["ok"] is False, answer
    assert answer["message"] == from_cli  # one rule, one message, both front ends
    assert _rows(url, watched) == before
