"""``→ explore`` end to end: a scripted subject model (OpenAI completions wire) and a
scripted judge (chat wire) on the local fake server, through the real ``openai`` SDK; every
step through the real executor and store (SQLite and PostgreSQL). Also across processes: a
stop asked from another one, one exploration a tree, a crashed one blocking nothing."""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import pytest

from loom.agent.explore.search import ExploreEvent, LockWait
from loom.agent.explore.service import Explorations
from loom.commands import syntax
from loom.commands.context import Actor
from loom.commands.executor import Executor
from loom.llm import keys as llm_keys
from loom.llm.config import ModelProfile
from loom.llm.subject import ProviderSubject
from loom.lsp.documents import OpenDocuments
from loom.lsp.features import cards
from loom.lsp.views import tree_overview
from loom.memory import operational as mem
from loom.model import marks
from loom.redact import forget_secrets
from loom.store import explore_log, reader
from loom.store.schema import Change, Node
from tests.e2e.fake_provider import (
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    chat_profile,
    openai_chat_stream,
    openai_completion_stream,
)

KEY_ENV = "LOOM_API_KEY"
KEY = "loom-explore-test-key-8c2f"
RUBRIC = "vivid and strange"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    llm_keys.clear_cache()
    yield
    forget_secrets()


@pytest.fixture
def world(app, fake):  # type: ignore[no-untyped-def]
    """A buffer tree with the human at its root; the fake as subject and judge."""
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree("Lighthouse", "buffer", root_content="The keeper climbed.",
                          author=human)
    root = ws.node(tree.root)
    ws.set_position(human, tree, root, root)
    app.executor.subject = ProviderSubject(ModelProfile(
        name="fake-base", provider="openai-compatible", base_url=fake.openai_base_url,
        model="fake-base", backoff_base_s=0.01, supports_n=True))
    events: list[ExploreEvent] = []
    explorations = Explorations(ws, app.executor, profile=chat_profile(fake, "fake-judge"),
                                locks=LockWait(wait_s=20, backoff_s=0.05, backoff_max_s=0.2))
    explorations.add_listener(lambda _tree, ev: events.append(ev))
    app.executor.explorer = explorations
    app._explorations = explorations
    yield {"app": app, "ws": ws, "tree": tree, "root": root, "human": human,
           "ex": explorations, "events": events}
    explorations.stop_all(10)


def run(world: dict, line: str, who: Any = None) -> Any:
    return world["app"].executor.execute(line, Actor(who or world["human"], world["tree"]))


def finish(world: dict, timeout: float = 20) -> Any:
    done = world["ex"].wait(world["tree"], timeout)
    assert done is not None and world["ex"].running(world["tree"]) is None, "still running"
    return done


def texts(*words: str) -> list[str]:
    return [f" {w}" for w in words]


def by_text(world: dict, text: str) -> Node:
    return Node.get((Node.tree == world["tree"].id) & (Node.content == text))


