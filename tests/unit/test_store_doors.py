"""The reads and writes shells and memory use instead of their own queries: Workspace's
participant, node, position and provenance reads, and the memory, turn and buffer
repositories under store/."""

from __future__ import annotations

from loom.app import App
from loom.store import memory_repo, turns
from loom.store.schema import BufferState, Generation


def test_participant_reads_and_update(app: App) -> None:
    ws = app.ws
    human, model = ws.human(), ws.subject()
    bot = ws.ensure_participant("bot", "model", "collaborator", ["loom_aware"])
    assert ws.find_participant("bot") == bot and ws.find_participant("nobody") is None
    assert ws.participant_by_id(human.id) == human and ws.participant_by_id("x") is None
    assert [p.name for p in ws.participants()] == ["human", "model", "bot"]
    assert ws.participants(kind="model", role="collaborator") == [bot]
    assert ws.participant_names() == {human.id: "human", model.id: "model", bot.id: "bot"}
    seq = ws.last_change()
    ws.update_participant(bot, profile="haiku", loom_aware=True)
    assert (bot.profile, bot.loom_aware) == ("haiku", True)
    again = ws.find_participant("bot")
    assert again is not None and (again.profile, again.loom_aware) == ("haiku", True)
    assert [c.kind for c in ws.changes_since(seq)] == ["participant.update"]


def test_node_position_and_connection_reads(app: App, clock) -> None:  # type: ignore[no-untyped-def]
    ws, human = app.ws, app.ws.human()
    tree = ws.create_tree("t", "dialogue", root_content="root")
    root = ws.node(tree.root)
    a = ws.add_node(tree, root, "a", human)
    b = ws.add_node(tree, a, "b", human)
    ws.add_node(tree, a, "note", human, kind="annotation")
    ws.add_link(tree, a, human, target_kind="node", target_node=b)
    assert ws.find_node(a.id) == a and ws.find_node("missing") is None
    kids, links = ws.connection_counts([root.id, a.id, b.id])
    assert kids == {(root.id, "continuation"): 1, (a.id, "continuation"): 1,
                    (a.id, "annotation"): 1}
    assert links == {a.id: 1, b.id: 1}
    assert ws.connection_counts([]) == ({}, {})

    bot = ws.ensure_participant("bot", "model", "collaborator", ["loom_aware"])
    assert not ws.has_position(bot, tree) and ws.latest_position(tree) is None
    ws.set_position(human, tree, a, b)
    clock.advance(5)
    ws.set_position(bot, tree, b)  # a model's move is not the human's
    assert ws.has_position(bot, tree)
    node, tip = ws.latest_position(tree, kind="human") or (None, None)
    assert (node.id, tip.id) == (a.id, b.id)  # type: ignore[union-attr]


def test_generations_and_summary_queue(app: App) -> None:
    ws, human = app.ws, app.ws.human()
    tree = ws.create_tree("t", "buffer", root_content="Once.")
    a = ws.add_node(tree, ws.node(tree.root), " upon", ws.subject())
    Generation.create(id="g1", node=a.id, provider="fake", model="m", usage={"prompt_tokens": 3},
                      created=ws.clock())
    assert [g.id for g in ws.generations([a.id, "other"])] == ["g1"]
    assert ws.generations([]) == []
    queued = ws.queued_summaries()
    assert queued >= 1  # the new node's summary
    ws.add_node(tree, a, " a time", human)
    assert ws.queued_summaries() == queued + 1


