"""The optional model classifier: a Loom-Protocol answer becomes a command the grammar
accepts, or nothing; never a guess the grammar would refuse."""

from __future__ import annotations

from loom.commands import syntax
from loom.commands.grammar import parse
from loom.llm.classifier import ModelClassifier, answer_to_line

SEED_STYLE = """intent: annotate
confidence: 0.92
reasoning: User wants to leave a note on a node
extractedEntities:
  node: a7x2
  content: the tone shifts here"""


def test_seed_style_answer_becomes_a_command() -> None:
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return SEED_STYLE

    classifier = ModelClassifier(ask)
    result = parse("→ scribble on a7x2 that the tone shifts here", classifier=classifier)
    assert result == syntax.Annotate(node="a7x2", content="the tone shifts here")
    assert "Request: scribble on a7x2 that the tone shifts here" in prompts[0]


def test_low_confidence_unknown_or_garbage_is_refused() -> None:
    for reply in ("intent: view\nconfidence: 0.3\n", "intent: UNKNOWN\nconfidence: 0.99\n",
                  "this is not the protocol at all: {", ""):
        result = parse("→ scribble on a7x2", classifier=ModelClassifier(lambda p, r=reply: r))
        assert isinstance(result, syntax.ParseError), reply


def test_answer_to_line_forms() -> None:
    assert answer_to_line({"intent": "continue", "confidence": 0.9,
                           "extractedEntities": {"node": "b3k9", "n": 3}}) == \
        "→ continue from b3k9 n:3"
    assert answer_to_line({"intent": "switch", "confidence": "0.8",
                           "extractedEntities": {"node": "b3k9"}}) == "→ switch to b3k9"
    assert answer_to_line({"intent": "view", "confidence": "high"}) is None


def test_the_composition_root_wires_the_model_classifier_only_when_asked(
        tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from loom.app import open_app

    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "none.toml"))  # builtin profiles only
    monkeypatch.delenv("LOOM_CLASSIFIER", raising=False)
    assert open_app(tmp_path / "a.db", use_default_subject=False).executor.classifier is None
    monkeypatch.setenv("LOOM_CLASSIFIER", "on")
    wired = open_app(tmp_path / "b.db", use_default_subject=False).executor.classifier
    assert isinstance(wired, ModelClassifier)