def test_expands_scores_prunes_and_goes_deeper_from_the_best(world, fake) -> None:  # type: ignore[no-untyped-def]
    fake.script(OPENAI_COMPLETIONS,
                openai_completion_stream(texts("The lamp was out.", "Wind at the glass.")),
                openai_completion_stream(texts("A gull cried.", "Salt on the rail.")))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — a strong image"),
                openai_chat_stream("Score: 3 - flat"),
                openai_chat_stream("6/10 — it keeps the mood"),
                openai_chat_stream("I would rather not say."),
                openai_chat_stream("Still, no."))  # asked again: no score either
    root = world["root"]
    started = run(world, f'→ explore from {root.local_id} depth:2 n:2 judge:"{RUBRIC}"')
    assert started.ok, started.text
    assert started.text.startswith(f"✓ exploring from [{root.label}] depth:2 n:2 budget:20,000 "
                                   "tokens, as collaborator")
    assert "→ explore end ends it" in started.text
    done = finish(world)
    lamp, wind = by_text(world, " The lamp was out."), by_text(world, " Wind at the glass.")
    gull, salt = by_text(world, " A gull cried."), by_text(world, " Salt on the rail.")
    assert (done.made, done.scored, done.pruned) == (4, 3, 1)
    assert done.ended == "depth 2 reached"
    # the scores and reasons, parsed from the judge's replies, are on the nodes
    assert marks.judgement_of(lamp.extra) == {"score": 8, "reason": "a strong image",
                                              "rubric": RUBRIC}
    assert marks.judgement_of(wind.extra)["score"] == 3
    assert marks.judge_line(gull.extra) == "6/10 — it keeps the mood"
    assert marks.judgement_of(salt.extra) is None  # not a score: a clear ✗, no crash
    gave_up = (f'the judge gave no score for [{salt.label}], asked twice: "I would rather '
               'not say. … then Still, no." (left unscored and unpruned)')
    assert gave_up in done.failures, done.failures
    # … said in the exploration's report, where its end is shown (not only in a log)
    report = next(e.text for e in world["events"] if e.kind == "done")
    assert report.endswith(f"(depth 2 reached) · the judge gave no score for 1 branch "
                           f"([{salt.label}])"), report
    # below the threshold: pruned (soft); the best was continued, the pruned one not
    assert wind.pruned and not lamp.pruned and not salt.pruned
    assert gull.parent == lamp.id and salt.parent == lamp.id
    prompts = [r.json["prompt"] for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert prompts == ["The keeper climbed.", "The keeper climbed. The lamp was out."]
    judged = fake.requests_to(OPENAI_CHAT)
    assert len(judged) == 5  # the reply without a score was asked once more, with the rule
    again = judged[4].json["messages"]
    assert again[-2] == {"role": "assistant", "content": "I would rather not say."}
    assert again[-1]["content"].startswith("That reply held no score.")
    asked = judged[0].json["messages"][-1]["content"]
    assert asked.startswith(f"Rubric: {RUBRIC}\n") and "<<<\n The lamp was out.\n>>>" in asked
    # every step is a command in the collaborator's trace
    collaborator = world["ws"].participant("collaborator")
    trace = [e.command for e in mem.trace(world["ws"], collaborator, limit=50)]
    assert f"→ continue from {root.local_id} n:2" in trace
    assert f"→ continue from {lamp.local_id} n:2" in trace
    assert f"→ judge {lamp.local_id} 8/10" in trace
    assert f"→ prune {wind.local_id}" in trace
    # the overview shows the scores; the pruned branch is left out, and undoable
    _root, rows, _children = reader.outline(world["ws"], world["tree"])
    assert wind.id not in rows and marks.judgement_of(rows[lamp.id].extra)["score"] == 8
    drawn = tree_overview(world["ws"], world["tree"], root).text
    assert f"[{lamp.label}] 8/10 (a strong image) › The lamp was out." in drawn
    assert f"[{gull.label}] 6/10 (it keeps the mood) › A gull cried." in drawn
    docs = OpenDocuments(world["ws"], world["human"], "utf-16", "test-session")
    hover = cards.node_card(docs, Node.get_by_id(lamp.id))
    assert "\n\nJudge: 8/10 — a strong image" in hover
    assert "Judge:" not in cards.node_card(docs, Node.get_by_id(salt.id))
    assert run(world, f"→ unprune {wind.local_id}").ok
    assert not Node.get_by_id(wind.id).pruned
    kinds = [e.kind for e in world["events"]]
    assert kinds[0] == "started" and kinds[-1] == "done"
    assert kinds.count("scored") == 3 and kinds.count("pruned") == 1
    assert kinds.count("failed") == 1


def test_respects_the_token_budget(world, fake) -> None:  # type: ignore[no-untyped-def]
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    started = run(world, "→ explore depth:6 n:2 budget:100")
    assert started.ok, started.text
    done = finish(world)
    assert done.ended == "budget spent"
    assert 100 <= done.spent < 100 + 60  # one step at most past it (it started under)
    # it stopped well before six levels (6 levels of 2 × 2 would be 22 continuations)
    assert 0 < done.made < 12
    assert len(fake.requests_to(OPENAI_CHAT)) == done.scored


def test_refused_without_loom_generate(world, fake) -> None:  # type: ignore[no-untyped-def]
    ws = world["ws"]
    guest = ws.human("guest")
    ws.set_permissions(guest, ["loom_aware", "loom_write"])
    refused = run(world, "→ explore depth:1", who=ws.participant("guest"))
    assert refused.text == ("✗ PERMISSION_DENIED: loom_generate not enabled\n"
                            "  hint: request elevated permissions or ask the human to explore")
    assert world["ex"].running(world["tree"]) is None
    # the collaborator itself without it: refused before anything starts
    ws.ensure_participant("collaborator", "model", "collaborator",
                          ["loom_aware", "loom_write"], loom_aware=True)
    again = run(world, "→ explore depth:1")
    assert again.code == "PERMISSION_DENIED" and "collaborator does not hold loom_generate" \
        in again.text
    assert not fake.requests_to(OPENAI_COMPLETIONS) and not fake.requests_to(OPENAI_CHAT)
    # bounds, as the catalogue declares them
    assert run(world, "→ explore depth:9").text.startswith(
        "✗ LIMIT_EXCEEDED: depth must be between 1 and 6")
    assert run(world, "→ explore n:0").code == "LIMIT_EXCEEDED"


def test_waits_for_a_branch_lock_the_human_holds(world, fake) -> None:  # type: ignore[no-untyped-def]
    ws, root, human = world["ws"], world["root"], world["human"]
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    ws.acquire_turn(root, human)  # the human is generating from the root
    assert run(world, "→ explore depth:1 n:1").ok
    deadline = time.monotonic() + 5
    while not any(e.kind == "waiting" for e in world["events"]):
        assert time.monotonic() < deadline, "never said it waits"
        time.sleep(0.02)
    time.sleep(0.4)
    assert not fake.requests_to(OPENAI_COMPLETIONS)  # nothing asked while the human holds it
    ws.release_turn(root, human)
    done = finish(world)
    assert done.made == 1 and done.scored == 1 and not done.failures
    waiting = next(e for e in world["events"] if e.kind == "waiting")
    assert waiting.text == f"human is generating on [{root.label}]: waiting"


def test_stop_cancels_the_continuation_in_flight(world, fake) -> None:  # type: ignore[no-untyped-def]
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        texts("One very slow sentence that takes its time."), event_delay_s=0.3))
    before = Node.select().where(Node.tree == world["tree"].id).count()
    assert run(world, "→ explore depth:3 n:1").ok
    deadline = time.monotonic() + 5
    while not fake.requests_to(OPENAI_COMPLETIONS):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.2)  # streaming
    stopped = run(world, "→ explore end")
    assert stopped.text.startswith(f"✓ stopped exploring from [{world['root'].label}]: "
                                   "0 nodes made, 0 scored, 0 pruned · ")
    assert stopped.data["ended"] == "stopped"
    assert world["ex"].running(world["tree"]) is None
    # nothing half-written, no lock left behind
    assert Node.select().where(Node.tree == world["tree"].id).count() == before
    assert not world["ws"].foreign_locks(world["tree"].id, world["human"])
    assert not fake.requests_to(OPENAI_CHAT)
    assert run(world, "→ explore end").text == \
        '✓ no exploration is running in "Lighthouse"'


