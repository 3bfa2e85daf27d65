"""The preference log (issue 29): what the writer chose, recorded by the executor for
every front end; exported as DPO pairs checked against the tree and as the raw log, for
trees the exporter may read and redacted; ``loom stats`` on a log with a known outcome;
the tree settings through the executor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loom.commands import syntax
from loom.errors import LoomError
from loom.interchange import preference_stats, preferences
from loom.model import preferences as prefs
from loom.store.schema import Generation
from tests.conftest import Clock

SECRET = "sk-ant-api03-" + "A" * 90


def _tree(app: Any, title: str = "Sea", models: tuple[str, ...] = ("m-a", "m-b", "m-c")
          ) -> dict[str, Any]:
    """root "The sea " → human "was calm. " → three model siblings (each its model)."""
    ws = app.ws
    human = ws.human()
    tree = ws.create_tree(title, root_content="The sea ", author=human)
    root = ws.node(tree.root)
    calm = ws.add_node(tree, root, "was calm. ", human)
    subject = ws.subject()
    kids = []
    for i, model in enumerate(models):
        kid = ws.add_node(tree, calm, f"A gull {i} cried. ", subject)
        Generation.create(id=f"g{title}{i}", node=kid.id, provider="fake", model=model,
                          created=ws.clock())
        kids.append(kid)
    run(app, tree, f"→ switch to {kids[0].local_id}")
    return {"tree": tree, "root": root, "calm": calm, "kids": kids}


def run(app: Any, tree: Any, command: str | syntax.Command, who: Any = None) -> Any:
    result = app.executor.execute(command, app.actor(tree, who))
    assert result.ok, result.text
    return result


def _events(app: Any, tree: Any, kind: str | None = None) -> list[Any]:
    return [e for e in app.ws.preference_events([tree.id]) if kind is None or e.kind == kind]


def test_each_executor_action_is_recorded(app) -> None:  # type: ignore[no-untyped-def]
    t = _tree(app)
    tree, calm, (a, b, c) = t["tree"], t["calm"], t["kids"]
    me = app.me()
    # the switch that placed the writer on a came from the newcomer's place: a itself
    assert [(e.kind, e.chosen, e.rejected) for e in _events(app, tree)] == [
        ("switch", a.id, [])]
    run(app, tree, f"→ switch to {b.local_id}")
    switch = _events(app, tree, "switch")[-1]
    assert (switch.participant, switch.parent, switch.chosen, switch.rejected) == (
        me.id, calm.id, b.id, [a.id])
    run(app, tree, f"→ prune {c.local_id}")
    run(app, tree, f"→ rate {b.local_id} +1")
    run(app, tree, f"→ rate {a.local_id} -1")
    run(app, tree, f"→ bookmark {b.local_id}")
    edited = run(app, tree, f'→ edit {a.local_id} "A tern cried."')
    committed = run(app, tree, syntax.Commit(versions=(syntax.VersionEdit(
        node=b.id, content="A gull cried twice. "),)))
    got = [(e.kind, e.node, e.chosen, e.rejected, e.detail) for e in _events(app, tree)[2:]]
    version_a, version_b = edited.data["created"][0], committed.data["versions"][b.id]
    assert got == [
        ("prune", c.id, None, [c.id], {}),
        ("rate", b.id, b.id, [], {"rating": 1}),
        ("rate", a.id, None, [a.id], {"rating": -1}),
        ("bookmark", b.id, b.id, [], {"on": True}),
        ("edit_of_model_text", a.id, version_a, [a.id],
         {"model_node": a.id, "human_node": version_a}),
        ("edit_of_model_text", b.id, version_b, [b.id],
         {"model_node": b.id, "human_node": version_b}),
    ]
    assert all(e.tree == tree.id and e.parent == calm.id for e in _events(app, tree))
    # a refused command records nothing; a human's own text edited is no model text
    before = len(_events(app, tree))
    assert not app.executor.execute("→ switch to zzzzzz", app.actor(tree)).ok
    run(app, tree, f'→ edit {calm.local_id} "was still. "')
    assert len(_events(app, tree)) == before


def test_tree_settings_go_through_the_executor(app) -> None:  # type: ignore[no-untyped-def]
    tree = _tree(app)["tree"]
    r = run(app, tree, syntax.TreeSettings(shuffle=True))
    assert r.text == '✓ tree "Sea": shuffle on · blind off'
    r = run(app, tree, syntax.TreeSettings(blind=True))
    assert r.text == '✓ tree "Sea": shuffle on · blind on'
    assert prefs.settings_of(app.ws.tree(tree.id).extra) == {"shuffle": True, "blind": True}
    reader = app.ws.ensure_participant("reader", "human", "human", ["loom_aware"])
    r = app.executor.execute(syntax.TreeSettings(shuffle=False), app.actor(tree, reader))
    assert not r.ok and r.code == "PERMISSION_DENIED"
    assert r.command == "→ settings shuffle:off"


def test_export_pairs_are_the_tree_s_text(app, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    t = _tree(app)
    tree, calm, (a, b, c) = t["tree"], t["calm"], t["kids"]
    ws, me = app.ws, app.me()
    clock.advance(60)
    # a picker showed b, c, a and the writer picked c; the switch that carried it out is
    # the same choice, not a second one
    ws.record_preference(me, tree, prefs.SIBLING_PICK, parent=calm.id, node=c.id,
                         shown=[b.id, c.id, a.id], chosen=c.id, rejected=[b.id, a.id])
    run(app, tree, f"→ switch to {c.local_id}")
    clock.advance(60)
    run(app, tree, f"→ switch to {b.local_id}")  # b over c
    run(app, tree, f'→ edit {a.local_id} "A tern cried. "')  # the human's a over a
    run(app, tree, f"→ rate {b.local_id} +1")
    run(app, tree, f"→ rate {c.local_id} -1")  # marks: b over c
    pairs = [p.model_dump() for p in preferences.pairs(ws, [tree])]
    prompt = "The sea was calm. "
    assert pairs == [
        {"prompt": prompt, "chosen": c.content, "rejected": b.content},
        {"prompt": prompt, "chosen": c.content, "rejected": a.content},
        {"prompt": prompt, "chosen": b.content, "rejected": c.content},
        {"prompt": prompt, "chosen": "A tern cried. ", "rejected": a.content},
        {"prompt": prompt, "chosen": b.content, "rejected": c.content},
    ]
    lines = list(preferences.pair_lines(ws, [tree]))
    assert [json.loads(x) for x in lines] == pairs
    raw = [json.loads(x) for x in preferences.event_lines(ws, [tree])]
    assert [e["kind"] for e in raw] == ["switch", "sibling_pick", "switch", "switch",
                                       "edit_of_model_text", "rate", "rate"]
    assert raw[1]["shown"] == [b.id, c.id, a.id] and raw[1]["participant"] == me.id


def test_export_redacts_and_reads_only_readable_trees(app, clock: Clock) -> None:  # type: ignore[no-untyped-def]
    ws = app.ws
    t = _tree(app)
    tree, calm, (a, b, _c) = t["tree"], t["calm"], t["kids"]
    secret = ws.add_node(tree, calm, f"my key is {SECRET} ", ws.subject())
    run(app, tree, f"→ switch to {secret.local_id}")
    run(app, tree, f"→ switch to {b.local_id}")
    pairs = list(preferences.pairs(ws, [tree]))
    assert pairs[-1].rejected == "my key is [REDACTED] " and SECRET not in str(pairs)
    clock.advance(1)
    other = _tree(app, "Other")["tree"]
    # no permissions: nothing to read, and a named tree says why
    nobody = ws.ensure_participant("nobody", "human", "human", [])
    with pytest.raises(LoomError) as err:
        preferences.readable_trees(ws, nobody, [tree.title])
    assert err.value.code == "PERMISSION_DENIED"
    assert preferences.readable_trees(ws, nobody) == ([], [
        f'tree "{x}" left out: loom_aware not enabled' for x in ("Sea", "Other")])
    # loom_aware without cross_tree: the tree they are in, not the other
    reader = ws.ensure_participant("reader", "human", "human", ["loom_aware"])
    ws.set_position(reader, other, ws.node(other.root))
    reader = ws.participant("reader")
    trees, left = preferences.readable_trees(ws, reader)
    assert [x.title for x in trees] == ["Other"]
    assert left == ['tree "Sea" left out: cross_tree not enabled']
    assert a.id  # (used above)


def test_cli_export_and_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    from loom.cli import main

    db = tmp_path / "cli.db"
    monkeypatch.setenv("LOOM_DB", str(db))
    monkeypatch.setenv("LOOM_SUBJECT", "none")
    assert main(["new", "Sea", "--text", "The sea "]) == 0
    assert main(["do", "Sea", '→ respond root "was calm. "', '→ respond root "was grey. "',
                 "→ switch to root"]) == 0
    assert main(["settings", "Sea", "--shuffle", "on"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == '✓ tree "Sea": shuffle on · blind off'
    from loom.app import open_app

    app = open_app(db, use_default_subject=False)
    tree = app.ws.find_tree("Sea")
    calm, grey = app.ws.children(app.ws.node(tree.root))
    app.ws.db.close()
    assert main(["do", "Sea", f"→ switch to {calm.local_id}",
                 f"→ switch to {grey.local_id}"]) == 0
    capsys.readouterr()
    assert main(["export-preferences", "Sea"]) == 0
    out = capsys.readouterr().out
    assert [json.loads(x) for x in out.splitlines()] == [
        {"prompt": "The sea ", "chosen": "was grey. ", "rejected": "was calm. "}]
    target = tmp_path / "events.jsonl"
    assert main(["export-preferences", "--format", "jsonl", "-o", str(target)]) == 0
    assert capsys.readouterr().out == f"✓ wrote 2 events to {target}\n"
    assert [json.loads(x)["kind"] for x in target.read_text().splitlines()] == [
        "switch", "switch"]
    assert main(["stats", "Sea"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('✓ preferences in "Sea": 1 comparison')
    assert "no comparisons between different models yet" in out  # (both human-written)
    assert main(["--participant", "ghost", "export-preferences"]) == 1


def test_bradley_terry_ranks_a_model_that_always_wins_first() -> None:
    games = [("a", "b")] * 8 + [("a", "c")] * 8 + [("b", "c")] * 6 + [("c", "b")] * 2
    p = preference_stats.bradley_terry(games)
    assert p["a"] > p["b"] > p["c"]
    assert 1 < p["b"] / p["c"] < 3 + 0.5  # b won three times as often as c, shrunk a bit
    assert preference_stats.bradley_terry([]) == {}


def test_stats_on_a_constructed_log(app) -> None:  # type: ignore[no-untyped-def]
    """m-a always wins whatever its slot; slot 1 is chosen more often than chance."""
    t = _tree(app)
    tree, calm, (a, b, c) = t["tree"], t["calm"], t["kids"]
    ws, me = app.ws, app.me()
    orders = [[a.id, b.id, c.id], [b.id, a.id, c.id], [c.id, b.id, a.id]] * 3
    for shown in orders:
        ws.record_preference(me, tree, prefs.SIBLING_PICK, parent=calm.id, shown=shown,
                             chosen=a.id, rejected=[x for x in shown if x != a.id])
    for _ in range(6):  # b over c when b is shown first
        ws.record_preference(me, tree, prefs.SIBLING_PICK, parent=calm.id,
                             shown=[b.id, c.id], chosen=b.id, rejected=[c.id])
    s = preference_stats.stats(ws, [tree])
    by = {r.model: r for r in s.models}
    assert [r.model for r in s.models] == ["m-a", "m-b", "m-c"]
    assert (by["m-a"].wins, by["m-a"].losses, by["m-a"].win_rate) == (18, 0, 1.0)
    assert (by["m-b"].wins, by["m-b"].losses) == (6, 9)
    assert (by["m-c"].wins, by["m-c"].losses) == (0, 15)
    slots = {r.slot: r for r in s.slots}
    # 15 showings: slot 1 chosen 3 (a first) + 6 (b first) times; slot 3 three times
    assert (slots[1].chosen, slots[1].showings) == (9, 15)
    assert (slots[2].chosen, slots[3].chosen, slots[3].showings) == (3, 3, 9)
    assert slots[1].rate > slots[1].expected
    text = preference_stats.render(["Sea"], s)
    assert text.splitlines()[0] == '✓ preferences in "Sea": 24 comparisons'
    assert "m-a" in text and "slot 1" in text


def test_a_blind_tree_names_models_only_after_a_choice(app) -> None:  # type: ignore[no-untyped-def]
    from loom.lsp.features import blind
    from loom.lsp.views import tree_overview

    t = _tree(app)
    tree, calm, (a, b, c) = t["tree"], t["calm"], t["kids"]
    ws = app.ws
    other = ws.ensure_participant("other", "human", "human", ["loom_aware", "loom_write"])
    models = {a.id: "m-a", b.id: "m-b", c.id: "m-c"}

    def overview(who: Any) -> str:
        node, tip = ws.position(who, tree)
        return tree_overview(ws, tree, node, tip, who).text

    assert "(m-b)" in overview(other)  # not blind: named
    assert blind.visible_models(ws, other, tree, models) == models
    run(app, tree, syntax.TreeSettings(blind=True))
    tree = ws.tree(tree.id)
    assert blind.veiled(ws, other, tree, [calm.id]) == {calm.id}
    assert blind.hides(ws, other, b) and not blind.hides(ws, other, calm)  # (human text)
    assert blind.visible_models(ws, other, tree, models) == {}
    assert "(m-b)" not in overview(other) and "(m-" not in overview(other)
    # the writer who switched among them has chosen: they see the names
    assert "(m-b)" in overview(app.me())
    run(app, tree, f"→ switch to {b.local_id}", other)
    assert blind.visible_models(ws, other, tree, models) == models
    assert "(m-b)" in overview(other)


def test_a_blind_tree_s_hover_card_hides_the_model(app) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from loom.lsp.features import blind, cards

    t = _tree(app)
    tree, b = t["tree"], t["kids"][1]
    ws = app.ws
    other = ws.ensure_participant("other", "human", "human", ["loom_aware", "loom_write"])
    docs: Any = SimpleNamespace(ws=ws, participant=other)
    assert "`m-b`" in cards.node_card(docs, b)
    run(app, tree, syntax.TreeSettings(blind=True))
    card = cards.node_card(docs, b)
    assert "`m-b`" not in card and blind.HIDDEN in card and "subject" not in card
    run(app, tree, f"→ switch to {b.local_id}", other)
    assert "`m-b`" in cards.node_card(docs, b)


def test_a_model_s_own_moves_are_no_writer_s_choice(app) -> None:  # type: ignore[no-untyped-def]
    t = _tree(app)
    tree, (a, b, _c) = t["tree"], t["kids"]
    ws = app.ws
    bot = ws.ensure_participant("explorer", "model", "collaborator",
                                ["loom_aware", "loom_write"])
    run(app, tree, f"→ switch to {a.local_id}", bot)
    run(app, tree, f"→ switch to {b.local_id}", bot)
    assert [e.kind for e in _events(app, tree)][-2:] == ["switch", "switch"]  # logged
    assert list(preferences.pairs(ws, [tree])) == []  # not a writer's choice
    assert len(list(preferences.pairs(ws, [tree], bot.id))) == 1  # asked for by name
    assert preference_stats.stats(ws, [tree]).choices == 0
