"""Everything Loom itself does as a writer on a team's database goes through the guards
that refuse the same statements typed by hand (``test_pg_roles.py``): commits of typed
text, continuations, splits and cuts moved, edits, annotations, marks, links, memory, moves,
a tree of one's own, an import of another's tree, each with the change-log rows Loom
writes for it, as a writer and as a collaborator with a role of its own. And a team set up
by an older Loom gets the guards when the owner's Loom starts, with no SQL to run."""

# ruff: noqa: F811 - the team fixture comes from tests/unit/pg_team.py (see the import)
from __future__ import annotations

from pathlib import Path
from typing import Any

from loom.app import open_app
from loom.commands import syntax
from loom.commands.context import Actor
from loom.store import roles
from tests.unit.pg_team import (
    attempt,
    cli,
    node_insert,
    one,
    rows,
    team,  # noqa: F401 - the fixture
)
from tests.unit.test_split import Subject

PIECES = [" The", " boat", " came", " back", " at", " dawn", "."]


def _as(team: dict[str, str], role: str) -> Any:
    """A Loom of ``role``'s own (its database role, its participant), in the tree."""
    app = open_app(team[role], use_default_subject=False)
    app.executor.subject = Subject([PIECES, [" A", " gull", " cried", "."]])
    return app


def _run(app: Any, line: str | syntax.Command, tree: str | None = None) -> Any:
    tree_row = app.ws.tree(tree or app.ws.find_tree("Shared").id)
    result = app.executor.execute(line, Actor(app.me(), tree_row))
    assert result.ok, (line, result.text)
    return result


def _logged(team: dict[str, str], seq: int) -> list[tuple[str, str]]:
    """(kind, actor's name) of the change rows after ``seq``."""
    return rows(team["owner"], "SELECT c.kind, coalesce(p.name, '') FROM change c LEFT JOIN "
                "participant p ON p.id = c.actor WHERE c.seq > %s ORDER BY c.seq", seq)


def test_a_writers_loom_writes_everything_through_the_guards(team: dict[str, str],
                                                             tmp_path: Path,
                                                             capsys: Any) -> None:
    app = _as(team, "alice")
    ws = app.ws
    start = one(team["owner"], "SELECT max(seq) FROM change")
    lamp = ws.node(team["lamp"])
    # typed text committed (a node of hers, then a version of the owner's node)
    done = _run(app, syntax.Commit(versions=(), text=" She waited.", after=lamp.id))
    waited = ws.node(done.data["created"][-1])
    _run(app, syntax.Commit(versions=(syntax.VersionEdit(
        node=lamp.id, content=" A single lamp burned on the quay."),), text=None,
        after=waited.id))
    # a continuation (the model's nodes, their tokens and generation), then a split of one
    # at a token with an alternative the model weighed, and its cut moved (a suggestion
    # taken a word at a time)
    made = _run(app, f"→ continue {waited.local_id} n:2").data["created"]
    boat = next(ws.node(n) for n in made if ws.node(n).content.startswith(" The boat"))
    split = _run(app, f"→ split {boat.local_id} at:{len(' The boat')}")
    head, tail = ws.node(split.data["head"]), ws.node(split.data["tail"])
    _run(app, syntax.Split(node=tail.id, at=len(" came"), grow=True))
    assert ws.node(head.id).content == " The boat came"
    assert ws.node(tail.id).content == " back at dawn."
    # edits, notes, marks, links, memory, moves, a rename
    for line in (f'→ edit {waited.local_id} "She waited for the boat."',
                 f'→ annotate {waited.local_id} "hers"',
                 f'→ bookmark {lamp.local_id} "the lamp"', f'→ tag {lamp.local_id} "light"',
                 f"→ rate {lamp.local_id} good", f"→ prune {tail.local_id}",
                 f"→ unprune {tail.local_id}", f"→ delete {tail.local_id}",
                 f"→ undelete {tail.local_id}", f"→ link {waited.local_id} to {lamp.local_id}",
                 f"→ pin {lamp.local_id}", '→ stash "mine" "a note"', '→ think "the light"',
                 f"→ goto {lamp.local_id}", '→ rename "Shared (ours)"',
                 '→ rename "Shared"'):
        _run(app, line, team["tree"])
    logged = _logged(team, start)
    kinds = {kind for kind, _who in logged}
    assert {"node.continuation", "node.version", "node.split", "node.annotation",
            "node.marks", "node.flags", "node.delete", "node.restore", "link.create",
            "memory.pin", "memory.stash", "position", "tree.update"} <= kinds, kinds
    assert {who for _k, who in logged} <= {"alice", "model", ""}, logged
    assert ("node.continuation", "model") in logged  # the model's nodes, in its name
    # the owner's text is as it was: a version beside it, nothing rewritten
    assert ws.node(lamp.id).content == " A single lamp burned on the pier."
    # a tree of her own, and the owner's tree imported (its nodes keep their authors)
    owner = ("--db", team["owner"], "--participant", "human")
    out = tmp_path / "shared.json"
    assert cli(capsys, *owner, "export", "Shared", "-o", str(out))[0] == 0
    code, said = cli(capsys, "--db", team["alice"], "import", str(out))
    assert code == 0, said
    assert cli(capsys, "--db", team["alice"], "new", "Alice's", "--text", "Hers.")[0] == 0
    imported = rows(team["owner"], "SELECT DISTINCT p.name FROM node n JOIN participant p ON "
                    "p.id = n.author_id JOIN tree t ON t.id = n.tree_id WHERE t.title <> "
                    "'Shared' AND t.title <> 'Alice''s'")
    assert ("human",) in imported, imported
    assert {"tree.create", "node.bulk"} <= {k for k, _w in _logged(team, start)}


