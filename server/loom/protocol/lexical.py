"""Lexical rules shared by the encoder and the decoder: literals, quoting, separators.

The encoder quotes every string the decoder would otherwise read differently, so the
predicates here are the single source of truth for "is this safe to write plain?".
"""

from __future__ import annotations

import json
import re
from enum import Enum

MAX_DEPTH = 128
"""Levels of nesting the codec reads and writes. Each level is a few Python frames, so a
bound well inside the interpreter's recursion limit makes a deeper value a clear error
(``nests more than 128 levels``) rather than a RecursionError that depends on the caller."""
SEP = ", "
"""Separates the items of an inline array (the seed's ``tags: urgent, daily, automated``)."""

CELL_SEP = ","
"""Separates the cells of a table row and the columns of its header, as in CSV."""

BLOCK_CLIP = "|"
"""Block string whose value ends with exactly one newline."""

BLOCK_STRIP = "|-"
"""Block string whose value has no trailing newline."""

LITERALS: dict[str, bool | None] = {"null": None, "true": True, "false": False}

NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""JSON's number grammar; an integer when it has neither fraction nor exponent."""

# Characters that never appear raw outside a quoted string: C0/C1 controls, DEL, the
# Unicode line and paragraph separators (editors and models break lines there) and lone
# surrogates (not encodable as UTF-8).
UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# Characters that json.dumps(ensure_ascii=False) leaves raw but we escape anyway.
_EXTRA_ESCAPE_RE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")

COMMENT_RE = re.compile(r"(?:^|\s)#(?:\s|$)")
"""What lenient decoding takes for an inline comment: ``#`` after whitespace, then space."""

FENCE = "```"


class Ctx(Enum):
    """Where a plain string is written; each context adds its own restrictions."""

    VALUE = "value"  # after "key: ", or inside [...]
    CELL = "cell"  # a table cell (split on ","; a row must not read as a comment)
    ITEM = "item"  # after "- " (must not read as "key: value")
    TOP = "top"  # a top-level scalar line (must not read as a key, a comment or a fence)


def quote(s: str) -> str:
    """JSON double-quoted string; also escapes DEL, C1, U+2028/2029, BOM and surrogates."""
    q = json.dumps(s, ensure_ascii=False)
    if _EXTRA_ESCAPE_RE.search(q):
        q = _EXTRA_ESCAPE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", q)
    return q


def looks_like_literal(s: str) -> bool:
    """True for strings a reader could take for null, a boolean or a number."""
    if s.lower() in LITERALS or NUMBER_RE.fullmatch(s):
        return True
    if s[0] not in "0123456789+-.iInN" and not s[0].isdigit():
        return False
    try:
        float(s)  # also catches 1_000, .5, +1, nan, inf, Infinity
    except ValueError:
        return False
    return True


def _plain_base(s: str) -> bool:
    if not s or s[0].isspace() or s[-1].isspace():
        return False
    first = s[0]
    if first in '"[{|\ufeff' or (first == "-" and (len(s) == 1 or s[1] == " ")):
        return False
    if SEP in s or UNSAFE_RE.search(s) or ("#" in s and COMMENT_RE.search(s)):
        return False
    return not looks_like_literal(s)


def plain_ok(s: str, ctx: Ctx) -> bool:
    """Can ``s`` be written without quotes in context ``ctx``?"""
    if not _plain_base(s):
        return False
    if ctx is Ctx.VALUE:
        return True
    if ctx is Ctx.CELL:
        return CELL_SEP not in s and s[0] != "#"
    if ": " in s or s[-1] == ":":
        return False
    return ctx is Ctx.ITEM or (s[0] != "#" and not s.startswith(FENCE))


def scalar_text(s: str, ctx: Ctx) -> str:
    return s if plain_ok(s, ctx) else quote(s)


def key_plain_ok(k: str) -> bool:
    """Can object key ``k`` be written without quotes?"""
    if not k or k[0].isspace() or k[-1].isspace():
        return False
    if k[0] in '"[{#-\ufeff' or k.startswith(FENCE) or k[-1] == ":":
        return False
    if ": " in k or '"' in k or UNSAFE_RE.search(k):
        return False
    return not ("#" in k and COMMENT_RE.search(k))


def column_plain_ok(k: str) -> bool:
    """Can ``k`` be written without quotes in a table header ``{a,b}``?"""
    return key_plain_ok(k) and CELL_SEP not in k


def scan_quoted(text: str, start: int) -> int:
    """Index just past the closing quote of the string opening at ``start``; -1 if none."""
    i = start + 1
    n = len(text)
    while i < n:
        j = text.find('"', i)
        if j < 0:
            return -1
        # an odd run of backslashes before the quote escapes it
        k = j - 1
        while k >= i and text[k] == "\\":
            k -= 1
        if (j - 1 - k) % 2 == 0:
            return j + 1
        i = j + 1
    return -1
