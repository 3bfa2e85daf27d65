"""Completion slots: ``slot_at(line, col)`` asks the lexer, the verb finding and the
argument scan what is being typed at a column (the verb, a node reference, a flag, an option
or its value, a document…), so that completion offers what ``parse`` would accept there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from loom.commands.grammar.lexer import HEAD, KV, TOKEN, Tok, tokenize
from loom.commands.grammar.results import Fail
from loom.commands.grammar.scan import scan
from loom.commands.grammar.verbs import find_verb, skip_polite
from loom.commands.grammar.vocabulary import SPECS
from loom.commands.lexicon import (
    ValueKind,
    flags,
    option_key,
    options,
    quoted_kind,
    split_line,
    takes_nodes,
    value_kind,
)

#: What may be typed in a slot: a verb, a tool name (``help``'s argument), a node
#: reference, a flag, an option name, an option's value, a document, a tree, a stash
#: label, a section, or free text in quotes.
SlotKind = Literal[
    "verb", "tool", "node", "flag", "option", "value", "doc", "tree", "stash", "section",
    "text", "model", "preset",
]


@dataclass(frozen=True, slots=True)
class Slot:
    """What is being typed at a column of a command line.

    ``start``/``end`` are the line offsets of the whole token being typed (what a
    completion replaces); ``typed`` is its value up to the column. ``head`` is what a
    completion keeps in front of a value (``doc:``, ``from:``, ``summary-of:a7x2-``);
    ``quote`` is the opening quote typed (or ``[`` for a bracketed reference). For a verb
    right after the arrow the range starts at the arrow (``with_arrow``), so a completion
    can write the canonical ``→``.
    """

    kinds: tuple[SlotKind, ...]
    start: int
    end: int
    typed: str
    verb: str | None = None
    key: str | None = None  # the canonical option whose value is typed
    head: str = ""
    quote: str = ""
    with_arrow: bool = False


@dataclass(frozen=True, slots=True)
class _Span:
    """A token of the line as typed: its extent, its key and where its value starts."""

    start: int
    end: int
    key: str | None = None
    key_end: int = -1  # the end of the key's name (before ``:``), -1 without one
    value_start: int = 0
    quote: str = ""
    value_end: int = -1  # where the value ends (before a closing quote or ``]``)


_QUOTE_GROUPS = ("dq", "cq", "gq", "sq", "csq")
_SPACE = re.compile(r"\s*")
_OPEN_KEY = re.compile(r"([A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)[ \t]*[:=][ \t]*")  # as lexer.TOKEN
_PROBE = "\x00"  # a word nobody types: where the argument scan puts it tells the slot


def _spans(text: str) -> list[_Span]:
    """The tokens of ``text`` as the lexer cuts them; an unterminated quote is one last
    token running to the end (the user is typing inside it)."""
    spans: list[_Span] = []
    pos, n = 0, len(text)
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            return spans
        m = TOKEN.match(text, pos)
        word = m.group("word") if m is not None else None
        if m is None or (word is not None and word[0] in "'‘"):
            spans.append(_open_quote(text, pos, spans))
            return spans
        start, end = m.start("tok"), m.end()
        if word is None:
            group = next(g for g in _QUOTE_GROUPS if m.group(g) is not None)
            vs = m.start(group)
            key = m.group("key")
            spans.append(_Span(start, end, key, m.end("key") if key else -1, vs, text[vs - 1],
                               m.end(group)))
        else:
            spans.append(_word_span(word, start, end))
        pos = end


def _open_quote(text: str, pos: int, spans: list[_Span]) -> _Span:
    prev = spans[-1] if spans else None
    key = _OPEN_KEY.fullmatch(text, prev.start, pos) if prev is not None else None
    if prev is not None and key is not None:
        spans.pop()  # ``doc:"char``: the key was lexed as a word of its own
        return _Span(prev.start, len(text), key.group(1), key.end(1), pos + 1, text[pos],
                     len(text))
    return _Span(pos, len(text), None, -1, pos + 1, text[pos], len(text))


def _word_span(word: str, start: int, end: int) -> _Span:
    if word[0] == "§":
        return _Span(start, end, "section", -1, start + 1, "", end)
    head = len(word) - len(word.lstrip(HEAD + "["))
    kv = KV.fullmatch(word[head:])
    if kv is not None:
        key_end = start + head + len(kv.group(1))
        return _Span(start, end, kv.group(1), key_end, key_end + 1, "", end)
    bracket = "[" in word[:head]
    return _Span(start, end, None, -1, start + head, "[" if bracket else "",
                 end - 1 if bracket and word.endswith("]") else end)


# The meaning of a quoted string (not an option's value) for each verb, as the builders
# read it; ``read``'s first string is its document.


def _pending_option(toks: list[Tok], first: int, verb: str, quoted: bool) -> str | None:
    """The option whose value the next token is (``continue from |``), by asking the
    argument scan where a probe token ends up."""
    spec = SPECS[verb]
    if not spec.tool.options:
        return None
    got = scan([*toks, (None, _PROBE, quoted, 0, 0)], first, spec, "")
    if isinstance(got, Fail):
        return None
    return next((k for k, v in got.opts.items() if v == _PROBE), None)


def _slot_kinds(kind: ValueKind) -> tuple[SlotKind, ...]:
    return ("node",) if kind in ("node", "range") else (kind,)


def slot_at(line: str, col: int) -> Slot | None:
    """What is being typed at offset ``col`` of ``line``, or None where nothing can be
    (inside the indentation or the arrow, after an unknown verb, in an unknown option).

    The line is cut by the grammar's own lexer and its verb found as ``parse`` finds it
    (politeness skipped, synonyms and near-misses accepted); the arguments before the
    cursor go through the same scan as when parsing, so ``continue from |`` is the value
    of ``from`` just as ``continue from a7x2`` parses.
    """
    parts = split_line(line)
    base = parts.body_start
    col = max(0, min(col, len(line)))
    if col < base:
        return None
    text, rel = line[base:], col - base
    cur = next((s for s in _spans(text) if s.start <= rel <= s.end), None)
    if cur is None:
        cur = _Span(rel, rel, None, -1, rel, "", rel)
    prefix = text[: cur.start].rstrip()
    toks = tokenize(prefix) if prefix else []
    if isinstance(toks, Fail):
        return None
    typed = text[cur.value_start: max(min(rel, cur.value_end), cur.value_start)]
    here = Slot((), base + cur.start, base + cur.end, typed, quote=cur.quote)
    if skip_polite(toks) == len(toks):
        if cur.key is not None or cur.quote:
            return None
        at_arrow = bool(parts.arrow) and not prefix
        return replace(here, kinds=("verb",), with_arrow=at_arrow,
                       start=len(parts.indent) if at_arrow else here.start)
    found = find_verb(toks)
    if isinstance(found, Fail):
        return None
    verb, first = found
    here = replace(here, verb=verb)
    if verb == "think":
        return replace(here, kinds=("text",))
    if verb == "help":
        return replace(here, kinds=("tool",))
    if cur.key is not None:
        if cur.key_end > cur.start and rel <= cur.key_end:  # still typing the option's name
            return Slot(("option",), base + cur.start, base + cur.value_start - len(cur.quote),
                        text[cur.start:rel], verb=verb)
        key = option_key(verb, cur.key)
        if key is None:
            return None
        kind = value_kind(verb, key)
        head = text[cur.start: cur.value_start - len(cur.quote)]
        if kind == "range" and "-" in typed:  # ``summary-of:A-B``: complete B, keep A
            cut = typed.rindex("-") + 1
            head, typed = head + typed[:cut], typed[cut:]
        return replace(here, kinds=_slot_kinds(kind), key=key, head=head, typed=typed)
    if verb == "recall":
        return replace(here, kinds=("stash",), key="label")
    pending = _pending_option(toks, first, verb, bool(cur.quote))
    if pending is not None:
        return replace(here, kinds=_slot_kinds(value_kind(verb, pending)), key=pending)
    if cur.quote and cur.quote != "[":
        kind = quoted_kind(verb)
        if verb == "read" and not any(t[2] or t[0] == "doc" for t in toks[first:]):
            kind = "doc"
        return replace(here, kinds=_slot_kinds(kind)) if kind is not None else None
    kinds: list[SlotKind] = []
    if takes_nodes(verb):
        kinds.append("node")
    if flags(verb):
        kinds.append("flag")
    if options(verb):
        kinds.append("option")
    return replace(here, kinds=tuple(kinds)) if kinds else None


@dataclass(frozen=True, slots=True)
class Term:
    """An option or a flag of a command line as typed, by its canonical name: what a hover
    explains. ``start``/``end`` are the line offsets of the whole token (``temperature:0.7``,
    ``full``)."""

    kind: Literal["option", "flag"]
    verb: str
    name: str
    start: int
    end: int


def term_at(line: str, col: int) -> Term | None:
    """The option (its name or its value) or the flag at offset ``col`` of ``line``, read
    as ``parse`` reads it: the verb found the same way (synonyms and politeness), the
    option's spelling mapped to its canonical key (``temp:`` is temperature), a flag by
    any of its words. None elsewhere, and for what the verb does not take."""
    parts = split_line(line)
    base = parts.body_start
    if col < base:
        return None
    text, rel = line[base:], col - base
    cur = next((s for s in _spans(text) if s.start <= rel < s.end), None)
    if cur is None:
        return None
    prefix = text[: cur.start].rstrip()
    toks = tokenize(prefix) if prefix else []
    if isinstance(toks, Fail) or skip_polite(toks) == len(toks):
        return None
    found = find_verb(toks)
    if isinstance(found, Fail):
        return None
    verb = found[0]
    start, end = base + cur.start, base + cur.end
    words = tokenize(text[cur.start: cur.end])
    if not isinstance(words, Fail) and len(words) == 1:
        key_typed, value, quoted = words[0][:3]
        word = (f"{key_typed}:{value}" if key_typed else value).lower()
        flag = next((f for f in flags(verb) if word in (f.name, *f.spellings())), None)
        if flag is not None and not quoted:  # (``as:prose`` is a flag, not as's value)
            return Term("flag", verb, flag.name, start, end)
        key = option_key(verb, word) if key_typed is None and not quoted else None
        if key is not None and _pending_takes(toks, found[1], verb, key):  # ``from`` X
            return Term("option", verb, key, start, end)
    if cur.key is not None:
        key = option_key(verb, cur.key)
        if key is not None:
            return Term("option", verb, key, start, end)
    return None


def _pending_takes(toks: list[Tok], first: int, verb: str, key: str) -> bool:
    """Whether a bare ``key`` word here makes the next token its value (``continue from
    a7x2``), as the argument scan reads it."""
    spec = SPECS[verb]
    word: Tok = (None, key, False, 0, 0)
    got = scan([*toks, word, (None, _PROBE, False, 0, 0)], first, spec, "")
    return not isinstance(got, Fail) and got.opts.get(key) == _PROBE
