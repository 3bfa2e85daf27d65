"""Any model, through the executor and the real SDKs against a local wire-format server:
``→ continue`` sends its sampling options in each API's own words (and refuses, naming the
provider, those an API lacks), ``model:``/``models:`` choose the models per request, and
a model the provider no longer serves is a ``✗ MODEL_ERROR`` that names the profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.llm import ModelProfile
from loom.llm.subject import ProviderSubject
from loom.store.schema import Generation, Node
from tests.e2e import test_providers_wire as wire
from tests.e2e.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    anthropic_stream,
    error_reply,
    json_reply,
    openai_chat_stream,
    openai_completion_stream,
)

# the wire tests' key fixture, used here by name (the fake server is conftest.py's)
_key = wire._key
KEY_ENV = wire.KEY_ENV


def profile(fake: FakeProvider, provider: str = "openai-compatible", name: str = "wire",
            **overrides) -> ModelProfile:
    base_url = fake.anthropic_base_url if provider == "anthropic" else fake.openai_base_url
    return ModelProfile(name=name, provider=provider, model=f"{name}-model", base_url=base_url,
                        api_key_env=KEY_ENV, timeout_s=5, backoff_base_s=0.01,
                        backoff_max_s=0.02, **overrides)


@pytest.fixture
def config(fake: FakeProvider, tmp_path: Path, monkeypatch) -> Path:
    """Two more models beside the default: a served base model and Anthropic's API."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[profiles.base-b]\nprovider = "openai-compatible"\nbase_url = "{fake.openai_base_url}"\n'
        f'model = "base-b-model"\napi_key_env = "{KEY_ENV}"\nbackoff_base_s = 0.01\n'
        f'backoff_max_s = 0.02\n\n'
        f'[profiles.claude-w]\nprovider = "anthropic"\nbase_url = "{fake.anthropic_base_url}"\n'
        f'model = "claude-w-model"\napi_key_env = "{KEY_ENV}"\nbackoff_base_s = 0.01\n'
        f'backoff_max_s = 0.02\n', encoding="utf-8")
    monkeypatch.setenv("LOOM_CONFIG", str(path))
    return path


def buffer_tree(app):  # type: ignore[no-untyped-def]
    return app.ws.create_tree("Wire", "buffer", root_content="The keeper climbed the stairs")


def children(tree) -> list[Node]:  # type: ignore[no-untyped-def]
    return list(Node.select().where((Node.tree == tree.id) & (Node.depth == 1))
                .order_by(Node.created, Node.id))


def generation(node: Node) -> Generation:
    return Generation.get(Generation.node == node.id)


# -- sampling options in each API's words ----------------------------------------------


def test_every_sampling_option_reaches_the_completions_api_and_is_stored(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" slowly."]),
                openai_completion_stream([" at last."]))
    result = app.executor.execute(
        '→ continue n:2 tokens:12 temp:0.3 top-p:0.9 min_p:0.05 stop:"\\n" seed:7 '
        'logit_bias:"50256:-100, 13:2.5"', app.actor(tree))
    assert result.ok, result.text
    sent = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    # a seed makes each continuation its own request, sampled with seed + i
    assert sorted(s["seed"] for s in sent) == [7, 8] and all(s["n"] == 1 for s in sent)
    for body in sent:
        assert body["max_tokens"] == 12 and body["temperature"] == 0.3
        assert body["top_p"] == 0.9 and body["min_p"] == 0.05 and body["stop"] == ["\n"]
        assert body["logit_bias"] == {"50256": -100.0, "13": 2.5}
    params = generation(children(tree)[0]).params
    assert params | {"max_tokens": 12, "temperature": 0.3, "top_p": 0.9, "min_p": 0.05,
                     "stop": ["\n"], "seed": 7, "profile": "wire"} == params
    assert result.command == ('→ continue n:2 tokens:12 temperature:0.3 top_p:0.9 '
                              'min_p:0.05 stop:"\\n" seed:7 logit_bias:"50256:-100,13:2.5"')


def test_sampling_options_reach_the_chat_api_one_seed_per_reply(app, fake):
    tree = app.ws.create_tree("Talk", "dialogue", root_content="Tell me about the sea.")
    app.executor.subject = ProviderSubject(profile(fake))
    fake.script(OPENAI_CHAT, openai_chat_stream("Grey."), openai_chat_stream("Wide."))
    result = app.executor.execute("→ continue n:2 top_p:0.8 seed:40", app.actor(tree))
    assert result.ok, result.text
    sent = [r.json for r in fake.requests_to(OPENAI_CHAT)]
    assert sorted(s["seed"] for s in sent) == [40, 41]
    assert all(s["top_p"] == 0.8 for s in sent)


