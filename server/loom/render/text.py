"""Small text helpers shared by the renderers: times, counts, previews, summaries."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s")
_WS = re.compile(r"\s+")


def relative_time(then: float, now: float) -> str:
    """``3m ago`` style, as in the seeds' metadata lines."""
    s = max(0.0, now - then)
    if s < 60:
        return "just now"
    for size, unit in ((31_536_000, "y"), (2_592_000, "mo"), (604_800, "w"), (86_400, "d"),
                       (3_600, "h"), (60, "m")):
        if s >= size:
            return f"{int(s // size)}{unit} ago"
    return "just now"  # pragma: no cover


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def thousands(n: int) -> str:
    return f"{n:,}"


_WORD = re.compile(r"\S*\w\S*")


def word_count(text: str) -> int:
    """Words as a reader counts them: Markdown markers such as ``#`` and ``-`` are not words."""
    return len(_WORD.findall(text))


def one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()


def preview(text: str, limit: int = 60) -> str:
    """The start of a text on one line, cut at a word boundary with ``...``."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(",;:—-– ") + "..."


def extractive_summary(text: str, max_words: int = 30) -> str:
    """SPEC-NOTES decision 11: the first sentence, at most 30 words."""
    flat = one_line(text)
    if not flat:
        return ""
    m = _SENTENCE_END.search(flat + " ")
    first = flat[: m.start()].strip() if m else flat
    first = first or flat
    words = first.split()
    if len(words) > max_words:
        return " ".join(words[:max_words]) + "…"
    return first


def quote(text: str) -> str:
    """A one-line quoted form, as the seeds quote summaries: ``"…"``."""
    return f'"{one_line(text)}"'