def test_one_at_a_time_and_the_human_writes_elsewhere_meanwhile(world, fake) -> None:  # type: ignore[no-untyped-def]
    ws, root, human, tree = world["ws"], world["root"], world["human"], world["tree"]
    mine = ws.add_node(tree, root, " Elsewhere, the human writes.", human)
    ws.set_position(human, tree, mine, mine)
    explored = ws.add_node(tree, root, " The stairs wound up.", human)
    slow = [openai_completion_stream(texts(f"Step {i}."), event_delay_s=0.05)
            for i in range(3)]
    fake.script(OPENAI_COMPLETIONS, *slow)
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    assert run(world, f"→ explore from {explored.local_id} depth:2 n:1").ok
    again = run(world, "→ explore depth:1")
    assert again.code == "CONFLICT" and "is already exploring [" in again.text
    committed: list[Any] = []
    during: list[bool] = []

    def write() -> None:  # the human keeps writing on their own branch meanwhile
        for k in range(4):
            during.append(world["ex"].running(tree) is not None)
            committed.append(run(world, syntax.Commit(text=f" Line {k}.")))
            time.sleep(0.05)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(10)
    done = finish(world)
    assert all(r.ok for r in committed), [r.text for r in committed]
    assert all(during)  # each commit landed while the exploration ran
    assert done.made == 2 and done.scored == 2 and not done.failures
    assert ws.position(human, tree)[0].content == " Line 3."
    below = Node.select().where(Node.parent == explored.id)
    assert [n.content for n in below] == [" Step 0."]


