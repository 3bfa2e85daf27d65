"""The lexicon of the arrow language: what a command line looks like, in one place.

Everything that decides "is this line a command?" or "what may be typed here?" reads this
module: the grammar, ``extract`` (commands in a model's text), the editor's session (what
a commit keeps out of the buffer), reference finding, semantic tokens and completion.

* **Arrows.** A command line is optional horizontal indentation, then one of
  ``→ -> --> => ⇒ ⟶ ➜``, then the command. A line that is just ``←`` or ``<-`` closes a
  ``→ think`` block.
* **Verbs, flags and options** come from the catalogue (``commands/catalogue.py``); this
  module adds what the editor needs around them: a description for every flag and option,
  the values worth offering (``n:`` 1 2 3 5 10…), which verbs take a bare node reference
  and which options take one as their value.

The catalogue stays the source of verbs, synonyms, flags and options: the tables here are
keyed by the catalogue's canonical names and ``tests/unit/test_lexicon.py`` checks that
every canonical flag and option has its entry here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, NamedTuple

from loom.commands.catalogue import EDGE_TYPES, TOOLS, TOOLS_BY_NAME, VIEW_SHAPES, synonym_table

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

#: What an option's value (or a quoted string) is: completion offers accordingly.
ValueKind = Literal["node", "range", "doc", "tree", "stash", "section", "text", "value"]

# What each canonical flag does, per verb (shown beside completions).
_FLAG_HELP: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "view": {
        "full": "complete content", "summary": "summary only (default)",
        "with-annotations": "include annotations", "with-links": "include links",
        "as:prose": "the path as stitched prose", "as:nodes": "the path as separate nodes",
    },
    "list": {
        "continuations": "the node's children (default)", "annotations": "notes on the node",
        "links": "links to nodes, trees and documents",
        "documents": "the documents there are (as → read alone)",
    },
    "tree": {"summary": "condensed overview",
             "with-text": "the whole tree with each node's text and notes"},
    "read": {"summary": "the document's summary", "full": "the whole document (default)"},
    "write": {"append": "add at the end (default)", "replace": "replace the section: given"},
    "memory": {
        "state": "pins and stashes (default)", "trace": "recent actions",
        "stashed": "stashed items", "errors": "recent errors",
    },
})

# What each canonical option does, per verb. An option missing here is accepted by the
# grammar only to explain a mistake (``drop lines:``) and is never offered.
_OPTION_HELP: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "view": {"branch": "the path through a node", "as": "prose or nodes",
             "node": "the node to view"},
    "tree": {"from": "start at a node", "depth": "levels to show (default 5)"},
    "switch": {"tree": "another tree (cross-tree)", "node": "the node to switch to"},
    "respond": {"as": "edge type (default continuation)"},
    "link": {"note": "what the link means", "doc": "a document", "tree": "another tree",
             "node": "a node (in tree:)", "section": "a section of the document"},
    "continue": {"from": "node to continue from", "n": "how many (1-10)",
                 "tokens": "max tokens each", "temperature": "sampling temperature (0-2)"},
    "split": {"at": "character offset in the node's text", "alt": "an alternative to branch "
              "with there"},
    "read": {"doc": "a document", "lines": "a line range start-end", "section": "a section"},
    "write": {"doc": "a document", "at": "start, end, a line or a section",
              "replace": "a section to replace", "section": "a section"},
    "pin": {"doc": "a document", "section": "a section of the document",
            "node": "the node to pin"},
    "stash": {"content-of": "a node's content", "summary-of": "a path range A-B",
              "label": "the stash's label"},
    "recall": {"label": "a stash label"},
    "drop": {"pin": "a pinned node or document", "stash": "a stash label",
             "doc": "a pinned document", "section": "a section of the pinned document"},
})

#: Verbs whose bare arguments include a node reference (``view a7x2``, ``continue from
#: a7x2``, ``drop a7x2`` for a pin).
NODE_VERBS: frozenset[str] = frozenset({
    "view", "list", "tree", "switch", "continue", "respond", "annotate", "link", "edit",
    "pin", "drop", "split",
})

# The canonical options whose value is a node reference, per verb.
_REF_OPTIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "view": frozenset({"branch", "node"}),
    "tree": frozenset({"from"}),
    "switch": frozenset({"node"}),
    "continue": frozenset({"from"}),
    "link": frozenset({"node"}),
    "pin": frozenset({"node"}),
    "stash": frozenset({"content-of"}),
    "drop": frozenset({"pin"}),
})

# The kind of an option's value when it is not a node: by canonical key, then per verb.
_VALUE_KINDS: Mapping[str, ValueKind] = MappingProxyType({
    "doc": "doc", "tree": "tree", "section": "section", "replace": "section",
    "note": "text", "summary-of": "range",
})
_VERB_VALUE_KINDS: Mapping[tuple[str, str], ValueKind] = MappingProxyType({
    ("drop", "stash"): "stash", ("recall", "label"): "stash", ("stash", "label"): "text",
    ("split", "alt"): "text",
})

# Values worth offering after ``key:`` (any value of the right type is accepted).
_HINTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "n": ("1", "2", "3", "5", "10"),
    "tokens": ("20", "50", "100", "200"),
    "depth": ("1", "3", "5", "10"),
    "temperature": ("0.5", "0.8", "1", "1.2"),
    "at": ("start", "end"),
})
_VERB_HINTS: Mapping[tuple[str, str], tuple[str, ...]] = MappingProxyType({
    ("view", "as"): tuple(dict.fromkeys(VIEW_SHAPES.values())),
    ("respond", "as"): tuple(dict.fromkeys(EDGE_TYPES.values())),
    ("split", "at"): (),  # an offset into the node: nothing worth offering
})


@dataclass(frozen=True, slots=True)
class Flag:
    """A bare word a verb takes, in its canonical spelling."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class Option:
    """A ``key:value`` option of a verb, by its canonical key."""

    name: str
    description: str
    value: ValueKind
    hints: tuple[str, ...]


