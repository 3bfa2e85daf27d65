"""A chat model used as a base model: its reply cut to start exactly where the text stops.

Asked to continue a text, a chat model tends to open with a preamble ("Sure, here's the
continuation:"), with an ellipsis, or by restating the end of the text it was given. A
base model does none of this, and a loom's continuation must read on from the last
character of its parent. :func:`start_cut` says where the continuation proper begins,
judging from the reply's first :data:`LOOKAHEAD` characters only, so a stream can be cut
the same way (:class:`StartCutter`) as the whole reply (:func:`continuation`).

The join is a base model's too: after a text that ends in a word, a reply that starts
with a word gets the space a chat model leaves out; after a text that ends in whitespace,
the reply's own leading whitespace goes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: How much of a reply the cut may look at: a preamble and a restated sentence fit in it.
LOOKAHEAD = 400

# A preamble: a chat model's opening words, closed by the colon, line break or sentence
# end after them ("Sure! Here's the continuation:", "Certainly.\n", "Continuing:"). An
# opener followed by prose ("Sure enough, the stairs…", "Okay, so she…") is no preamble.
_HERE = r"here(?:'s|\ is|\ are)\b[^\n:]{0,120}?(?:continu\w*|next|rest|story|text|passage|part)" \
    r"[^\n:]{0,60}?(?::[ \t]*\n*|\n+)"
_PREAMBLE = re.compile(
    rf"""\s*(?:
        (?:sure|certainly|of\ course|okay|ok|absolutely|alright|great|happy\ to\ help)
            (?:[!.:][ \t]*\n*(?:{_HERE})?|,?[ \t]*{_HERE})
      | {_HERE}
      | (?:continuing|continued|continuation|i'll\ continue|let\ me\ continue)
            [^\n:]{{0,60}}?(?::[ \t]*\n*|\.[ \t]*\n+)
      | \((?:continued|continuing)\)[ \t]*\n*
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# What a preamble may start with: while a reply is no more than this, it may be one.
_OPENERS = ("sure", "certainly", "of course", "okay", "ok", "absolutely", "alright", "great",
            "happy to help", "here", "continu", "i'll continue", "let me continue",
            "(continu")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s?")
# A restatement must be this long to be cut (shorter overlaps are a base model's too).
_MIN_RESTATED = 12


def _norm(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with whitespace runs as one space, and each kept character's
    index in ``text``."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            where.append(i - 1)
            space = False
        out.append(ch.lower())
        where.append(i)
    return "".join(out), where


def _tail_starts(prompt: str) -> list[str]:
    """The ends of ``prompt`` a reply might restate: from each word start of its last
    sentence (and a little before it), longest first, normalised."""
    tail, _ = _norm(prompt[-LOOKAHEAD:])
    starts = [0] + [m.end() for m in re.finditer(r" ", tail)]
    return [tail[i:] for i in starts if len(tail) - i >= _MIN_RESTATED]


def start_cut(prompt: str, reply: str, *, final: bool) -> int | None:
    """Where the continuation proper starts in ``reply`` (a preamble, an ellipsis and a
    restatement of the prompt's end before it); None while ``reply`` is too short to
    tell and more may come (``final`` False)."""
    head = reply[:LOOKAHEAD]
    undecided = not final and len(head) < LOOKAHEAD
    cut = 0
    m = _PREAMBLE.match(head)
    if m is not None and m.end() > 0 and head[:m.end()].strip():
        cut = m.end()
        if undecided and _may_open(head[cut:].lstrip().lower()):
            return None  # "Sure! " and then, perhaps, "Here's the continuation:"
    elif undecided and _may_open(head.lstrip().lower()):
        return None  # the start of a preamble, or of a sentence that begins so
    if undecided and head[cut:].strip() in (".", ".."):
        return None  # perhaps an ellipsis
    e = _ELLIPSIS.match(head, cut)
    if e is not None and e.end() > cut and head[cut:e.end()].strip():
        cut = e.end()
    said, where = _norm(head[cut:])
    if not said:
        return None if undecided else cut
    for end in _tail_starts(prompt):
        if said.startswith(end):
            return cut + where[len(end) - 1] + 1
        if undecided and end.startswith(said):
            return None  # it may be restating the end of the text
    return cut


def _may_open(opening: str) -> bool:
    """Whether a preamble may still be arriving: the reply is the start of an opener, or
    an opener whose closing mark has not come (and not too long ago)."""
    for o in _OPENERS:
        if o.startswith(opening):
            return True
        if opening.startswith(o):
            after = opening[len(o):]
            return len(after) < 160 and not re.search(r"[.!:\n]", after)
    return False


def joined(prompt: str, text: str) -> str:
    """``text`` as it follows ``prompt`` in a base model's continuation."""
    if not prompt or not text:
        return text
    if prompt[-1].isspace():
        return text.lstrip(" \t")
    if text[0].isalnum() and (prompt[-1].isalnum() or prompt[-1] in ".,;:!?\"')"):
        return " " + text
    return text


def continuation(prompt: str, reply: str) -> str:
    """A chat model's whole ``reply`` as the continuation of ``prompt``."""
    out: list[str] = []
    cutter = StartCutter(prompt, out.append)
    cutter.feed(reply)
    cutter.flush()
    return "".join(out)


class StartCutter:
    """One stream's pieces, held until :func:`start_cut` can tell where the continuation
    starts, then released joined to the prompt as a base model's would be. What it
    delivers is the continuation: a provider stores the same text it streamed."""

    __slots__ = ("_cut", "_deliver", "_held", "_joining", "_prompt", "_started")

    def __init__(self, prompt: str, deliver: Callable[[str], None]) -> None:
        self._prompt = prompt
        self._deliver = deliver
        self._held = ""
        self._started = False
        self._joining = True  # the join waits for the first text that is not dropped
        self._cut = False

    def feed(self, piece: str) -> None:
        if self._started:
            self._out(piece)
            return
        self._held += piece
        cut = start_cut(self._prompt, self._held, final=False)
        if cut is not None:
            self._release(cut)

    def flush(self) -> None:
        """The end of the stream: what is still held, cut."""
        if not self._started:
            self._release(start_cut(self._prompt, self._held, final=True) or 0)

    def _release(self, cut: int) -> None:
        self._started = True
        self._cut = cut > 0
        rest, self._held = self._held[cut:], ""
        self._out(rest)

    def _out(self, text: str) -> None:
        if self._joining:
            if self._cut:
                text = text.lstrip("\n")  # the line break that ended a preamble
            text = joined(self._prompt, text)
            self._joining = not text
        if text:
            self._deliver(text)
