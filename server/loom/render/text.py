"""Small text helpers shared by the renderers: times, counts, previews, summaries."""

from __future__ import annotations

import re
import time

# A sentence's last mark, closing quotes or brackets, a space (found from the mark: a
# lookbehind tried at every character was a third of a summary's time).
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*\s")
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


def clock_time(t: float) -> str:
    """``2026-11-26 14:02`` (local time): a time that reads the same on every later call,
    where ``3m ago`` changes every minute (a collaborator's context keeps its prefix)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def words(n: int) -> str:
    """``1 word``, ``12,847 words`` (never "1 words")."""
    return f"{thousands(n)} {'word' if n == 1 else 'words'}"


def thousands(n: int) -> str:
    return f"{n:,}"


_WORD = re.compile(r"\S*\w\S*")


def word_count(text: str) -> int:
    """Words as a reader counts them: Markdown markers such as ``#`` and ``-`` are not words."""
    if len(text) < _LARGE:
        return len(_WORD.findall(text))
    return sum(1 for _ in _WORD.finditer(text))  # (no list of a huge text's every word)


#: A text this long is read from its start only where only its start is shown (a preview,
#: the first sentence): splitting a 64 MB node into words took a gigabyte.
_LARGE = 1_000_000
_HEAD = 20_000


def one_line(text: str) -> str:
    # str.split() splits on exactly what \s matches (Py_UNICODE_ISSPACE), at a third of
    # the regular expression's cost: an import summarises every node.
    return " ".join(text.split())


def preview(text: str, limit: int = 60) -> str:
    """The start of a text on one line, cut at a word boundary with ``...``."""
    flat = one_line(text if len(text) < _LARGE else text[:_HEAD])
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(",;:—-– ") + "..."


def extractive_summary(text: str, max_words: int = 30) -> str:
    """SPEC-NOTES decision 11: the first sentence, at most 30 words."""
    if len(text) >= _LARGE:
        text = text[:_HEAD]  # 30 words and a sentence's end are well within it
    words = text.split()
    if not words:
        return ""
    flat = " ".join(words)  # one_line(text)
    m = _SENTENCE_END.search(flat + " ")
    first = flat[: m.start() + 1].strip() if m else flat  # (up to the mark, included)
    first = first or flat
    if len(words) <= max_words:  # first, a part of flat, has no more words than it
        return first
    words = first.split()
    if len(words) > max_words:
        return " ".join(words[:max_words]) + "…"
    return first


_FENCE = re.compile(r"\s{0,3}(```|~~~)")
_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_RULE = re.compile(r"(?:[-*_=]\s*){3,}")
_QUOTE_MARK = re.compile(r"^(?:>\s?)+")
_ITEM_MARK = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(\*\*|\*|~~|(?<!\w)__|(?<!\w)_)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")


def markdown_prose(text: str) -> list[str]:
    """The prose paragraphs of a Markdown text, each on one line: headings, code blocks,
    rules and HTML tags left out; list and quote markers, emphasis and link syntax
    removed (the words stay)."""
    paragraphs: list[str] = []
    current: list[str] = []
    fence: str | None = None

    def end() -> None:
        if current:
            paragraphs.append(one_line(" ".join(current)))
            current.clear()

    for raw in text.split("\n"):
        m = _FENCE.match(raw)
        if m is not None:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            end()
            continue
        line = raw.strip()
        if fence is not None:
            continue
        if not line or _HEADING.match(line) or _RULE.fullmatch(line):
            end()
            continue
        line = _ITEM_MARK.sub("", _QUOTE_MARK.sub("", line))
        line = _LINK.sub(lambda g: g.group(1) or g.group(2), _IMAGE.sub(r"\1", line))
        line = _TAG.sub("", _CODE.sub(r"\1", line))
        while (plain := _EMPHASIS.sub(r"\2", line)) != line:
            line = plain
        if line.strip():
            current.append(line)
    end()
    return paragraphs


def document_summary(text: str, max_words: int = 30) -> str:
    """SPEC-NOTES decision 11 for a Markdown document: the first sentence of its first
    prose paragraph (no ``#`` or other Markdown syntax), at most 30 words."""
    paragraphs = markdown_prose(text)
    return extractive_summary(paragraphs[0], max_words) if paragraphs else ""


_WHOLE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*(?=\s|$)")


def whole_sentences(text: str) -> str:
    """The complete sentences of ``text`` on one line, without a trailing fragment (a
    model stopped by its token limit mid-sentence); "" when there is no complete one."""
    flat = one_line(text)
    ends = [m.end() for m in _WHOLE_END.finditer(flat)]
    return flat[: ends[-1]].strip() if ends else ""


def quote(text: str) -> str:
    """A one-line quoted form, as the seeds quote summaries: ``"…"``."""
    return f'"{one_line(text)}"'


def odds(p: float) -> str:
    """A probability as a person reads it: ``23%``, ``0.41%``, ``1 in 52,000`` (two
    significant figures)."""
    if p >= 0.1:
        return f"{p:.0%}"
    if p >= 0.001:
        return f"{p:.2%}"
    if p <= 0:
        return "0"
    ratio = 1 / p
    digits = max(0, len(str(int(ratio))) - 2)
    return f"1 in {round(ratio, -digits):,.0f}"


def whole_words(text: str, start: int, end: int, lo: int = 0, hi: int | None = None
                ) -> tuple[int, int]:
    """``[start, end)`` widened to the whole words it touches (inside ``[lo, hi)``), the
    spaces at its ends left out: a token " f" of "fjord" is the word "fjord"."""
    hi = len(text) if hi is None else hi
    while start < end and text[start].isspace():
        start += 1
    while start > lo and text[start - 1].isalnum():
        start -= 1
    while end < hi and end > start and text[end].isalnum():
        end += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