def test_a_model_cannot_start_one(world) -> None:  # type: ignore[no-untyped-def]
    ws = world["ws"]
    model = ws.ensure_participant("helper", "model", "collaborator",
                                  ["loom_aware", "loom_write", "loom_generate"])
    refused = run(world, "→ explore", who=model)
    assert refused.text.startswith("✗ PERMISSION_DENIED: a model cannot start an exploration")


def test_loom_agent_explore_prints_its_progress(world, fake, capsys) -> None:  # type: ignore[no-untyped-def]
    from loom.agent.cli import main_agent

    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(texts("Gulls.", "Fog.")))
    fake.script(OPENAI_CHAT, openai_chat_stream("9/10 — alive"),
                openai_chat_stream("2/10 — nothing happens"))
    args = argparse.Namespace(tree="Lighthouse", name="collaborator", role=None, profile=None,
                              show=False, explore="depth:1 n:2")
    status = main_agent(args, world["app"])
    out, err = capsys.readouterr()
    gulls, fog = by_text(world, " Gulls."), by_text(world, " Fog.")
    assert status == 0, err
    assert f"[{world['root'].label}] → [{gulls.label}] [{fog.label}]" in out
    assert f"[{gulls.label}] 9/10 — alive" in out
    assert f"pruned [{fog.label}]" in out
    assert "✓ exploring from" in err and "1 pruned" in err and "depth 1 reached" in err


# ── across processes: "another process" is a second executor with an explorer of its own
# on the same database, which is all another process shares with this one (the CLI
# subprocess against a language server is tests/lsp/test_exploring.py) ──
def elsewhere(world: dict) -> Executor:
    """An executor as another process has one: its own explorer, nothing running in it."""
    app = world["app"]
    other = Executor(world["ws"], app.executor.subject)
    other.explorer = Explorations(world["ws"], other, profile=world["ex"].profile)
    return other


def slow_start(world: dict, fake: Any) -> None:
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(
        texts("One very slow sentence that takes its time."), event_delay_s=0.3))
    assert run(world, "→ explore depth:3 n:1").ok
    deadline = time.monotonic() + 5
    while not fake.requests_to(OPENAI_COMPLETIONS):
        assert time.monotonic() < deadline, "the exploration never asked the model"
        time.sleep(0.02)