@functools.cache  # asked on every completion keystroke; the tables never change
def flags(verb: str) -> tuple[Flag, ...]:
    """The canonical flags of ``verb`` in the catalogue's order, with descriptions."""
    tool = TOOLS_BY_NAME.get(verb)
    if tool is None:
        return ()
    help_ = _FLAG_HELP.get(verb, {})
    return tuple(Flag(name, help_.get(name, "")) for name in dict.fromkeys(tool.flags.values()))


@functools.cache
def options(verb: str) -> tuple[Option, ...]:
    """The options of ``verb`` worth offering, by canonical key, in the catalogue's order."""
    tool = TOOLS_BY_NAME.get(verb)
    if tool is None:
        return ()
    help_ = _OPTION_HELP.get(verb, {})
    return tuple(
        Option(key, help_[key], value_kind(verb, key), value_hints(verb, key))
        for key in dict.fromkeys(tool.options.values()) if key in help_
    )


def option_key(verb: str, name: str) -> str | None:
    """The canonical key ``name`` spells for ``verb`` (``count`` → n), or None."""
    tool = TOOLS_BY_NAME.get(verb)
    return tool.options.get(name.lower()) if tool is not None else None


def takes_nodes(verb: str) -> bool:
    """True when a bare node reference is an argument of ``verb``."""
    return verb in NODE_VERBS


def value_kind(verb: str, key: str) -> ValueKind:
    """What the value of ``verb``'s canonical option ``key`` is."""
    if key in _REF_OPTIONS.get(verb, ()):
        return "node"
    return _VERB_VALUE_KINDS.get((verb, key)) or _VALUE_KINDS.get(key, "value")


def value_hints(verb: str, key: str) -> tuple[str, ...]:
    """Values worth offering for ``verb``'s canonical option ``key`` (may be empty)."""
    if (verb, key) in _VERB_HINTS:
        return _VERB_HINTS[(verb, key)]
    return _HINTS.get(key, ())


def _ref_option_names() -> frozenset[str]:
    names: set[str] = set()
    for tool in TOOLS:
        for name, key in tool.options.items():
            if value_kind(tool.name, key) in ("node", "range"):
                names.add(name)
    return frozenset(names)


#: Every spelling of every verb's options (``branch``, ``count``, ``pin:doc``…).
OPTION_NAMES: frozenset[str] = frozenset(name for t in TOOLS for name in t.options)

#: Every spelling of an option whose value is a node reference or a range of them, for
#: any verb (``from``, ``branch``, ``content-of``, ``pin``…).
REF_OPTION_NAMES: frozenset[str] = _ref_option_names()
