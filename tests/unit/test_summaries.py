"""The summary queue: what gets queued, what the worker writes, retries, bounds, restarts.

The provider here is a scripted stand-in for the provider interface (the real SDKs and the
real local model are exercised in tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.llm.base import ChatMessage, Completion, GenerationResult, ModelError
from loom.llm.config import ModelProfile
from loom.llm.summaries import SummaryWorker, clean, parse_tree_answer
from loom.store.db import open_database
from loom.store.schema import Node, SummaryJob
from loom.store.workspace import Workspace

PROFILE = ModelProfile(name="scripted", provider="openai-compatible", model="scripted",
                       base_url="http://127.0.0.1:9")


class Scripted:
    """Answers chat() with queued texts or errors, recording the prompts."""

    name = "scripted"

    def __init__(self, answers: list[str | ModelError]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    def __call__(self, profile: ModelProfile) -> Scripted:
        return self

    async def chat(self, messages: list[ChatMessage], sampling: object = None,
                   **kw: object) -> GenerationResult:
        self.prompts.append(messages[-1].content)
        answer = self.answers.pop(0) if self.answers else "A summary."
        if isinstance(answer, ModelError):
            raise answer
        return GenerationResult(completions=[Completion(index=0, text=answer)],
                                model="scripted", provider="scripted", latency_ms=1.0)


def _ws(tmp_path: Path) -> Workspace:
    return Workspace(open_database(tmp_path / "loom.db"))


def test_new_nodes_are_queued_and_summarized_with_the_seed_template(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    tree = ws.create_tree("Marie Character Study", "dialogue", root_content="Start.")
    a = ws.add_node(tree, ws.node(tree.root), "Marie hesitates at the door of the house.",
                    ws.human())
    b = ws.add_node(tree, a, "Her reluctance stems from her childhood.", ws.subject())
    ws.add_node(tree, b, "a note", ws.human(), kind="annotation")
    assert [j.entity for j in SummaryJob.select().order_by(SummaryJob.id)] == [a.id, b.id]
    assert Node.get_by_id(b.id).summary_source == "extractive"
    scripted = Scripted(["Summary: Marie hesitates.", '"Childhood explains her reluctance."'])
    worker = SummaryWorker(ws, PROFILE, scripted)
    assert worker.run_once(limit=10) == 2
    assert Node.get_by_id(b.id).summary == "Childhood explains her reluctance."
    assert Node.get_by_id(b.id).summary_source == "model"
    prompt = scripted.prompts[1]
    assert prompt.startswith("Given this conversation context:\n---\nTree: Marie Character "
                             "Study\nPrevious: ")
    assert "Marie hesitates." in prompt  # the parent's (model) summary
    assert "Start." in prompt  # a short node gets its grandparent too
    assert prompt.endswith("Message: Her reluctance stems from her childhood.")
    assert worker.pending() == 0


def test_tree_summary_every_ten_nodes_with_structured_answer(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    tree = ws.create_tree("Story", "buffer", root_content="Once.", description="a test")
    parent = ws.node(tree.root)
    for i in range(10):
        parent = ws.add_node(tree, parent, f" Sentence {i}.", ws.human())
    assert SummaryJob.select().where(SummaryJob.kind == "tree").count() == 1
    answers = ["x"] * 10 + ["summary: A story told in ten steps. It tests.\n"
                            "themes: counting, patience"]
    SummaryWorker(ws, PROFILE, Scripted(answers)).run_once(limit=20)
    tree = ws.tree(tree.id)
    assert tree.summary == "A story told in ten steps. It tests."
    assert tree.themes == ["counting", "patience"] and tree.summary_counter == 0


def test_document_summary_after_editing(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    doc = ws.create_document("notes", "# Notes\n\nAbout Marie.")
    ws.save_document(doc, "# Notes\n\nAbout Marie and Thomas.")
    SummaryWorker(ws, PROFILE, Scripted(["Notes about Marie and Thomas."])).run_once()
    assert ws.document("notes").summary == "Notes about Marie and Thomas."


def test_failures_retry_then_give_up_and_keep_the_extractive_summary(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    tree = ws.create_tree("T", "buffer", root_content="R.")
    node = ws.add_node(tree, ws.node(tree.root), " Words here.", ws.human())
    error = ModelError("server", "boom", retryable=True)
    worker = SummaryWorker(ws, PROFILE, Scripted([error, error, error]))
    for attempt in range(3):
        SummaryJob.update(not_before=0).execute()  # skip the backoff wait
        assert worker.run_once() == 0
        assert worker.pending() == (1 if attempt < 2 else 0)
    assert Node.get_by_id(node.id).summary_source == "extractive"


def test_no_model_stops_the_worker_and_keeps_the_queue(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    tree = ws.create_tree("T", "buffer", root_content="R.")
    ws.add_node(tree, ws.node(tree.root), " Words.", ws.human())
    worker = SummaryWorker(ws, PROFILE, Scripted([ModelError("unavailable", "no model")]))
    assert worker.run_once() == 0 and worker.unavailable == "no model"
    assert worker.pending() == 1  # kept for when a model can run


def test_queue_is_bounded_and_survives_a_restart(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    ws.summary_queue_limit = 3
    tree = ws.create_tree("T", "buffer", root_content="R.")
    parent = ws.node(tree.root)
    for i in range(6):
        parent = ws.add_node(tree, parent, f" {i}.", ws.human())
    assert SummaryJob.select().count() == 3
    assert ws.enqueue_summary("node", parent.id, tree.id, priority=0)  # urgent work still fits
    ws.db.close()
    again = Workspace(open_database(tmp_path / "loom.db"))
    assert SummaryWorker(again, PROFILE, Scripted([])).pending() == 4


def test_clean_and_parse() -> None:
    assert clean("Capture the key point, action, or decision: She stops.") == "She stops."
    assert clean("Be specific, not generic.") == ""
    assert parse_tree_answer("Just prose about the tree.") == ("Just prose about the tree.",
                                                               None)


def test_the_bundled_model_alone_writes_no_summaries(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled 135M model's summaries were wrong and shown as the node's text.
    Unconfigured, it is not asked: summaries stay extractive (first sentence)."""
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "none.toml"))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LOOM_SUMMARY_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOOM_NO_KEYRING", "1")
    ws = Workspace(open_database(tmp_path / "loom.db"))
    tree = ws.create_tree("T", root_content="Root.")
    node = ws.add_node(tree, ws.node(tree.root), "The windows watched her. Then rain.",
                       ws.human())
    asked: list[str] = []

    def factory(profile):  # type: ignore[no-untyped-def]
        asked.append(profile.model)
        raise AssertionError("the bundled model must not be asked")

    worker = SummaryWorker(ws, provider_factory=factory)
    assert worker.run_once(limit=5) == 0 and asked == []
    assert worker.unavailable and "extractive" in worker.unavailable
    stored = ws.node(node.id)
    assert (stored.summary, stored.summary_source) == ("The windows watched her.", "extractive")
    # configured by name, it is the user's choice and is used
    (tmp_path / "cfg.toml").write_text('[defaults]\nsummary = "local"\n', encoding="utf-8")
    monkeypatch.setenv("LOOM_CONFIG", str(tmp_path / "cfg.toml"))
    assert SummaryWorker(ws, provider_factory=factory).unavailable is None


def test_tree_answers_keep_whole_sentences_and_list_themes() -> None:
    """A model stopped by its 50-token limit mid-sentence leaves a fragment: it is not
    stored. ``themes: grief`` is a one-theme list (seed 004's single-item inline list)."""
    assert parse_tree_answer(
        "summary: A story of return. It weighs grief against decision-making. The\n"
        "themes: grief, return") == ("A story of return. It weighs grief against "
                                     "decision-making.", ["grief", "return"])
    assert parse_tree_answer("summary: One whole sentence.\nthemes: grief") == (
        "One whole sentence.", ["grief"])
    assert parse_tree_answer("This tree explores how Marie weighs her past and her") == (
        "", None)  # no whole sentence: nothing usable
