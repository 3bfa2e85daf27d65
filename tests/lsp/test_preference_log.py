"""The preference log from the editor (issue 29), through the real server: suggestions
shown, dismissed and accepted, with the order shown; a sibling picked in the picker with
the (shuffled) order it showed; a blind tree's picker naming the model only once the
writer has chosen; and the pairs the export makes of it, checked against the tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from loom.lsp.features.blind import HIDDEN
from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_logprob_stream
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql
from tests.lsp.test_probabilities import CAT, DOG, command, text_of

fake, client = fake_model_session("preferences", "fake-base", "subject")


def events(db: Path, kind: str) -> list[dict[str, Any]]:
    rows = sql(db, "SELECT kind, parent, node, shown, chosen, rejected, detail FROM "
                   "preference_event WHERE kind = ? ORDER BY id", kind)
    names = ("kind", "parent", "node", "shown", "chosen", "rejected", "detail")
    return [{k: (json.loads(v) if k in ("shown", "rejected", "detail") and v else v)
             for k, v in zip(names, row, strict=True)} for row in rows]


def settings(db: Path, **on: str) -> None:
    from loom.cli import main

    (tree,) = sql(db, "SELECT id FROM tree")[0]
    flags = [x for name, value in on.items() for x in (f"--{name}", value)]
    assert main(["--db", str(db), "settings", tree, *flags]) == 0


async def shown_items(editor: Editor, uri: str) -> list[lsp.InlineCompletionItem]:
    end = len(editor.texts[uri])
    got = await editor.client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, end),
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Invoked)))
    return list(got.items) if got else []


async def test_suggestions_shown_dismissed_and_accepted_are_logged(
        editor: Editor, fake: FakeProvider, capsys: pytest.CaptureFixture[str]) -> None:
    assert editor.db is not None
    settings(editor.db, blind="on")
    fake.script(OPENAI_COMPLETIONS, openai_logprob_stream([CAT, DOG]))
    uri = await open_demo(editor)
    before = editor.texts[uri]
    res = await command(editor, "loom.suggest", {"uri": uri, "n": 2})
    assert res["ok"], res
    items = await shown_items(editor, uri)
    ids = [i.command.arguments[0]["node"] for i in items]
    cat, dog = ids
    await shown_items(editor, uri)  # asked again: the same showing, not a second one
    (shown,) = events(editor.db, "suggestion_shown")
    assert shown["shown"] == ids and shown["rejected"] is None
    tip = shown["parent"]
    # a blind tree: the picker does not name the model before the writer has chosen
    picker = await command(editor, "loom.siblings", {"uri": uri, "node": dog})
    assert {s["model"] for s in picker["data"]["siblings"]} == {HIDDEN}
    res = await command(editor, "loom.dismissSuggestion", {"uri": uri})
    assert res["ok"] and res["data"]["dismissed"] == ids
    (dismissed,) = events(editor.db, "suggestion_dismissed")
    assert (dismissed["parent"], dismissed["shown"], dismissed["rejected"]) == (tip, ids, ids)
    assert dismissed["detail"] == {"how": "dismissed"}
    # shown again, then the second one accepted whole (the server inserts it, as Neovim)
    assert [i.insert_text for i in await shown_items(editor, uri)] == [
        text_of(CAT), text_of(DOG)]
    assert len(events(editor.db, "suggestion_shown")) == 2
    res = await command(editor, "loom.acceptSuggestion", {"uri": uri, "node": dog})
    assert res["ok"], res
    await editor.wait_for(lambda: editor.texts[uri] == before + text_of(DOG))
    (accepted,) = events(editor.db, "suggestion_accepted")
    assert (accepted["parent"], accepted["chosen"], accepted["rejected"]) == (tip, dog, [cat])
    assert accepted["shown"] == ids
    assert accepted["detail"] == {"how": "whole", "accepted": len(text_of(DOG)),
                                  "length": len(text_of(DOG)), "slot": 2}
    # chosen: the picker names the models now
    picker = await command(editor, "loom.siblings", {"uri": uri, "node": dog})
    assert {s["model"] for s in picker["data"]["siblings"]} == {"fake-base"}
    # the export: one pair, the path's text as the prompt, the two suggestions' text
    from loom.cli import main

    capsys.readouterr()
    assert main(["--db", str(editor.db), "export-preferences"]) == 0
    pairs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert pairs == [{"prompt": before, "chosen": text_of(DOG), "rejected": text_of(CAT)}]


async def test_a_sibling_picked_in_the_picker_is_logged_with_the_order_shown(
        editor: Editor) -> None:
    assert editor.db is not None
    settings(editor.db, shuffle="on")
    uri = await open_demo(editor)
    ((node, parent),) = sql(editor.db, "SELECT id, parent FROM node WHERE content LIKE ?",
                            "%windows seemed to watch%")
    siblings = {i for (i,) in sql(editor.db, "SELECT id FROM node WHERE parent = ? AND "
                                             "kind = 'continuation'", parent)}
    orders = set()
    for _ in range(12):  # shuffled per showing: a dozen showings of three see two orders
        picker = await command(editor, "loom.siblings", {"uri": uri, "node": node})
        shown = [s["id"] for s in picker["data"]["siblings"]]
        assert set(shown) == siblings
        assert [s["index"] for s in picker["data"]["siblings"]] == [1, 2, 3]
        orders.add(tuple(shown))
    assert len(orders) > 1
    target = shown[-1] if shown[-1] != node else shown[0]
    res = await command(editor, "loom.switchTo", {"uri": uri, "node": target})
    assert res["ok"], res
    (pick,) = events(editor.db, "sibling_pick")
    assert (pick["parent"], pick["shown"], pick["chosen"]) == (parent, shown, target)
    assert pick["rejected"] == [i for i in shown if i != target]
    assert pick["detail"] == {"slot": shown.index(target) + 1}
    # the switch the executor made of it is logged too (the export counts the pick once)
    switch = events(editor.db, "switch")[-1]
    assert (switch["chosen"], switch["parent"]) == (target, parent)
