"""Every sampler with the real local model: llama.cpp's server takes each option Loom sends
under its own name (top_k, typical_p, the penalties, DRY, XTC, mirostat, a GBNF grammar,
banned strings, extra keys), and the ones whose effect can be seen show it."""

from __future__ import annotations

import pytest

from loom.llm.config import BUILTIN_PROFILES
from loom.llm.subject import ProviderSubject
from loom.store import node_tokens as token_store
from loom.store.schema import Node
from tests.local_model import requires_local_model

pytestmark = requires_local_model

YES_NO = 'grammar:"root ::= \\" yes\\" | \\" no\\""'


@pytest.fixture
def local(app, monkeypatch):  # type: ignore[no-untyped-def]
    for name in ("LOOM_SUBJECT", "LOOM_SUBJECT_PROFILE", "LOOM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    app.executor.subject = ProviderSubject(BUILTIN_PROFILES["local"])
    return app


def made(app, result) -> list[Node]:  # type: ignore[no-untyped-def]
    assert result.ok, result.text
    return [app.ws.node(i) for i in result.data["created"]]


def test_a_yes_no_grammar_makes_the_model_answer_only_that(local):
    tree = local.ws.create_tree("Grammar", "buffer",
                                root_content="Question: Is the sea salty?\nAnswer:")
    result = local.executor.execute(f"→ continue n:4 tokens:8 temperature:1.5 {YES_NO}",
                                    local.actor(tree))
    answers = [n.content for n in made(local, result)]
    assert len(answers) == 4 and set(answers) <= {" yes", " no"}, answers
    bad = local.executor.execute('→ continue grammar:"root ::= ("', local.actor(tree))
    assert bad.text.startswith("✗ MODEL_ERROR: ") and "grammar" in bad.text, bad.text
    assert len(local.ws.children(local.ws.node(tree.root))) == 4  # nothing more written


def test_top_k_1_samples_the_likeliest_token_every_time(local):
    tree = local.ws.create_tree("Top k", "buffer", root_content="The lighthouse keeper")
    free = made(local, local.executor.execute("→ continue n:3 tokens:16 temperature:2",
                                              local.actor(tree)))
    assert len({n.content for n in free}) > 1  # hot sampling parts ways…
    greedy = made(local, local.executor.execute(
        "→ continue from root n:3 tokens:16 temperature:2 top_k:1", local.actor(tree)))
    assert len({n.content for n in greedy}) == 1  # …one token to choose from does not


def test_banned_strings_are_never_sampled(local):
    tree = local.ws.create_tree("Banned", "buffer", root_content="The cat sat on the")

    def tokens(node: Node) -> list[str]:
        data = token_store.tokens(local.ws, node)
        assert data is not None
        return [t.text for t in data]

    (plain,) = made(local, local.executor.execute("→ continue tokens:8 temperature:0",
                                                  local.actor(tree)))
    assert " cat" in tokens(plain)  # the greedy text says it…
    (banned,) = made(local, local.executor.execute(
        '→ continue from root tokens:8 temperature:0 banned:"cat"', local.actor(tree)))
    assert not {" cat", "cat"} & set(tokens(banned)), tokens(banned)  # …banned, never
    assert banned.content != plain.content


def test_the_other_samplers_are_taken_by_the_server(local):
    """DRY, XTC, mirostat, typical, the penalties and an extra key of llama.cpp's: the
    server takes each (an option it did not know, or a value of the wrong type, is its
    400), and the continuation is written."""
    tree = local.ws.create_tree("Samplers", "buffer", root_content="Once upon a time")
    for options in ("dry:0.8 dry_base:1.75 dry_allowed_length:2",
                    "xtc_probability:0.5 xtc_threshold:0.1",
                    "mirostat:2 mirostat_tau:5 mirostat_eta:0.1",
                    "typical_p:0.9 repeat_penalty:1.1 frequency_penalty:0.3 "
                    "presence_penalty:0.2 min_p:0.05",
                    'extra:"top_n_sigma:1.5,repeat_last_n:32"'):
        result = local.executor.execute(f"→ continue from root tokens:8 {options}",
                                        local.actor(tree))
        (node,) = made(local, result)
        assert node.content, options
    wrong = local.executor.execute('→ continue from root extra:"repeat_last_n:\\"many\\""',
                                   local.actor(tree))
    assert wrong.text.startswith("✗ MODEL_ERROR: ") and "repeat_last_n" in wrong.text, \
        wrong.text