def test_an_option_the_api_lacks_is_refused_naming_the_provider(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, "openai"))  # OpenAI's own API
    result = app.executor.execute("→ continue min_p:0.1", app.actor(tree))
    assert not result.ok
    assert result.text.startswith("✗ INVALID_SYNTAX: min_p: is not offered by openai's "
                                  "completion API (wire: wire-model)")
    assert "  hint: leave min_p: out" in result.text
    app.executor.subject = ProviderSubject(profile(fake, "anthropic"))
    result = app.executor.execute("→ continue seed:3 logit_bias:\"5:1\"", app.actor(tree))
    assert "✗ INVALID_SYNTAX: seed:, logit_bias: are not offered by anthropic" in result.text
    assert fake.requests == [] and children(tree) == []  # nothing asked, nothing written


def test_anthropic_takes_stop_as_stop_sequences(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, "anthropic"))
    fake.script(ANTHROPIC_MESSAGES, anthropic_stream(" and paused"))
    result = app.executor.execute('→ continue stop:"END" tokens:30', app.actor(tree))
    assert result.ok, result.text
    body = fake.requests_to(ANTHROPIC_MESSAGES)[0].json
    assert body["stop_sequences"] == ["END"] and body["max_tokens"] == 30


# -- the model in the command ---------------------------------------------------------


def test_models_asks_several_models_at_once_each_sibling_labelled(app, fake, config):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" from a base model."]))
    fake.set_default(ANTHROPIC_MESSAGES, anthropic_stream(" from a chat model."))
    result = app.executor.execute("→ continue models:base,claude-w n:2", app.actor(tree))
    assert result.ok, result.text
    assert "✓ generating 4 continuations" in result.text
    assert result.text.count("(base-b-model)") == 2
    assert result.text.count("(claude-w-model)") == 2
    assert result.command == "→ continue models:base,claude-w n:2"  # as typed
    made = children(tree)
    by_model = sorted(generation(n).model for n in made)
    assert by_model == ["base-b-model"] * 2 + ["claude-w-model"] * 2
    assert {generation(n).params["profile"] for n in made} == {"base-b", "claude-w"}
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 2  # n each
    # the overview and the tree picture say which model wrote each sibling
    from loom.lsp.views import tree_overview
    from loom.render import picture
    from loom.store import reader

    here, tip = app.ws.position(app.ws.human(), tree)
    shown = tree_overview(app.ws, tree, here, tip).text
    assert shown.count("› (base-b-model) ") == 2 and shown.count("› (claude-w-model) ") == 2
    o = reader.outline_on_path(app.ws, tree, here, tip)
    drawn = picture.svg(tree.title, o.root, o.rows, o.children, o.path, o.here)
    assert drawn.count("(base-b-model)") == 2 and drawn.count("(claude-w-model)") == 2
    single = app.ws.create_tree("One model", "buffer", root_content="Alone")
    app.executor.execute("→ continue n:2", app.actor(single))
    here, tip = app.ws.position(app.ws.human(), single)
    assert "(wire-model)" not in tree_overview(app.ws, single, here, tip).text  # no need


def test_model_picks_one_and_unknown_names_are_explained(app, fake, config):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.script(ANTHROPIC_MESSAGES, anthropic_stream(" then rested."))
    result = app.executor.execute("→ continue model:claude-w", app.actor(tree))
    assert result.ok, result.text
    assert generation(children(tree)[0]).model == "claude-w-model"
    bad = app.executor.execute("→ continue model:gpt-9", app.actor(tree))
    assert bad.text.startswith('✗ INVALID_SYNTAX: no model named "gpt-9"')
    assert "claude-w" in bad.text and "local" in bad.text  # the hint lists them
    many = app.executor.execute("→ continue model:c", app.actor(tree))  # claude-w, claude-haiku
    assert '✗ INVALID_SYNTAX: 2 models named "c"' in many.text
    page = app.executor.execute("→ help continue", app.actor(tree))
    assert "Models (model:NAME, models:A,B):" in page.text
    models = page.text.split("Models")[1].split("\n\n")[0]
    listed = {line.split()[0]: line for line in models.splitlines()[1:]}
    assert listed["wire"].endswith("openai-compatible wire-model (default)")
    assert listed["claude-w"].endswith("anthropic claude-w-model")
    assert listed["davinci-002"].endswith("(no API key)")
    assert "top_p:" in page.text and "seed:" in page.text
    assert page.text.endswith("Presets (preset:NAME): none yet; define one as "
                              "[presets.NAME] in config.toml")


