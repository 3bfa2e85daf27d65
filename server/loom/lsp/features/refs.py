"""Finding node references and arrow-command parts in a line of text.

What a command line is, its arrows and its verbs come from the lexicon
(``loom.commands.lexicon``); ``is_command_line`` and ``VERB`` are re-exported from it
for the other editor features.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.commands.catalogue import FILLER
from loom.commands.lexicon import OPTION_NAMES, REF_OPTION_NAMES, is_command_line, verb_named
from loom.commands.lexicon import VERB_LINE as VERB

__all__ = ["ANN", "BARE", "BRACKETED", "DOCREF", "FLAG", "QUOTED", "VERB", "Ref",
           "is_command_line", "ref_at", "refs_in_line", "verb_at"]

# [a7x2], [a7x2'], ann-3, [ann-3], and bare a7x2 / a7x2' (bare ones only on command lines)
BRACKETED = re.compile(r"\[((?:ann-\d+)|(?:[0-9a-hjkmnp-tv-z]{3,16}'*))\]", re.IGNORECASE)
BARE = re.compile(r"(?<![\w\"'])((?:ann-\d+)|(?:[0-9a-hjkmnp-tv-z]{3,16}'*))(?![\w\"])",
                  re.IGNORECASE)
ANN = re.compile(r"(?<![\w-])(ann-\d+)(?![\w-])", re.IGNORECASE)
QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"?|“[^”]*”?")
FLAG = re.compile(r"\b([a-z-]+):(?!\")(\S*)")
DOCREF = re.compile(r"\b(doc|tree|stash):(\"[^\"]*\"?|“[^”]*”?)")


@dataclass(frozen=True)
class Ref:
    text: str  # the reference as a resolver takes it
    start: int  # offsets within the line
    end: int


def refs_in_line(line: str) -> list[Ref]:
    """Node references in a line: bracketed ones and ``ann-N`` anywhere; on a command line
    also bare localIds (outside quotes, option names and filler words, which the grammar
    never reads as nodes)."""
    found: dict[int, Ref] = {}
    for m in BRACKETED.finditer(line):
        found[m.start()] = Ref(m.group(1), m.start(), m.end())
    for m in ANN.finditer(line):
        found.setdefault(m.start(), Ref(m.group(1), m.start(), m.end()))
    if is_command_line(line):
        masked = _mask(line)
        verb = VERB.match(line)
        skip_until = verb.end() if verb else 0
        for m in BARE.finditer(masked):
            if m.start() < skip_until or any(r.start <= m.start() < r.end
                                              for r in found.values()):
                continue
            if m.start() > 0 and line[m.start() - 1] == ":" and not _value_is_ref(line, m):
                continue
            word = m.group(1).lower()
            if word in FILLER or (line[m.end():m.end() + 1] in (":", "=")
                                  and word in OPTION_NAMES):
                continue
            found.setdefault(m.start(), Ref(m.group(1), m.start(), m.end()))
    return sorted(found.values(), key=lambda r: r.start)


def _value_is_ref(line: str, m: re.Match[str]) -> bool:
    """True when the option before ``m``'s colon takes a node reference (``from:``)."""
    before = line[: m.start() - 1]
    name = re.search(r"([A-Za-z_-]+)$", before)
    return bool(name and name.group(1).lower() in REF_OPTION_NAMES)


def _mask(line: str) -> str:
    """Blank out quoted strings so words inside them are not taken for ids."""
    out = list(line)
    for m in QUOTED.finditer(line):
        for i in range(m.start(), m.end()):
            out[i] = " "
    return "".join(out)


WINDOW = 48


def ref_at(line: str, col: int) -> Ref | None:
    """The reference under ``col``. Prose lines can be a whole buffer long: outside command
    lines only a window around the cursor is searched."""
    if is_command_line(line):
        candidates = refs_in_line(line)
        base = 0
    else:
        base = max(0, col - WINDOW)
        candidates = refs_in_line(line[base:col + WINDOW])
    for r in candidates:
        if r.start + base <= col <= r.end + base:
            return Ref(r.text, r.start + base, r.end + base)
    return None


def verb_at(line: str, col: int) -> str | None:
    """The canonical verb under ``col`` when it is the command's first word (``show`` is
    view), else None."""
    m = VERB.match(line)
    if m and m.start(4) <= col <= m.end(4):
        return verb_named(m.group(4))
    return None