def test_a_writer_splits_an_imported_node_whose_role_is_not_its_authors_kind(
        team: dict[str, str]) -> None:
    """An Open Loom file may say a node is a model's while naming a human agent: its node
    keeps the file's role (``author_type``), its author is the human. A writer's split of
    it carries both over, and the check of the halves accepts that."""
    import psycopg

    with psycopg.connect(team["owner"]) as conn:
        conn.execute("UPDATE node SET author_type = 'model' WHERE id = %s", (team["lamp"],))
    app = _as(team, "alice")
    done = _run(app, f"→ split {app.ws.node(team['lamp']).local_id} at:9")
    assert app.ws.node(done.data["head"]).content == " A single"


def test_a_collaborator_with_a_role_of_its_own_writes_as_itself(team: dict[str, str]) -> None:
    """bot: a model participant connecting as its own database role (a collaborator run on
    a server): its Loom writes in its own name, continues and splits."""
    app = _as(team, "bot")
    assert app.me().kind == "model"
    start = one(team["owner"], "SELECT max(seq) FROM change")
    done = _run(app, f'→ respond {app.ws.node(team["lamp"]).local_id} " The sea was calm."')
    calm = app.ws.node(done.data["created"][-1])
    _run(app, f'→ annotate {calm.local_id} "from the bot"')
    made = _run(app, f"→ continue {calm.local_id}").data["created"]
    _run(app, f"→ split {app.ws.node(made[0]).local_id} at:2")
    assert {who for _k, who in _logged(team, start)} <= {"bot", "model", ""}
    authors = {one(team["owner"], "SELECT p.name FROM node n JOIN participant p ON p.id = "
                   "n.author_id WHERE n.id = %s", n) for n in (calm.id, *made)}
    assert authors == {"bot", "model"}


def test_a_guards_refusal_says_why(team: dict[str, str], capsys: Any) -> None:
    """A write a guard refuses (here a node stamped by a machine whose clock is two hours
    off) is Loom's PERMISSION_DENIED with the guard's reason, and nothing is written."""
    import time

    app = open_app(team["alice"], use_default_subject=False)
    app.ws._participants.clock = app.ws.clock = lambda: time.time() + 7200  # type: ignore[method-assign]
    nodes = one(team["owner"], "SELECT count(*) FROM node")
    who, tree = app.me(), app.ws.find_tree("Shared")
    result = app.executor.execute(f'→ respond {app.ws.node(team["lamp"]).local_id} "Late."',
                                  Actor(who, tree))
    assert not result.ok
    assert result.text.startswith(
        "✗ PERMISSION_DENIED: the database refused this write for your database role: a "
        "node is written now: its time is 7200 s off the database's clock (check this "
        "machine's clock)"), result.text
    assert "hint: nothing was written" in result.text
    assert one(team["owner"], "SELECT count(*) FROM node") == nodes