def test_one_model_failing_keeps_the_others_continuations(app, fake, config):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" kept."]))
    fake.set_default(ANTHROPIC_MESSAGES, error_reply(400, "prompt is too long",
                                                     flavor="anthropic"))
    result = app.executor.execute("→ continue models:wire,claude-w", app.actor(tree))
    assert result.ok, result.text
    assert "✗ claude-w: anthropic rejected the request (400): prompt is too long" in result.text
    assert [n.content for n in children(tree)] == [" kept."]


# -- a model the provider no longer serves ---------------------------------------------


@pytest.mark.parametrize(("provider", "path", "reply"), [
    ("openai", OPENAI_COMPLETIONS, json_reply({"error": {
        "message": "The model `wire-model` does not exist or you do not have access to it.",
        "type": "invalid_request_error", "param": None, "code": "model_not_found"}}, 404)),
    ("anthropic", ANTHROPIC_MESSAGES, error_reply(404, "model: wire-model",
                                                  flavor="anthropic")),
])
def test_a_retired_model_names_the_profile_to_change(app, fake, provider, path, reply):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, provider))
    fake.script(path, reply)
    result = app.executor.execute("→ continue", app.actor(tree))
    first, hint = result.text.split("\n", 1)
    assert first.startswith(f"✗ MODEL_ERROR: {provider} does not serve the model wire-model "
                            "(404): ")
    assert "wire-model" in first.split("(404): ", 1)[1]  # the provider's own words
    assert hint.startswith("  hint: set model in [profiles.wire] of config.toml")
    assert children(tree) == []


# -- replay ---------------------------------------------------------------------------


def test_regenerate_sends_the_same_request_to_the_model_that_made_it(app, fake, config):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" the same."]))
    first = app.executor.execute('→ continue model:base-b n:2 seed:9 top_p:0.7 stop:"."',
                                 app.actor(tree))
    assert first.ok, first.text
    (second,) = [n for n in children(tree) if generation(n).completion_index == 1]
    fake.reset()
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" the same."]))
    again = app.executor.execute(f"→ regenerate {second.label}", app.actor(tree))
    assert again.ok, again.text
    assert f"the same text as [{second.label}]" in again.text
    (sent,) = [r.json for r in fake.requests_to(OPENAI_COMPLETIONS)]
    assert sent["model"] == "base-b-model" and sent["seed"] == 10  # second of two: 9 + 1
    assert sent["top_p"] == 0.7 and sent["stop"] == ["."] and sent["n"] == 1
    assert sent["prompt"] == "The keeper climbed the stairs"
    (replay,) = [n for n in children(tree) if "replay_of" in generation(n).params]
    assert generation(replay).params["replay_of"] == second.id
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" the samf."]))
    other = app.executor.execute(f"→ replay {second.label}", app.actor(tree))
    assert f"not the text of [{second.label}]: they part after 8 characters" in other.text
    human = app.executor.execute("→ regenerate root", app.actor(tree))
    assert human.text.startswith("✗ NOT_FOUND: [")
    assert "was not made by a model request" in human.text


# -- chat models as base models --------------------------------------------------------


def test_anthropic_continues_by_prefill_the_reply_joined_to_the_text(app, fake):
    tree = app.ws.create_tree("Prefill", "buffer", root_content="The keeper climbed the stairs ")
    app.executor.subject = ProviderSubject(profile(fake, "anthropic"))
    fake.script(ANTHROPIC_MESSAGES, anthropic_stream(" slowly, counting them."))
    result = app.executor.execute("→ continue", app.actor(tree))
    assert result.ok, result.text
    body = fake.requests_to(ANTHROPIC_MESSAGES)[0].json
    assert body["system"][0]["text"].startswith("Continue the text exactly where it stops")
    turns = [(m["role"], m["content"] if isinstance(m["content"], str)
              else m["content"][0]["text"]) for m in body["messages"]]
    # the text begins the reply, without the trailing space the API refuses
    assert turns == [("user", "Continue the text."),
                     ("assistant", "The keeper climbed the stairs")]
    (made,) = children(tree)
    assert made.content == "slowly, counting them."  # the text's own space stays its
    assert generation(made).params["strategy"] == "prefill"


