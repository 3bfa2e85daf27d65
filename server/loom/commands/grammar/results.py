"""What the parsing steps hand each other short of a ``Command``: ``Fail`` (a
``ParseError`` in the making, which any step may return), ``VerbArgs`` (a verb's arguments as
the scan sorts them), and the wording of hints (``use → …``, a tool's seed forms).

A leaf of the package: the lexer, the scan, the builders and ``slot_at`` fail the same way
without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.commands.catalogue import Tool
from loom.commands.syntax import ParseError


@dataclass(frozen=True, slots=True)
class Fail:
    """A ParseError in the making; ``unsure`` marks a confidence failure."""

    message: str
    hint: str | None = None
    candidates: tuple[str, ...] = ()
    unsure: bool = False

    def error(self) -> ParseError:
        return ParseError(message=self.message, hint=self.hint, candidates=self.candidates)


@dataclass(slots=True)
class VerbArgs:
    """A verb's argument tokens as the scan sorts them: node references, quoted strings,
    options (canonical name → value) and flags."""

    refs: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    opts: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    rest: str = ""  # the text after the verb
    unknown: list[str] = field(default_factory=list)  # words no rule took (flagless verbs)


def show(text: str, limit: int = 60) -> str:
    """``text`` on one line, in quotes, cut at ``limit``: how an error quotes a line."""
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def use(*forms: str) -> str:
    """The hint ``use A or B``."""
    return "use " + " or ".join(forms)


def seed_forms(tool: Tool) -> tuple[str, ...]:
    """The tool's command lines as seed 000 lists them (hints stay short)."""
    return tuple(s for s in tool.syntax if s.startswith("→"))


def usage(tool: Tool) -> str:
    """The hint naming ``tool``'s seed forms."""
    return use(*seed_forms(tool))
