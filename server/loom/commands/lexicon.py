"""The lexicon of the arrow language: what a command line looks like, in one place.

Everything that decides "is this line a command?" or "what may be typed here?" reads this
module: the grammar, ``extract`` (commands in a model's text), the editor's session (what
a commit keeps out of the buffer), reference finding, semantic tokens and completion.

* **Arrows.** A command line is optional horizontal indentation, then one of
  ``→ -> --> => ⇒ ⟶ ➜``, then the command. A line that is just ``←`` or ``<-`` closes a
  ``→ think`` block.
* **Verbs, flags and options** are declared once, in the catalogue
  (``commands/catalogue.py``), with their descriptions, the values worth offering
  (``n:`` 1 2 3 5 10…), which verbs take a bare node reference and which options take one
  as their value; this module answers the editor's questions about them by name.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from loom.commands.catalogue import (
    TOOLS,
    TOOLS_BY_NAME,
    Flag,
    Option,
    Tool,
    ValueKind,
    synonym_table,
)

# ---------------------------------------------------------------------------- arrows

#: Every arrow that may open a command line, the canonical one first.
ARROWS: tuple[str, ...] = ("→", "->", "-->", "=>", "⇒", "⟶", "➜")
#: The arrow commands are written with in canonical text.
CANONICAL_ARROW = "→"
#: A line that is only one of these closes a ``→ think`` block.
CLOSERS: frozenset[str] = frozenset({"←", "<-"})
#: The closer canonical text writes.
CANONICAL_CLOSER = "←"
#: Every character an arrow or a closer is made of: alone, such a word is punctuation.
ARROW_CHARS: str = "".join(sorted({ch for form in (*ARROWS, *CLOSERS) for ch in form}))

# Indentation is horizontal whitespace (tabs, spaces, no-break spaces), never a line break.
_INDENT = r"[^\S\r\n]*"
# Longest first, so ``-->`` is not read as ``-`` and then prose.
_ARROW = "|".join(re.escape(a) for a in sorted(ARROWS, key=len, reverse=True))

#: Matches at the start of a command line: groups ``indent`` and ``arrow``.
COMMAND_LINE = re.compile(rf"(?P<indent>{_INDENT})(?P<arrow>{_ARROW})")
#: The first word after the arrow, for highlighting and hover. Groups: 1 indentation,
#: 2 arrow, 3 the space after it, 4 the word.
VERB_LINE = re.compile(rf"^({_INDENT})({_ARROW})({_INDENT})([A-Za-z-]+)")


class CommandLine(NamedTuple):
    """A line cut at its arrow. Without an arrow, ``indent`` and ``arrow`` are empty and
    ``body`` is the whole line."""

    indent: str
    arrow: str
    body: str

    @property
    def body_start(self) -> int:
        """Where the body starts in the line."""
        return len(self.indent) + len(self.arrow)


def split_line(line: str) -> CommandLine:
    """``line`` as (indentation, arrow, the rest)."""
    m = COMMAND_LINE.match(line)
    if m is None:
        return CommandLine("", "", line)
    return CommandLine(m.group("indent"), m.group("arrow"), line[m.end():])


def is_command_line(line: str) -> bool:
    """True when ``line`` starts (after indentation) with an arrow."""
    return COMMAND_LINE.match(line) is not None


def is_closer(line: str) -> bool:
    """True when ``line`` closes a ``→ think`` block (``←`` or ``<-`` alone)."""
    return line.strip() in CLOSERS


def prose_before_commands(text: str) -> str:
    """``text`` up to its first command line (tool lines are not kept as prose); empty
    when only whitespace is left."""
    out: list[str] = []
    for line in text.split("\n"):
        if is_command_line(line):
            break
        out.append(line)
    body = "\n".join(out)
    return body if body.strip() else ""


# ----------------------------------------------------------------------------- verbs

#: The canonical verbs, in the catalogue's order.
VERB_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)
#: Every verb phrase (synonyms included) mapped to its verb.
PHRASES: Mapping[str, str] = MappingProxyType(synonym_table())


def verb_named(phrase: str) -> str | None:
    """The canonical verb ``phrase`` names exactly (``show`` → view), or None."""
    return PHRASES.get(" ".join(phrase.lower().split()))


def describe_verb(verb: str) -> str:
    """The catalogue's one-line description of ``verb`` ("" for an unknown verb)."""
    tool = TOOLS_BY_NAME.get(verb)
    return tool.description if tool is not None else ""


# ------------------------------------------------------------------ flags and options
# Declared with their verbs in the catalogue; read here by canonical name.


def _tool(verb: str) -> Tool | None:
    return TOOLS_BY_NAME.get(verb)


def flags(verb: str) -> tuple[Flag, ...]:
    """The canonical flags of ``verb`` in the catalogue's order, with descriptions."""
    tool = _tool(verb)
    return tool.flags if tool is not None else ()


@functools.cache  # asked on every completion keystroke; the tables never change
def options(verb: str) -> tuple[Option, ...]:
    """The options of ``verb`` worth offering, by canonical key, in the catalogue's order
    (an option without a description is read only to explain a mistake)."""
    tool = _tool(verb)
    return tuple(o for o in tool.options if o.description) if tool is not None else ()


def option_key(verb: str, name: str) -> str | None:
    """The canonical key ``name`` spells for ``verb`` (``count`` → n), or None."""
    tool = _tool(verb)
    return tool.option_words.get(name.lower()) if tool is not None else None


def takes_nodes(verb: str) -> bool:
    """True when a bare node reference is an argument of ``verb``."""
    tool = _tool(verb)
    return tool is not None and tool.takes_node


def _option(verb: str, key: str) -> Option | None:
    tool = _tool(verb)
    return tool.option(key) if tool is not None else None


def value_kind(verb: str, key: str) -> ValueKind:
    """What the value of ``verb``'s canonical option ``key`` is."""
    option = _option(verb, key)
    return option.value if option is not None else "value"


def value_hints(verb: str, key: str) -> tuple[str, ...]:
    """Values worth offering for ``verb``'s canonical option ``key`` (may be empty)."""
    option = _option(verb, key)
    return option.hints if option is not None else ()


def quoted_kind(verb: str) -> ValueKind | None:
    """What a quoted string typed after ``verb`` is, if anything."""
    tool = _tool(verb)
    return tool.quoted if tool is not None else None


#: Every spelling of every verb's options (``branch``, ``count``, ``pin:doc``…).
OPTION_NAMES: frozenset[str] = frozenset(name for t in TOOLS for name in t.option_words)

#: Every spelling of an option whose value is a node reference or a range of them, for
#: any verb (``from``, ``branch``, ``content-of``, ``pin``…).
REF_OPTION_NAMES: frozenset[str] = frozenset(
    name for t in TOOLS for o in t.options if o.value in ("node", "range")
    for name in o.spellings()
)