def test_a_model_that_refuses_prefill_is_told_to_continue_instead(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, "anthropic"))
    fake.script(ANTHROPIC_MESSAGES,
                error_reply(400, "This model does not support assistant message prefill.",
                            flavor="anthropic"),
                anthropic_stream("Sure! Here's the continuation:\n\nThe keeper climbed "
                                 "the stairs and paused at the top."))
    result = app.executor.execute("→ continue", app.actor(tree))
    assert result.ok, result.text
    last = fake.requests_to(ANTHROPIC_MESSAGES)[-1].json
    assert [m["role"] for m in last["messages"]] == ["user"]
    (made,) = children(tree)
    assert made.content == " and paused at the top."  # no preamble, no restated text
    assert generation(made).params["strategy"] == "instruct"


@pytest.mark.parametrize("strategy", ["instruct", "prefill"])
def test_a_served_chat_model_as_a_base_model(app, fake, strategy):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, strategy=strategy))
    fake.set_default(OPENAI_CHAT, openai_chat_stream(
        "Certainly! Here is how the story continues:\nand then she paused."))
    result = app.executor.execute("→ continue n:2", app.actor(tree))
    assert result.ok, result.text
    sent = [r.json for r in fake.requests_to(OPENAI_CHAT)]
    assert len(sent) == 2 and fake.requests_to(OPENAI_COMPLETIONS) == []
    roles = [m["role"] for m in sent[0]["messages"]]
    if strategy == "prefill":
        assert roles == ["system", "user", "assistant"]
        assert sent[0]["continue_final_message"] is True
    else:
        assert roles == ["system", "user"]
        assert sent[0]["messages"][1]["content"] == "The keeper climbed the stairs"
    assert [n.content for n in children(tree)] == [" and then she paused."] * 2


def test_strategies_a_provider_lacks_are_refused_in_the_profile(tmp_path, monkeypatch):
    from loom.llm.base import ModelError
    from loom.llm.config import load_config

    path = tmp_path / "config.toml"
    path.write_text('[profiles.c]\nprovider = "anthropic"\nmodel = "m"\n'
                    'strategy = "completion"\n', encoding="utf-8")
    with pytest.raises(ModelError, match="no completion endpoint"):
        load_config(path)


# -- every sampler (issue 46, item 3) ---------------------------------------------------

_EVERY = ('→ continue top_k:40 typical_p:0.9 repeat_penalty:1.1 frequency_penalty:0.3 '
          'presence_penalty:0.2 dry:0.8 dry_base:1.75 dry_allowed_length:2 '
          'xtc_probability:0.5 xtc_threshold:0.1 mirostat:2 mirostat_tau:5 mirostat_eta:0.1 '
          'banned:"very, suddenly" logit_bias:"13:2.5" '
          'grammar:"root ::= \\" yes\\" | \\" no\\"" extra:"top_n_sigma:1.5,ignore_eos:true"')
#: How llama.cpp's server names them, in the request body.
_LLAMA_BODY = {
    "top_k": 40, "typical_p": 0.9, "repeat_penalty": 1.1, "frequency_penalty": 0.3,
    "presence_penalty": 0.2, "dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2,
    "xtc_probability": 0.5, "xtc_threshold": 0.1, "mirostat": 2, "mirostat_tau": 5.0,
    "mirostat_eta": 0.1, "grammar": 'root ::= " yes" | " no"', "top_n_sigma": 1.5,
    "ignore_eos": True,
    # the token biases, then each banned string as written and after a space
    "logit_bias": [[13, 2.5], ["very", False], [" very", False], ["suddenly", False],
                   [" suddenly", False]],
}


