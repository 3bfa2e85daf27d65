"""The model picker and several models in one request, through a language server with
VS Code's and Neovim's capabilities: ``loom.models`` lists what ``continue`` can ask,
``loom.chooseModel`` picks one for the tree, ``→ continue models:a,b`` asks several and
hover names the model that made each sibling."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.fake_provider import OPENAI_COMPLETIONS, FakeProvider, openai_completion_stream
from tests.lsp.conftest import Editor, fake_model_session, open_demo, sql

fake, client = fake_model_session("model-picker", "fake-base", "subject")
CONFIG = Path(tempfile.gettempdir()) / f"loom-lsp-model-picker-{os.getpid()}.toml"


def add_profile(fake: FakeProvider, name: str, model: str) -> None:
    with CONFIG.open("a", encoding="utf-8") as config:
        config.write(f'\n[profiles.{name}]\nprovider = "openai-compatible"\n'
                     f'model = "{model}"\nbase_url = "{fake.openai_base_url}"\n')


async def command(editor: Editor, name: str, **args: Any) -> dict[str, Any]:
    return await editor.client.workspace_execute_command_async(  # type: ignore[no-any-return]
        lsp.ExecuteCommandParams(command=name, arguments=[args]))


async def test_the_picked_model_is_the_one_continue_asks(editor: Editor,
                                                        fake: FakeProvider) -> None:
    uri = await open_demo(editor)
    listed = await command(editor, "loom.models", uri=uri)
    assert listed["ok"] and listed["data"]["current"] == "fake", listed
    assert listed["data"]["models"][0] == {"name": "fake", "description":
                                           "openai-compatible fake-base", "ready": True,
                                           "default": True}
    add_profile(fake, "other", "other-base")
    picked = await command(editor, "loom.chooseModel", uri=uri, profile="oth")
    assert picked["ok"] and picked["message"].startswith("✓ continue asks other in"), picked
    assert (await command(editor, "loom.models", uri=uri))["data"]["current"] == "other"
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" Rain."]))
    done = await command(editor, "loom.continue", uri=uri, n=1)
    assert done["ok"], done
    assert fake.requests_to(OPENAI_COMPLETIONS)[-1].json["model"] == "other-base"
    back = await command(editor, "loom.chooseModel", uri=uri)
    assert back["ok"] and "default" in back["message"]
    unknown = await command(editor, "loom.chooseModel", uri=uri, profile="gpt-9")
    assert not unknown["ok"] and 'no model named "gpt-9"' in unknown["message"]


async def test_models_siblings_each_say_their_model_in_hover(editor: Editor,
                                                            fake: FakeProvider) -> None:
    add_profile(fake, "second", "second-base")
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" The gate swung."]))
    uri = await open_demo(editor)
    done = await command(editor, "loom.continue", uri=uri, models=["fake", "second"], n=1)
    assert done["ok"], done
    made = sql(editor.db, "SELECT n.local_id, g.model FROM node n JOIN generation g "
                          "ON g.node = n.id ORDER BY g.completion_index")[-2:]
    assert sorted(m for _, m in made) == ["fake-base", "second-base"]
    await editor.wait_for(lambda: "The gate swung." in editor.texts[uri])
    text = editor.texts[uri]
    at = text.rindex("The gate swung.")
    line = text[:at].count("\n")
    col = at - (text.rfind("\n", 0, at) + 1)
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=col + 2)))
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert "Generated: `fake-base`" in value or "Generated: `second-base`" in value, value
    assert "Continuation" in value and "of 2 from one request" in value, value


def add_preset(name: str, body: str) -> None:
    with CONFIG.open("a", encoding="utf-8") as config:
        config.write(f"\n[presets.{name}]\n{body}\n")


async def test_a_preset_is_listed_completed_picked_and_sampled_with(
        editor: Editor, fake: FakeProvider) -> None:
    """``[presets.wild]`` in config.toml: the picker lists it beside the models, picking it
    makes it what continue samples with in the tree (the request carries its options, and
    the editor's defaults only fill what it leaves out), ``preset:`` completes it, and an
    option given beside it wins."""
    add_preset("wild", "temperature = 1.3\ntop_k = 100\nxtc_probability = 0.5\ntokens = 24")
    add_preset("calm", 'description = "low and steady"\ntemperature = 0.3\nmin_p = 0.1')
    uri = await open_demo(editor)
    listed = (await command(editor, "loom.models", uri=uri))["data"]
    assert listed["presets"] == [
        {"name": "wild", "description": "tokens 24 · temperature 1.3 · top_k 100 · "
                                        "xtc_probability 0.5"},
        {"name": "calm", "description": "low and steady"}]
    assert listed["preset"] is None
    picked = await command(editor, "loom.chooseModel", uri=uri, preset="wi")
    assert picked["ok"], picked
    assert picked["message"].startswith("✓ continue samples with preset wild in"), picked
    now = await command(editor, "loom.models", uri=uri)
    assert now["data"]["preset"] == "wild" and now["data"]["current"] == "fake"
    assert now["message"] == "✓ continue asks fake with preset wild"
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" Wind."]))
    done = await command(editor, "loom.continue", uri=uri, n=1)
    assert done["ok"], done
    body = fake.requests_to(OPENAI_COMPLETIONS)[-1].json
    assert body["temperature"] == 1.3 and body["max_tokens"] == 24  # not the editor's 50
    assert body["top_k"] == 100 and body["xtc_probability"] == 0.5
    stored = sql(editor.db, "SELECT params FROM generation ORDER BY created DESC LIMIT 1")
    assert '"preset": "wild"' in stored[0][0]
    await editor.wait_for(lambda: "Wind." in editor.texts[uri])
    at = editor.texts[uri].rindex("Wind.")
    hover = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=editor.pos(uri, at + 1)))
    assert hover is not None
    card = hover.contents.value  # type: ignore[union-attr]
    assert "temperature 1.3" in card and "top k 100" in card and "preset wild" in card, card
    again = await command(editor, "loom.continue", uri=uri, n=1, preset="calm",
                          temperature=0.5)
    assert again["ok"], again
    body = fake.requests_to(OPENAI_COMPLETIONS)[-1].json
    assert body["temperature"] == 0.5 and body["min_p"] == 0.1 and "top_k" not in body
    # completion after preset: offers the config's presets
    editor.append(uri, "\n→ continue preset:")
    items = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=editor.pos(uri, len(editor.texts[uri]))))
    offered = {i.label: i.detail for i in items.items}
    assert offered.get("preset:calm") == "low and steady", offered
    assert "preset:wild" in offered
    unknown = await command(editor, "loom.chooseModel", uri=uri, preset="loud")
    assert not unknown["ok"] and 'no preset named "loud"' in unknown["message"]
    assert "the presets: wild, calm" in unknown["message"]
    cleared = await command(editor, "loom.chooseModel", uri=uri, preset="")
    assert cleared["ok"] and (await command(editor, "loom.models", uri=uri))[
        "data"]["preset"] is None
