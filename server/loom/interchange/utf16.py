"""Text as JavaScript counts it (UTF-16 code units), for the looms written in JavaScript
whose offsets and patches count that way (MiniLoom's diff-match-patch)."""

from __future__ import annotations

import re

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def to_units(text: str) -> str:
    """``text`` as JavaScript sees it: each character beyond U+FFFF as its two UTF-16
    surrogates, so that diff-match-patch counts and splits as MiniLoom's does."""
    if not _ASTRAL.search(text):
        return text

    def pair(m: re.Match[str]) -> str:
        v = ord(m.group()) - 0x10000
        return chr(0xD800 + (v >> 10)) + chr(0xDC00 + (v & 0x3FF))

    return _ASTRAL.sub(pair, text)


def from_units(text: str) -> str:
    """Back from UTF-16 units: surrogate pairs become their character; a lone half (a patch's
    context cut inside a character) stays, for JSON to escape."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def has_lone_half(text: str) -> bool:
    """Whether ``text`` holds half of a surrogate pair (UTF-8 cannot hold it)."""
    return bool(_SURROGATE.search(text))


def escape_lone_halves(text: str) -> str:
    """Each lone half of a surrogate pair as a ``\\uXXXX`` escape, as ``JSON.stringify``
    writes it (for text that is JSON already)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