@pytest.mark.parametrize("strategy", ["completion", "instruct"])
def test_every_sampler_reaches_a_compatible_server_in_llama_cpp_s_words(app, fake, strategy):
    """Through the real SDK, on the completions endpoint and on chat (a chat model as a
    base model): each option under llama.cpp's name, ``extra:``'s keys beside them, and
    the generation's stored parameters keep them, so → regenerate asks the same."""
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, strategy=strategy))
    path = OPENAI_COMPLETIONS if strategy == "completion" else OPENAI_CHAT
    fake.set_default(path, openai_completion_stream([" no"]) if strategy == "completion"
                     else openai_chat_stream(" no"))
    result = app.executor.execute(_EVERY, app.actor(tree))
    assert result.ok, result.text
    (body,) = [r.json for r in fake.requests_to(path)]
    assert body | _LLAMA_BODY == body, {k: body.get(k) for k in _LLAMA_BODY}
    assert body["stream"] is True and body["model"] == "wire-model"
    assert "extra" not in body and "banned" not in body and "dry" not in body
    params = generation(children(tree)[0]).params
    assert params["top_k"] == 40 and params["dry_multiplier"] == 0.8
    assert params["banned"] == ["very", "suddenly"]
    assert params["extra"] == {"top_n_sigma": 1.5, "ignore_eos": True}
    assert result.command == (  # the catalogue's order
        '→ continue logit_bias:"13:2.5" top_k:40 typical_p:0.9 repeat_penalty:1.1 '
        'frequency_penalty:0.3 presence_penalty:0.2 dry:0.8 dry_base:1.75 '
        'dry_allowed_length:2 xtc_probability:0.5 xtc_threshold:0.1 mirostat:2 '
        'mirostat_tau:5.0 mirostat_eta:0.1 banned:"very, suddenly" '
        'grammar:"root ::= \\" yes\\" | \\" no\\"" extra:"top_n_sigma:1.5,ignore_eos:true"')
    fake.reset()
    fake.set_default(path, openai_completion_stream([" no"]) if strategy == "completion"
                     else openai_chat_stream(" no"))
    again = app.executor.execute(f"→ regenerate {children(tree)[0].label}", app.actor(tree))
    assert again.ok, again.text
    (replayed,) = [r.json for r in fake.requests_to(path)]
    assert replayed | _LLAMA_BODY == replayed


def test_openai_takes_its_two_penalties_and_extra_and_refuses_llama_cpp_s(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, "openai"))
    fake.script(OPENAI_COMPLETIONS, openai_completion_stream([" on."]))
    result = app.executor.execute('→ continue frequency_penalty:0.5 presence_penalty:-0.5 '
                                  'extra:"user:writer-7"', app.actor(tree))
    assert result.ok, result.text
    body = fake.requests_to(OPENAI_COMPLETIONS)[0].json
    assert body["frequency_penalty"] == 0.5 and body["presence_penalty"] == -0.5
    assert body["user"] == "writer-7"
    refused = app.executor.execute('→ continue top_k:5 mirostat:2 grammar:"root ::= \\"a\\"" '
                                   'banned:"very"', app.actor(tree))
    assert refused.text.startswith("✗ INVALID_SYNTAX: top_k:, mirostat:, banned:, grammar: "
                                   "are not offered by openai's completion API "
                                   "(wire: wire-model)"), refused.text
    assert len(fake.requests_to(OPENAI_COMPLETIONS)) == 1  # nothing more asked


def test_anthropic_takes_extra_in_the_body_and_refuses_the_samplers_it_lacks(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake, "anthropic"))
    fake.script(ANTHROPIC_MESSAGES, anthropic_stream(" and waited"))
    result = app.executor.execute('→ continue extra:"metadata:{\\"user_id\\":\\"w7\\"}"',
                                  app.actor(tree))
    assert result.ok, result.text
    body = fake.requests_to(ANTHROPIC_MESSAGES)[0].json
    assert body["metadata"] == {"user_id": "w7"} and body["model"] == "wire-model"
    refused = app.executor.execute("→ continue top_k:5 presence_penalty:1 xtc:0.5",
                                   app.actor(tree))
    assert refused.text.startswith("✗ INVALID_SYNTAX: top_k:, presence_penalty:, "
                                   "xtc_probability: are not offered by anthropic's "
                                   "completion API"), refused.text
    assert len(fake.requests_to(ANTHROPIC_MESSAGES)) == 1


def test_a_sampler_out_of_bounds_is_refused_before_anything_is_asked(app, fake):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    for line, said in (("→ continue mirostat:3", "mirostat must be between 0 and 2"),
                       ("→ continue frequency_penalty:2.5",
                        "frequency_penalty must be between -2 and 2"),
                       ("→ continue typical_p:1.5", "typical_p must be between 0 and 1")):
        result = app.executor.execute(line, app.actor(tree))
        assert result.text.startswith(f"✗ LIMIT_EXCEEDED: {said}"), result.text
    assert fake.requests == [] and children(tree) == []