def test_a_stop_from_another_process_stops_it_cleanly(world, fake) -> None:  # type: ignore[no-untyped-def]
    ws, tree, human, root = world["ws"], world["tree"], world["human"], world["root"]
    before = Node.select().where(Node.tree == tree.id).count()
    slow_start(world, fake)
    began = time.monotonic()
    stopped = elsewhere(world).execute("→ explore end", Actor(human, tree))
    took = time.monotonic() - began
    assert stopped.ok, stopped.text
    assert stopped.text.startswith(
        f"✓ asked the exploration from [{root.label}] running in another process to stop: "
        "it stopped, 0 nodes made, 0 scored, 0 pruned · "), stopped.text
    assert stopped.data["elsewhere"] and stopped.data["ended"] == "stopped"
    assert took < 5, took  # seen between steps: the continuation in flight was cancelled
    done = finish(world)
    assert done.ended == "stopped"
    # nothing half-written, no lock left, nothing asked of the judge
    assert Node.select().where(Node.tree == tree.id).count() == before
    assert not ws.foreign_locks(tree.id, human)
    assert not fake.requests_to(OPENAI_CHAT)
    # the log: start, the stop (by the human), the end (saying who stopped it)
    kinds = [c.kind for c in Change.select().where(
        (Change.tree == tree.id) & Change.kind.startswith("explore.")).order_by(Change.seq)]
    assert kinds == ["explore.start", "explore.stop", "explore.end"]
    stop = Change.get((Change.tree == tree.id) & (Change.kind == "explore.stop"))
    assert stop.actor == human.id and stop.entity == root.id
    end = Change.get((Change.tree == tree.id) & (Change.kind == "explore.end"))
    assert end.payload["stopped_by"] == human.id
    assert explore_log.live_runs(ws, tree.id) == []
    assert elsewhere(world).execute("→ explore end", Actor(human, tree)).text == \
        '✓ no exploration is running in "Lighthouse"'


def test_one_exploration_a_tree_across_processes(world, fake) -> None:  # type: ignore[no-untyped-def]
    tree, human, root = world["tree"], world["human"], world["root"]
    slow_start(world, fake)
    refused = elsewhere(world).execute("→ explore depth:1", Actor(human, tree))
    assert refused.text == (f'✗ CONFLICT: collaborator is already exploring [{root.label}] '
                            'in "Lighthouse"\n  hint: → explore end ends it')
    assert len(explore_log.live_runs(world["ws"], tree.id)) == 1  # the refused one logged none
    assert run(world, "→ explore end").ok
    finish(world)
    fake.set_default(OPENAI_COMPLETIONS, lambda _req: openai_completion_stream(texts("Fog.")))
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    other = elsewhere(world)
    assert other.execute("→ explore depth:1 n:1", Actor(human, tree)).ok  # free again
    other.explorer.wait(tree, 20)  # type: ignore[union-attr]
    assert other.explorer.running(tree) is None  # type: ignore[union-attr]


def test_starts_at_the_same_moment_in_two_processes_run_one(world, fake) -> None:  # type: ignore[no-untyped-def]
    """Two processes start an exploration of the tree at once (each on its own connection,
    released together): one runs, the other is refused; on PostgreSQL both could otherwise
    log a start, miss the other's uncommitted one, and run."""
    tree, human = world["tree"], world["human"]
    fake.set_default(OPENAI_COMPLETIONS, lambda _req: openai_completion_stream(
        texts("One very slow sentence that takes its time."), event_delay_s=0.3))
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    for _round in range(4):
        executors = [world["app"].executor, elsewhere(world)]
        gate = threading.Barrier(2)
        answers: list[Any] = [None, None]

        def start(i: int, executors: list[Executor] = executors,
                  gate: threading.Barrier = gate, answers: list[Any] = answers) -> None:
            gate.wait()
            answers[i] = executors[i].execute("→ explore depth:3 n:1", Actor(human, tree))

        threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        oks = [a.ok for a in answers]
        assert sorted(oks) == [False, True], [a.text for a in answers]
        refused = answers[oks.index(False)]
        assert refused.text.startswith("✗ CONFLICT: collaborator is already exploring"), \
            refused.text
        assert len(explore_log.live_runs(world["ws"], tree.id)) == 1
        winner = executors[oks.index(True)]
        assert winner.execute("→ explore end", Actor(human, tree)).ok
        winner.explorer.wait(tree, 20)  # type: ignore[union-attr]
        assert explore_log.live_runs(world["ws"], tree.id) == []


