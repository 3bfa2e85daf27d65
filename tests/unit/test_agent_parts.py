"""The collaborator's small parts: the participant, reply scanning, result summaries,
triggers' addressing, the turn record, its log and its rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.agent.loop import batch_complete, command_texts, cut_index, summarize_result
from loom.agent.participant import AgentSpec, agents, ensure_agent
from loom.agent.transcript import (
    CommandRecord,
    JsonlTurnLog,
    MemoryTurnLog,
    SaidRecord,
    SqliteTurnLog,
    ThinkRecord,
    TurnRecord,
    render_conversation,
)
from loom.agent.triggers import addressed_to, ask
from loom.commands import syntax
from loom.commands.extract import extract
from loom.errors import LoomError


def test_participant_identity_and_permissions(app) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    agent = ensure_agent(ws)
    assert (agent.name, agent.kind, agent.role, agent.loom_aware) == \
        ("collaborator", "model", "collaborator", True)
    assert agent.permissions == ["loom_aware", "loom_write", "loom_generate", "doc_read",
                                 "doc_write", "cross_tree"]
    ws.set_permissions(agent, ["loom_aware"])  # a human narrowed it: a plain load keeps that
    assert ensure_agent(ws).permissions == ["loom_aware"]
    again = ensure_agent(ws, AgentSpec(role="analysis assistant", profile="haiku"))
    assert again.id == agent.id and again.permissions == ["loom_aware", "doc_read"]
    assert ws.participant("collaborator").profile == "haiku"
    assert [a.name for a in agents(ws)] == ["collaborator"]
    with pytest.raises(LoomError) as err:
        ensure_agent(ws, AgentSpec(name="human"))
    assert err.value.code == "CONFLICT"
    with pytest.raises(LoomError):
        ensure_agent(ws, AgentSpec(name="@bad name"))
    with pytest.raises(LoomError):
        ensure_agent(ws, AgentSpec(role="subject model"))
    with pytest.raises(LoomError):
        ensure_agent(ws, AgentSpec(permissions=("loom_aware", "root")))


def test_cut_after_the_first_batch_keeps_think_and_blank_lines() -> None:
    text = ("Let me look.\n→ view a7x2\n\n→ view b3k9\n→ think\nplan\n←\n\n"
            "The node says something I made up.\n→ view c4m2\n")
    segments = extract(text)
    cut = cut_index(segments)
    assert cut is not None
    kept = segments[:cut]
    assert [s.kind for s in kept] == ["prose", "batch", "prose", "batch", "think"]
    assert segments[cut].text.strip().startswith("The node says")
    assert cut_index(extract("Just talking.\n\nNo commands.")) is None


def test_batch_complete_only_on_whole_lines_and_closed_quotes() -> None:
    assert not batch_complete("→ view a7x2\nThe no")  # an unfinished line is not enough
    assert batch_complete("→ view a7x2\nThe node says\n")
    assert not batch_complete("→ view a7x2\n\n")  # a pause, not prose
    assert not batch_complete('→ respond a7x2 "para one\npara two\n')  # quote still open
    assert batch_complete('→ respond a7x2 "para one\npara two"\nDone, I think\n')
    assert not batch_complete("Thinking aloud\nstill\n")


def test_command_texts_keep_multiline_quotes_together() -> None:
    text = '→ view a7x2\n→ respond a7x2 "para one\npara two"\n→ frobnicate\n'
    seg = extract(text)[0]
    items = command_texts(text, seg)
    assert [raw for raw, _ in items] == [
        "→ view a7x2", '→ respond a7x2 "para one\npara two"', "→ frobnicate"]
    assert isinstance(items[1][1], syntax.Respond) and items[1][1].content == "para one\npara two"
    assert isinstance(items[2][1], syntax.ParseError)


def test_summarize_result_is_extractive_and_says_so() -> None:
    text = "Tree: big (900 nodes)\n" + "\n".join(f"  [n{i:04d}] a line of the tree"
                                               for i in range(900))
    out = summarize_result(text, 200)
    lines = out.split("\n")
    assert lines[0] == "Tree: big (900 nodes)" and lines[-2] == "…"
    assert lines[-1].startswith("[result summarized: ") and "200-token limit" in lines[-1]
    assert len(out) < len(text) / 10


@pytest.mark.parametrize(("text", "message"), [
    ("@collaborator what about b?", "what about b?"),
    ("  @Collaborator, thoughts", "thoughts"),
    ("@critic: look", "look"),
    ("@collaborator", ""),
    ("@collaborators are great", None),
    ("hey @collaborator", None),
    ("@critic-2 no", None),
])
def test_addressed_to(text: str, message: str | None) -> None:
    assert addressed_to(text, ("critic", "collaborator")) == message


def test_ask_inputs() -> None:
    assert ask("what now?").text == "The human asks: what now?"
    assert ask().text.startswith("The human asked for your help here, without a message")


def _turn(**kw: object) -> TurnRecord:
    base: dict[str, object] = dict(agent="collaborator", tree="T1", input="Which is better?",
                                   started=1000.0, iterations=2, position="b3k9", depth=8)
    base.update(kw)
    return TurnRecord(**base)  # type: ignore[arg-type]


def test_render_conversation() -> None:
    turn = _turn(
        said=[SaidRecord(text="Let me look.", iteration=1, seq=1),
              SaidRecord(text="b is stronger.", iteration=2, seq=5)],
        thinks=[ThinkRecord(content="one\ntwo\nthree", iteration=1, seq=2)],
        commands=[CommandRecord(line="→ view b3k9", ok=True, head="[b3k9] model · 3m ago",
                                iteration=1, seq=3),
                  CommandRecord(line="→ view zz99", ok=False, head="✗ NOT_FOUND: node [zz99] "
                                "does not exist in this tree", code="NOT_FOUND", iteration=1,
                                seq=4, attempts=3)],
        pruned=True)
    turn.usage.prompt_tokens, turn.usage.completion_tokens = 1234, 56
    text = render_conversation([turn], "collaborator", "Marie", now=1180.0)
    assert text == (
        'Conversation with collaborator · tree "Marie"\n\n'
        "human · 3m ago\n"
        "  Which is better?\n"
        "collaborator · 3m ago\n"
        "  Let me look.\n"
        "  ▸ think (collapsed, 3 lines)\n"
        "  → view b3k9\n"
        "    [b3k9] model · 3m ago\n"
        "  → view zz99\n"
        "    ✗ NOT_FOUND: node [zz99] does not exist in this tree (after 3 attempts)\n"
        "  b is stronger.\n"
        "  · 2 iterations · 1,234 tokens in / 56 out · context pruned\n"
        "  Collaborator active at [b3k9], depth:8\n")
    assert "no turns yet" in render_conversation([], "collaborator")


def test_turn_logs(tmp_path: Path) -> None:
    log = JsonlTurnLog(tmp_path / "t.jsonl")
    log.append(_turn(message="one"))
    log.append(_turn(message="two", tree="T2"))
    with (tmp_path / "t.jsonl").open("a") as fh:
        fh.write("{not json\n")
    log.append(_turn(message="three"))
    assert [t.message for t in log.turns("collaborator", "T1")] == ["one", "three"]
    assert [t.message for t in log.turns("collaborator", limit=1)] == ["three"]
    assert log.turns("other") == []
    mem = MemoryTurnLog()
    mem.append(_turn(message="m"))
    assert mem.turns("collaborator")[0].message == "m"


def test_sqlite_turn_log_round_trip(app) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    agent = ensure_agent(ws)
    tree = ws.create_tree("turns", "dialogue", root_content="Root.", author=ws.human())
    log = SqliteTurnLog(ws)
    before = ws.last_change()
    first = _turn(message="one", tree=tree.id, started=1.0,
                  commands=[CommandRecord(line="→ tree", ok=True, head="✓ tree")])
    log.append(first)
    log.append(_turn(message="two", tree="elsewhere", started=2.0))
    log.append(_turn(message="three", tree=tree.id, started=3.0, trigger="annotation",
                     input_node="n1", seen_seq=7))
    got = log.turns("collaborator", tree.id)
    assert [t.message for t in got] == ["one", "three"]
    assert got[0] == first
    assert got[1].input_node == "n1" and got[1].seen_seq == 7
    assert [t.message for t in log.turns("collaborator", limit=2)] == ["two", "three"]
    assert log.turns("someone else") == []
    changes = [c for c in ws.changes_since(before) if c.kind == "agent.turn"]
    assert [(c.tree, c.entity, c.actor) for c in changes] == [
        (tree.id, first.id, agent.id), ("elsewhere", changes[1].entity, agent.id),
        (tree.id, got[1].id, agent.id)]
    row = ws.db.execute_sql("SELECT trigger, stop_reason, seen_seq FROM agent_turn "
                            "WHERE id = ?", (got[1].id,)).fetchone()
    assert row == ("annotation", "done", 7)


def test_cli_arguments_module_agrees_with_the_agent() -> None:
    from loom.agent import cli, participant, triggers

    assert cli.DEFAULT_NAME == participant.DEFAULT_NAME
    assert cli.ROLES == participant.AGENT_ROLES
    assert cli.DEFAULT_SETTLE_S == triggers.DEFAULT_SETTLE_S


def test_what_did_not_run_is_said_with_why() -> None:
    """One line for every command that did not run (a reply read whole, as a
    provider that cannot stop a stream gives it)."""
    from loom.agent.loop import cut_index
    from loom.agent.results import not_run
    from loom.commands.extract import extract

    text = ("Let me check → view a7x2 first.\n~~~\n→ continue n:3\n~~~\n→ view b3k9\n\n"
            "Then I would\n→ continue n:2\nand → annotate b3k9 \"x\" too.\n")
    segments = extract(text)
    cut = cut_index(segments)
    assert cut is not None
    assert not_run(segments, cut) == [
        "not run: → view a7x2 first. (mid-line: a command runs only at the start of its "
        "own line)",
        "not run: → continue n:3 (inside a code block, where arrows are examples: write it "
        "on its own line outside one)",
        "not run: → continue n:2 (written after your commands, before their results came "
        "back)",
        'not run: → annotate b3k9 "x" too. (written after your commands, before their '
        "results came back)"]
    assert not_run(extract("Use → view to read a node, or type words."), 1) == [
        "not run: → view to read a node, or type words. (mid-line: a command runs only at "
        "the start of its own line)"]


def test_a_summary_keeps_part_of_a_long_line_and_hints_at_reading_less_of_it() -> None:
    """An 18,328-token branch read as prose came back as its first line (a
    paragraph is one line), with a hint about documents."""
    from loom.commands import syntax as A

    para = " ".join(f"word{i}" for i in range(3000))
    text = f"Branch [b3k9] as prose (3,000 words)\n\n{para}\n\n{para}"
    out = summarize_result(text, 2_000, A.View(branch="b3k9", **{"as": "prose"}))
    lines = out.split("\n")
    assert lines[0] == "Branch [b3k9] as prose (3,000 words)"
    assert lines[2].startswith("word0 word1 ") and lines[2].endswith(" …")
    assert 600 < len(lines[2]) < len(para) / 4
    assert "→ view branch:[a node nearer b3k9] as:prose" in lines[-1]
    assert "read doc" not in lines[-1]
    doc = summarize_result(text, 400, A.Read(doc="notes"))
    assert doc.split("\n")[-1].endswith('→ read doc:"notes" lines:1-40 or section:…]')
