"""The offline key-phrase extractor behind ``Main themes:`` (render/keywords.py)."""

from __future__ import annotations

from loom.render.keywords import themes

MARIE = [
    "The way I see it, Marie's reluctance stems from her childhood—specifically the summer "
    "her father left. The immediate conflict with Thomas is just triggering that old wound.",
    "Building on the childhood trauma theme, Marie's motivation is shaped by her father "
    "leaving. Character motivation matters here.",
    "Her relationship patterns repeat: trust, dependence, abandonment. Relationship patterns "
    "with Thomas echo the childhood trauma.",
]


def test_recurring_phrases_are_the_themes() -> None:
    assert themes(MARIE) == ["childhood trauma", "relationship patterns", "father"]


def test_names_stopwords_and_contractions_are_not_themes() -> None:
    found = themes(MARIE, k=10)
    assert not {"marie", "thomas", "marie's"} & {w for p in found for w in p.split()}
    assert all(p and p == p.lower() and len(p.split()) <= 3 for p in found)
    assert themes(["She hadn't visited. It wasn't there."]) == ["visited"]


def test_themes_are_deterministic_and_share_no_word() -> None:
    texts = ["The house stood empty at the end of the lane.",
             " She hadn't visited since her mother's death,",
             " Inside, the kitchen smelled of cold ash and lavender."]
    first = themes(texts)
    assert first == themes(list(texts)) == ["mother's death", "cold ash", "kitchen smelled"]
    words = [w for p in first for w in p.split()]
    assert len(words) == len(set(words))


def test_empty_and_markup_only_texts() -> None:
    assert themes([]) == [] and themes(["", "  "]) == []
    assert themes(["# ## ---", "︱›"]) == []
