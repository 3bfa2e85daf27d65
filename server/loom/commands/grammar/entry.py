"""The parser's entry points, ``parse`` and ``parse_noting``: one line in, a ``Command``
or a ``ParseError`` out, never an exception. Also the optional ``Classifier`` asked when the
steps are unsure, and ``COMMAND_TYPES``, what its answer must be to be used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

from loom.commands.catalogue import TOOLS_BY_NAME
from loom.commands.grammar.builders import build, think_content
from loom.commands.grammar.fuzzy import CORRECTED
from loom.commands.grammar.lexer import THINK, tokenize
from loom.commands.grammar.results import Fail, show
from loom.commands.grammar.verbs import find_verb
from loom.commands.lexicon import split_line
from loom.commands.syntax import VERBS, Command, ParseError, Think

#: ``(text, candidate verbs) -> Command | None``: a model asked when patterns and fuzzy
#: matching are not confident. The parser works fully without one.
Classifier = Callable[[str, list[str]], "Command | None"]

#: Every command type a line may be (the editor verbs have no text form): a classifier's
#: answer is used only when it is one of these.
COMMAND_TYPES: tuple[type, ...] = tuple(
    t for t in get_args(get_args(Command)[0])
    if t.model_fields["verb"].default in TOOLS_BY_NAME)


def _parse(line: str) -> tuple[Command | Fail, str]:
    after = split_line(line).body
    think = THINK.fullmatch(after.lstrip())
    if think is not None:
        return Think(content=think_content(think.group("rest"))), after
    body = after.strip()
    if not body:
        return Fail("empty command", hint="→ help lists the tools"), body
    toks = tokenize(body)
    if isinstance(toks, Fail):
        return toks, body
    if not toks:
        return Fail(f"couldn't parse {show(body)}", hint="→ help lists the tools"), body
    found = find_verb(toks)
    if isinstance(found, Fail):
        return found, body
    return build(found[0], toks, found[1], body), body


def parse(line: str, classifier: Classifier | None = None) -> Command | ParseError:
    """Parse one arrow command (the arrow is optional). Never raises.

    ``classifier(text, candidates)`` is asked only when patterns and fuzzy matching are
    not confident (an unknown or ambiguous verb, an unknown option); a Command it returns
    is used, anything else (or an exception) leaves the ParseError.
    """
    return parse_noting(line, classifier)[0]


def parse_noting(line: str, classifier: Classifier | None = None
                 ) -> tuple[Command | ParseError, bool]:
    """:func:`parse`, and whether the command was *read as* something the line does not
    spell: a typo corrected by fuzzy matching (``→ contineu n:3``) or the classifier's
    guess. Whoever runs it says so (``(read as → continue n:3)``), so neither a human nor
    a model learns a wrong spelling. Synonyms and filler words are not corrections."""
    if not isinstance(line, str):
        return ParseError(message=f"expected text, got {type(line).__name__}"), False
    seen: list[bool] = []
    token = CORRECTED.set(seen)
    try:
        result, body = _parse(line)
    except Exception as exc:  # the contract is "never raises"; tests assert this is unused
        return ParseError(message=f"internal parser error ({type(exc).__name__}) on {show(line)}",
                          hint="please report this line"), False
    finally:
        CORRECTED.reset(token)
    if not isinstance(result, Fail):
        return result, bool(seen)
    if result.unsure and classifier is not None:
        try:
            guess = classifier(body, list(result.candidates or VERBS))
        except Exception:  # a failing classifier must not break parsing
            guess = None
        if isinstance(guess, COMMAND_TYPES):
            return guess, True  # type: ignore[return-value]
    return result.error(), False