def test_memory_repo_pins_stashes_and_trace(app: App) -> None:
    ws, who = app.ws, app.ws.human()
    tree = ws.create_tree("t", "dialogue", root_content="root")
    node = ws.add_node(tree, ws.node(tree.root), "a", who)
    doc = ws.create_document("notes", "# Notes")
    assert memory_repo.add_pin(ws, who, tree, "node", node.id)
    assert not memory_repo.add_pin(ws, who, tree, "node", node.id)  # already pinned
    assert memory_repo.add_pin(ws, who, tree, "doc", doc.id, "intro")
    assert memory_repo.add_pin(ws, who, tree, "node", "deleted-node")
    assert [(p.kind, e.id) for p, e in memory_repo.pinned(ws, who, tree)] == [
        ("node", node.id), ("doc", doc.id)]  # a pin of something gone is left out
    assert memory_repo.remove_pins(ws, who, tree, "doc", doc.id, "other") == 0
    # the document's own pin is not its section's (it dropped §intro too)
    assert memory_repo.remove_pins(ws, who, tree, "doc", doc.id) == 0
    assert memory_repo.remove_pins(ws, who, tree, "doc", doc.id, "intro") == 1

    assert not memory_repo.put_stash(ws, who, tree, "Plan", "first", 1, "literal")
    assert memory_repo.put_stash(ws, who, tree, "Plan", "second", 1, "literal")  # replaced
    item = memory_repo.find_stash(ws, who, tree, "plan")  # case-insensitively
    assert item is not None and item.content == "second"
    memory_repo.mark_recalled(ws, who, item)
    assert [s.recalled for s in memory_repo.stashes(ws, who, tree)] == [True]
    elsewhere = ws.create_tree("elsewhere", "dialogue")  # pins and stashes are per tree
    assert memory_repo.pinned(ws, who, elsewhere) == []
    assert memory_repo.stashes(ws, who, elsewhere) == []
    assert memory_repo.find_stash(ws, who, elsewhere, "Plan") is None
    memory_repo.remove_stash(ws, who, item)
    assert memory_repo.find_stash(ws, who, tree, "Plan") is None

    other = ws.create_tree("u", "dialogue")
    memory_repo.record(ws, who, tree, "→ view a", True)
    memory_repo.record(ws, who, other, "→ view b", False, "NOT_FOUND", "no")
    memory_repo.record(ws, who, None, "→ help", True)
    memory_repo.add_thought(ws, who, tree, "hmm")
    assert [e.command for e in memory_repo.trace(ws, who, tree_id=tree.id)] == [
        "→ view a", "→ help", memory_repo.THINK]
    assert [e.code for e in memory_repo.trace(ws, who, errors_only=True)] == ["NOT_FOUND"]
    assert memory_repo.thoughts(ws, who) == ["hmm"]


def test_turn_records_and_recent_buffers(app: App, clock) -> None:  # type: ignore[no-untyped-def]
    ws, human = app.ws, app.ws.human()
    bot = ws.ensure_participant("bot", "model", "collaborator", ["loom_aware"])
    for i, tree in enumerate(("T1", "T1", "T2")):
        turns.add_turn(ws, {"id": f"turn{i}", "agent": "bot", "tree": tree,
                            "trigger": "ask", "started": 10.0 + i, "stop_reason": "done",
                            "message": f"m{i}"})
    assert [r["id"] for r in turns.turn_records(ws, "bot")] == ["turn0", "turn1", "turn2"]
    assert [r["id"] for r in turns.turn_records(ws, "bot", "T1", limit=1)] == ["turn1"]
    assert turns.turn_records(ws, "nobody") == []
    assert [c.actor for c in ws.changes_since(0) if c.kind == "agent.turn"] == [bot.id] * 3

    BufferState.create(uri="loom://a", participant=human.id, tree="T1", tip="n",
                       working="typing", updated=clock())
    BufferState.create(uri="loom://b", participant=bot.id, tree="T1", tip="n",
                       updated=clock())
    BufferState.create(uri="loom://c", participant=human.id, tree="T1", tip="n",
                       updated=clock() - 60)
    assert [b.uri for b in ws.recent_buffers("T1", clock() - 10, exclude=bot.id)] == [
        "loom://a"]
    assert {b.uri for b in ws.recent_buffers("T1", clock() - 10)} == {"loom://a", "loom://b"}
