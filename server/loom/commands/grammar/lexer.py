"""Step 1 of parsing, lexing: a command's body cut into tokens (words, quoted strings
with their escapes, ``key:value`` options, ``[id]`` references, ``§id`` sections), and the
shapes of the values the later steps recognise (node references, numbers, line ranges, a
``think`` line).

``slot_at`` cuts a line being typed with the same ``TOKEN`` pattern, so completion sees the
tokens ``parse`` sees.
"""

from __future__ import annotations

import re

from loom.commands.grammar.results import Fail
from loom.commands.lexicon import ARROW_CHARS

#: One token: an optional ``key:`` (or ``key =``) and a quoted value, or a bare word.
TOKEN = re.compile(
    r"""\s*(?P<tok>
        (?:(?P<key>[A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)[ \t]*[:=][ \t]*)?
        (?: "(?P<dq>(?:[^"\\]|\\.)*)"
          | “(?P<cq>(?:[^”\\]|\\.)*)”
          | «(?P<gq>[^»]*)»
          | '(?P<sq>(?:[^'\\]|\\.|'(?=\w))*)'(?!\w)
          | ‘(?P<csq>(?:[^’\\]|\\.|’(?=\w))*)’(?!\w)
        )
      | (?P<word>[^\s"“«]+)
    )""",
    re.S | re.X,
)
_ESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPED = {
    "n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "”": "”", "’": "’",
}
#: ``key:value`` or ``key=value`` written as one word.
KV = re.compile(r"([A-Za-z][\w-]*)[:=](.*)", re.S)
#: Punctuation a word loses at its end (``TAIL``) and its start (``HEAD``).
TAIL = ".,;!?…”»)]}>`*"
HEAD = "([{<`*#"
_PUNCT_ONLY = "-—–:=↔|/&+~*" + ARROW_CHARS
_REF = re.compile(r"(?:[0-9a-hjkmnp-tv-z]{3,}|\d+(?:\.\d+)*|ann-\d+|root)'*")
SHORT_ID = re.compile(r"(?=.*\d)[0-9a-hjkmnp-tv-z]{1,2}")  # an id cut too short: "1v"
_ID = re.compile(r"[\w.’'-]+")  # what may stand in brackets as a node id
#: A whole number, a number, and a line range (``1-50``, ``1..50``) as values.
INT = re.compile(r"[+-]?\d+")
FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?", re.I)
RANGE = re.compile(r"(\d+)\s*(?:-|–|\.\.|:)\s*(\d+)")
#: A ``think`` line (politeness allowed before it): its text is read whole, not lexed.
THINK = re.compile(
    r"(?:(?:please|kindly|ok(?:ay)?|now|so|just|let'?s|let\s+me|i'?ll|i\s+will"
    r"|i'?d\s+like\s+to|i\s+want\s+to)[\s,]+)*"
    r"(?:think|thinking|reflect|ponder|thoughts?)(?![\w'’-]):?[ \t]?(?P<rest>.*)",
    re.I | re.S,
)

#: A token: (option key or None, value, quoted?, start, end) — plain tuples are fastest.
Tok = tuple[str | None, str, bool, int, int]


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    # An unknown escape (``C:\path``) keeps its backslash.
    return _ESCAPE.sub(lambda m: _ESCAPED.get(m.group(1), m.group(0)), value)


def tokenize(body: str) -> list[Tok] | Fail:
    """Split ``body`` (stripped) into words, quoted strings and options."""
    toks: list[Tok] = []
    pos, end = 0, len(body)
    match_at = TOKEN.match
    while pos < end:
        m = match_at(body, pos)
        if m is None:
            return _unterminated(body, pos)
        pos = m.end()
        _, key, dq, cq, gq, sq, csq, word = m.groups()
        if word is None:
            if dq is not None:
                value = _unescape(dq)
            elif cq is not None:
                value = _unescape(cq)
            elif gq is not None:
                value = gq
            else:
                value = _unescape(sq if sq is not None else csq)
            toks.append((key.lower() if key else None, value, True, m.start("tok"), pos))
            continue
        if word[0] in "'‘":
            return _unterminated(body, m.start("word"))
        start = m.start("word")
        core = word.rstrip(".,;:!?…")
        if len(core) > 2 and core[0] == "[" and core[-1] == "]" and _ID.fullmatch(core[1:-1]):
            toks.append((REF_TOKEN, core[1:-1].lower().replace("’", "'"), False, start, pos))
            continue
        w = word.rstrip(TAIL).lstrip(HEAD).rstrip(TAIL)
        if not w or not w.strip(_PUNCT_ONLY):
            continue
        if w[0] == "§" and len(w) > 1:
            toks.append(("section", w[1:], False, start, pos))
            continue
        kv = KV.fullmatch(w)
        if kv is not None:
            toks.append((kv.group(1).lower(), kv.group(2), False, start, pos))
        elif w := w.rstrip(":"):
            toks.append((None, w, False, start, pos))
    return toks


def _unterminated(body: str, pos: int) -> Fail:
    fragment = " ".join(body[pos:].split())
    return Fail(
        f"unterminated quote: {fragment[:30]}{'…' if len(fragment) > 30 else ''}",
        hint='close the quote; write a quote inside quoted text as \\"',
    )


REF_TOKEN = "#ref"  #: the key of a ``[id]`` token: a node reference, whatever it spells


def norm_ref(word: str) -> str | None:
    """``word`` as a node reference (lowercase, prime kept), or None."""
    w = word.lower().replace("’", "'").lstrip("#")
    if _REF.fullmatch(w):
        return w
    if w.endswith("'s") and _REF.fullmatch(w[:-2]):
        return w[:-2]
    return None