@pytest.mark.parametrize("provider", ["openai-compatible", "openai", "anthropic"])
def test_extra_never_overrides_what_loom_sends(app, fake, provider):
    """A sampling record that reaches a provider with a forbidden ``extra:`` key (built
    around the command's check) still cannot change the model, n, streaming or the token
    data: the provider leaves such keys out."""
    from loom.llm.registry import make_provider
    from loom.model.sampling import Sampling

    prov = make_provider(profile(fake, provider))
    sneaky = Sampling().model_copy(update={"extra": {
        "model": "other", "n": 9, "stream": False, "logprobs": 0, "max_tokens": 4000,
        "messages": [], "prompt": "x", "top_n_sigma": 1.0}})
    path = ANTHROPIC_MESSAGES if provider == "anthropic" else OPENAI_COMPLETIONS
    fake.script(path, anthropic_stream(" on") if provider == "anthropic"
                else openai_completion_stream([" on"]))
    import asyncio

    asyncio.run(prov.complete("The keeper", sneaky))
    body = fake.requests_to(path)[0].json
    assert body["model"] == "wire-model" and body["stream"] is True
    assert body.get("n", 1) == 1 and body["max_tokens"] == 50
    assert body.get("logprobs") in (None, 5)  # the profile's, where the API has them
    if provider == "anthropic":
        assert body["messages"] and "prompt" not in body
    else:
        assert body["prompt"] == "The keeper" and "messages" not in body
    assert body.get("top_n_sigma") == 1.0  # the harmless key still goes


# -- sampler presets -------------------------------------------------------------------


@pytest.fixture
def presets(config: Path) -> Path:
    with config.open("a", encoding="utf-8") as out:
        out.write('\n[presets.wild]\ntemperature = 1.3\ntop_k = 100\nmin_p = 0.02\n'
                  'banned = "suddenly"\nextra = { top_n_sigma = 1.5 }\n'
                  '\n[presets.hot]\ntemperature = 2.5\n')
    return config


def test_a_preset_samples_with_its_options_and_the_command_s_win(app, fake, presets):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    fake.set_default(OPENAI_COMPLETIONS, openai_completion_stream([" went on."]))
    result = app.executor.execute("→ continue preset:wild", app.actor(tree))
    assert result.ok, result.text
    body = fake.requests_to(OPENAI_COMPLETIONS)[-1].json
    assert body["temperature"] == 1.3 and body["top_k"] == 100 and body["min_p"] == 0.02
    assert body["top_n_sigma"] == 1.5
    assert body["logit_bias"] == [["suddenly", False], [" suddenly", False]]
    assert result.command == "→ continue preset:wild"
    params = generation(children(tree)[0]).params
    assert params["preset"] == "wild" and params["temperature"] == 1.3
    mixed = app.executor.execute("→ continue preset:wi temperature:0.4 n:2", app.actor(tree))
    assert mixed.ok, mixed.text
    body = fake.requests_to(OPENAI_COMPLETIONS)[-1].json
    assert body["temperature"] == 0.4 and body["top_k"] == 100 and body["n"] == 2
    page = app.executor.execute("→ help continue", app.actor(tree)).text
    assert page.split("Presets (preset:NAME):\n")[1].splitlines() == [
        "  wild  temperature 1.3 · min_p 0.02 · top_k 100 · banned \"suddenly\" · extra",
        "  hot   temperature 2.5"]


def test_a_preset_out_of_bounds_or_unknown_is_refused_and_nothing_asked(app, fake, presets):
    tree = buffer_tree(app)
    app.executor.subject = ProviderSubject(profile(fake))
    hot = app.executor.execute("→ continue preset:hot", app.actor(tree))
    assert hot.text.startswith("✗ LIMIT_EXCEEDED: temperature must be between 0 and 2")
    unknown = app.executor.execute("→ continue preset:cold", app.actor(tree))
    assert unknown.text == ('✗ INVALID_SYNTAX: no preset named "cold"\n'
                            "  hint: the presets: wild, hot")
    assert fake.requests == [] and children(tree) == []
    # a preset the API lacks an option of is refused as the option would be
    app.executor.subject = ProviderSubject(profile(fake, "openai"))
    lacking = app.executor.execute("→ continue preset:wild", app.actor(tree))
    assert lacking.text.startswith("✗ INVALID_SYNTAX: min_p:, top_k:, banned: are not "
                                   "offered by openai's completion API"), lacking.text
    assert fake.requests == []