def test_a_crashed_exploration_blocks_nothing(world, fake) -> None:  # type: ignore[no-untyped-def]
    ws, tree, root = world["ws"], world["tree"], world["root"]
    collaborator = ws.ensure_participant("collaborator", "model", "collaborator",
                                         ["loom_aware", "loom_write", "loom_generate"])
    dead = ws.open_session(collaborator)
    explore_log.log_start_alone(ws, tree.id, root.id, collaborator.id, dead,
                                explorer="collaborator")
    assert len(explore_log.live_runs(ws, tree.id)) == 1
    ws.close_session(dead)  # as a restarted editor finds a dead process's session
    assert explore_log.live_runs(ws, tree.id) == []
    explore_log.log_start_alone(ws, tree.id, root.id, collaborator.id, "no-such-session")
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    assert run(world, "→ explore depth:1 n:1").ok
    assert finish(world).made == 1


def test_continues_sampling_reaches_each_continue(world, fake) -> None:  # type: ignore[no-untyped-def]
    fake.set_default(OPENAI_CHAT, lambda _req: openai_chat_stream("7/10 — fine"))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream(texts("Gulls.")),
                openai_completion_stream(texts("Fog.")))
    started = run(world, "→ explore depth:2 n:1 temperature:0.25 tokens:30 seed:7")
    assert started.ok, started.text
    assert finish(world).made == 2
    asked = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert len(asked) == 2
    assert all(a["temperature"] == 0.25 and a["max_tokens"] == 30 and a["seed"] == 7
               for a in asked), asked
    assert run(world, "→ explore temperature:5").text.startswith(
        "✗ LIMIT_EXCEEDED: temperature must be between 0 and 2")
    # a model no profile names: said at the start, not at each continue
    assert run(world, "→ explore model:other").text.startswith(
        '✗ INVALID_SYNTAX: no model named "other"')


def test_stop_is_continues_stop_string_and_end_ends_it(world, fake) -> None:  # type: ignore[no-untyped-def]
    """Issue 44 item 6: `stop` meant both continue's stop string and "end the
    exploration", so → explore could not pass a stop string. Now `stop:"…"` reaches every
    continue; `→ explore end` ends it; the old bare `→ explore stop` still ends it and says
    how it was read."""
    fake.script(OPENAI_COMPLETIONS,
                openai_completion_stream(texts("The lamp was out.")))
    fake.script(OPENAI_CHAT, openai_chat_stream("8/10 — a strong image"))
    started = run(world, '→ explore depth:1 n:1 stop:"."')
    assert started.ok, started.text
    assert "→ explore end ends it" in started.text
    finish(world)
    asked = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert asked["stop"] in (".", ["."]), asked
    trace = [e.command for e in mem.trace(world["ws"], world["ws"].participant(
        "collaborator"), limit=20)]
    assert any(c.startswith("→ continue from") and 'stop:"."' in c for c in trace), trace
    old = run(world, "→ explore stop")
    assert old.ok and old.text == ('✓ no exploration is running in "Lighthouse"\n'
                                   "(read as → explore end)"), old.text


def test_a_judge_that_drifts_into_prose_is_asked_once_more(world, fake) -> None:  # type: ignore[no-untyped-def]
    """Issue 47: a small judge's reply without a score is asked again with the rule, and
    its second reply counts; an enthusiastic 11/10 counts as 10 (before: both no score)."""
    fake.script(OPENAI_COMPLETIONS,
                openai_completion_stream(texts("The lamp was out.", "Wind at the glass.")))
    fake.script(OPENAI_CHAT, openai_chat_stream("What a lovely line, truly."),
                openai_chat_stream("7/10 — quiet and exact"),
                openai_chat_stream("11/10 — the best thing I ever read"))
    assert run(world, "→ explore depth:1 n:2").ok
    done = finish(world)
    lamp, wind = by_text(world, " The lamp was out."), by_text(world, " Wind at the glass.")
    assert (done.scored, done.failures) == (2, ()), done.failures
    assert marks.judgement_of(lamp.extra)["score"] == 7
    assert marks.judgement_of(wind.extra)["score"] == 10
    assert len(fake.requests_to(OPENAI_CHAT)) == 3
    scored = [e.text for e in world["events"] if e.kind == "scored"]
    assert f"[{wind.label}] 10/10 — the best thing I ever read (it wrote 11/10)" in scored
    report = next(e.text for e in world["events"] if e.kind == "done")
    assert "no score" not in report
