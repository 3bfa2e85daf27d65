"""The arrow-command parser: one line in, a ``Command`` or a ``ParseError`` out.

``parse`` never raises and never touches the store: node references stay the strings
that were typed (lowercased, brackets and possessives removed). It works in three steps:

1. **Lexing.** The leading arrow (any of the lexicon's: ``→ -> --> => ⇒ ⟶ ➜``) is
   optional. Quoted values may use
   ``"…"`` (with ``\\"``, ``\\\\``, ``\\n`` escapes), ``“…”``, ``‘…’``, ``'…'`` or ``«…»``;
   an apostrophe inside a word (``let's``, the prime of ``a7x2'``) is not a quote. Words
   lose surrounding brackets and trailing punctuation; ``key:value``, ``key=value`` and
   ``key: value`` are options; ``§id`` is ``section:id``.
2. **Patterns.** Politeness (``please``, ``could you``, ``let's``…) is skipped, the verb
   is found from the catalogue's phrases (``show me`` → view, ``go to`` → switch,
   ``add a note`` → annotate), then each verb reads its arguments: node references,
   quoted strings, options and flags, with filler words (``me``, ``the``, ``node``,
   ``at``…) ignored. Filler words are therefore never node references.
3. **Fuzzy matching** (rapidfuzz, optimal string alignment) of an unknown verb, flag or
   option name, accepted only when one candidate is clearly best. Otherwise the line is a
   ``ParseError`` naming the closest forms, and an optional classifier may still be asked.

Range limits (``n`` ≤ 10) are the executor's job: the parser only checks that numbers are
numbers. A missing required argument is an error whose hint is the catalogue's syntax.

``slot_at(line, col)`` asks the same lexer and argument scan what is being typed at a
column (the verb, a node reference, a flag, an option or its value, a document…), which
is what completion offers.

The package follows those steps, a module each: ``lexer`` (1); ``verbs``, ``scan``,
``builders`` and ``reader`` (2: the verb, its arguments, the seed's verbs' commands and the
reader's verbs'); ``fuzzy`` (3). ``vocabulary`` is the catalogue as the parser reads it,
``results`` what the steps return short of a command, ``entry`` holds ``parse`` and
``slots`` holds ``slot_at``. Import from the package: the names below are its interface.
"""

from loom.commands.grammar.entry import COMMAND_TYPES, Classifier, parse, parse_noting
from loom.commands.grammar.slots import Slot, SlotKind, Term, slot_at, term_at
from loom.commands.grammar.vocabulary import TOOL_GROUPS

__all__ = [
    "COMMAND_TYPES",
    "TOOL_GROUPS",
    "Classifier",
    "Slot",
    "SlotKind",
    "Term",
    "parse",
    "parse_noting",
    "slot_at",
    "term_at",
]