def test_an_older_teams_database_gets_the_guards_when_the_owner_starts(
        team: dict[str, str], capsys: Any) -> None:
    """A team whose roles an older Loom set up (the grants without the provenance guards,
    the marker at 1): a writer's forged node goes through until the owner's Loom starts —
    any command — and then it is refused. A writer's Loom cannot do it for them."""
    import psycopg

    with psycopg.connect(team["owner"]) as conn:  # the grants of version 1
        for trigger in ("loom_node_made ON node", "loom_change_made ON change"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP POLICY loom_writes ON change")
        conn.execute("CREATE POLICY loom_writes ON change FOR INSERT TO loom_writer "
                     "WITH CHECK (true)")
        conn.execute(f"UPDATE meta SET value = '1' WHERE key = '{roles.MARKER}'")
    forged = [node_insert("NF", "Forged.", f"'{team['human']}'").format(
        tree=team["tree"], root=team["root"], now="extract(epoch FROM now())")]
    logged = [f"INSERT INTO change (tree, kind, entity, actor, created) VALUES "
              f"('{team['tree']}', 'node.create', 'x', '{team['human']}', 0)"]
    assert attempt(team["alice"], forged)[0] == "committed"
    assert attempt(team["alice"], logged)[0] == "committed"
    with psycopg.connect(team["owner"]) as conn:
        conn.execute("DELETE FROM node WHERE id = 'NF'")
        conn.execute("DELETE FROM change WHERE kind = 'node.create'")
    assert cli(capsys, "--db", team["alice"], "trees")[0] == 0  # a writer's Loom: no change
    assert roles.outdated(open_app(team["alice"], use_default_subject=False).ws.db)
    assert cli(capsys, "--db", team["owner"], "--participant", "human", "trees")[0] == 0
    assert one(team["owner"], f"SELECT value FROM meta WHERE key = '{roles.MARKER}'") == \
        str(roles.VERSION)
    assert attempt(team["alice"], forged)[0] == "refused"
    assert attempt(team["alice"], logged)[0] == "refused"


def test_a_writers_summary_worker_works_through_everyones_jobs(team: dict[str, str]) -> None:
    """The summary queue as a writer's worker works it on a team's database: it leases
    the jobs others' writes queued, counts a failed attempt and puts the job off, writes
    the summaries and drops the jobs it did (``role_shared``: the queue as it needs)."""
    from loom.llm.base import ModelError
    from loom.llm.summaries import SummaryWorker
    from tests.unit.test_summaries import PROFILE, Scripted

    queued = rows(team["owner"], "SELECT id, entity FROM summary_job ORDER BY priority, "
                  "created, id")
    assert len(queued) >= 3, queued  # the owner's continuations and split halves
    app = _as(team, "alice")
    scripted = Scripted([ModelError("server", "the model answered 503"),
                         *(f"Summary {i}." for i in range(len(queued)))])
    worker = SummaryWorker(app.ws, PROFILE, scripted)
    done = worker.run_once(limit=len(queued) + 1)
    assert done == len(queued) - 1, scripted.prompts
    (job_id, entity, attempts, later), = rows(
        team["owner"], "SELECT id, entity, attempts, not_before > extract(epoch FROM now()) "
        "FROM summary_job")
    assert (job_id, entity, attempts, later) == (queued[0][0], queued[0][1], 1, True)
    summarized = rows(team["owner"], "SELECT count(*) FROM node WHERE summary_source = "
                      "'model' AND starts_with(summary, 'Summary ')")[0][0]
    assert summarized == len(queued) - 1


def test_a_dead_editors_turn_lock_is_freed_and_one_the_database_sees_alive_is_left(
        team: dict[str, str]) -> None:
    """A crashed holder's turn lock: once its editor has gone silent any writer's Loom
    frees it (``lock.release`` logged, naming the holder); a lock whose process this
    machine says has died, but whose holder the database cannot see gone (no editor
    session), waits for its expiry — Loom neither fails nor logs a release it did not make.
    A lock that expired is taken like a free one."""
    import json
    import socket
    import subprocess
    import sys
    import time

    import psycopg

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid of this machine that no longer runs
    with psycopg.connect(team["owner"]) as conn:
        conn.execute("INSERT INTO branch_lock (node, participant, expires, host, pid) VALUES "
                     "(%s, %s, %s, 'h', 1), (%s, %s, %s, %s, %s), (%s, %s, 0, 'elsewhere', 9)",
                     (team["lamp"], team["human"], time.time() + 3600,
                      team["tide"], team["human"], time.time() + 3600, socket.gethostname(),
                      gone.pid, team["head"], team["human"]))
    start = one(team["owner"], "SELECT max(seq) FROM change")
    app = _as(team, "alice")  # (the owner's editor session "s" on h/1 beat last at 0)
    assert app.ws.reap_dead_locks() == 1
    assert rows(team["owner"], "SELECT node FROM branch_lock ORDER BY node") == sorted(
        [(team["tide"],), (team["head"],)])
    released = rows(team["owner"], "SELECT entity, actor, payload FROM change WHERE seq > %s "
                    "AND kind = 'lock.release'", start)
    assert [(e, a) for e, a, _p in released] == [(team["lamp"], None)]
    assert json.loads(released[0][2]) == {"holder_died": True, "holder": team["human"]}
    head = app.ws.node(team["head"])
    app.ws.acquire_turn(head, app.me())  # the expired one
    app.ws.release_turn(head, app.me())


def test_an_alternative_the_model_weighed_is_a_models_whoever_wrote_its_node(
        team: dict[str, str], capsys: Any) -> None:
    """A split at a token the model weighed, with one of its alternatives, writes the
    model's text. Splitting a colleague's node, a writer's Loom writes it as a model her
    process may write as: never as the person who edited the model's text (the database
    refuses a node in another person's name, and she never wrote it), nor as a
    collaborator with a database role of its own — the workspace's model then, its
    generation saying what it is an alternative of."""
    from loom.store import node_tokens as token_store

    app = _as(team, "alice")
    ws = app.ws
    made = _run(app, f"→ continue {ws.node(team['lamp']).local_id} n:2").data["created"]
    boat, gull = (next(ws.node(n) for n in made if ws.node(n).content.startswith(start))
                  for start in (" The boat", " A gull"))
    owner = ("--db", team["owner"], "--participant", "human")
    code, out = cli(capsys, *owner, "do", "Shared",
                    f'→ edit {boat.local_id} " The old boat came back at dawn."')
    assert code == 0, out
    app = _as(team, "alice")  # (the owner's in-process CLI bound the models to its own)
    ws = app.ws
    version = ws.node(one(team["owner"], "SELECT id FROM node WHERE content = %s",
                          " The old boat came back at dawn."))
    assert ws.participant_name(version.author_id) == "human"

    def alternative(node_ref: str, at: int) -> Any:
        done = _run(app, f'→ split {node_ref} at:{at} alt:" stood"', team["tree"])
        return ws.node(done.data["alternative"])

    alt = alternative(version.label, len(" The old"))
    assert (ws.participant_name(alt.author_id), alt.author_type) == ("model", "model")
    assert [t.text for t in token_store.tokens(ws, alt)] == [" stood"]
    assert one(team["owner"], "SELECT params::jsonb->>'alternative_of' FROM generation "
               "WHERE node = %s", alt.id) == version.id
    import psycopg

    with psycopg.connect(team["owner"]) as conn:  # bot's node, as if its own model wrote it
        conn.execute("UPDATE node SET author_id = %s WHERE id = %s", (team["bot_id"], gull.id))
    alt = alternative(ws.node(gull.id).local_id, len(" A"))
    assert (ws.participant_name(alt.author_id), alt.author_type) == ("model", "model")


def test_a_team_on_the_previous_guards_gets_these_when_the_owner_starts(
        team: dict[str, str], capsys: Any) -> None:
    """A team whose roles the previous grants set up (marker 2: no guards on turn locks,
    token data or deletion times): a writer frees the owner's live turn lock and dates a
    deletion back until the owner's Loom starts; then both are refused."""
    import psycopg

    with psycopg.connect(team["owner"]) as conn:
        for policy in ("loom_read", "loom_take", "loom_renew", "loom_free"):
            conn.execute(f"DROP POLICY {policy} ON branch_lock")
        conn.execute("ALTER TABLE branch_lock DISABLE ROW LEVEL SECURITY")
        for trigger in ("loom_node_deleted ON node", "loom_tokens_written ON node_tokens"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute(f"UPDATE meta SET value = '2' WHERE key = '{roles.MARKER}'")

    def lock() -> None:
        with psycopg.connect(team["owner"]) as conn:
            conn.execute("INSERT INTO branch_lock (node, participant, expires, host, pid) "
                         "VALUES (%s, %s, extract(epoch FROM now()) + 3600, 'elsewhere', 1) "
                         "ON CONFLICT (node) DO NOTHING", (team["lamp"], team["human"]))

    steal = [f"DELETE FROM branch_lock WHERE node = '{team['lamp']}'"]
    back = [f"UPDATE node SET pruned = true, extra = jsonb_build_object('deleted', "
            f"jsonb_build_object('at', 0, 'by', '{team['alice_id']}'))::text "
            f"WHERE id = '{team['lamp']}'"]
    lock()
    assert attempt(team["alice"], steal)[0] == "committed"
    assert one(team["owner"], "SELECT count(*) FROM branch_lock") == 0
    assert attempt(team["alice"], back)[0] == "committed"
    with psycopg.connect(team["owner"]) as conn:
        conn.execute("UPDATE node SET pruned = false, extra = NULL WHERE id = %s",
                     (team["lamp"],))
    lock()
    assert cli(capsys, "--db", team["owner"], "--participant", "human", "trees")[0] == 0
    assert one(team["owner"], f"SELECT value FROM meta WHERE key = '{roles.MARKER}'") == \
        str(roles.VERSION)
    assert attempt(team["alice"], steal)[0] == "committed"  # (row-level security: no rows)
    assert one(team["owner"], "SELECT count(*) FROM branch_lock") == 1
    assert attempt(team["alice"], back)[0] == "refused"
