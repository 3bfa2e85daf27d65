"""Find the arrow commands in the free text a model writes.

``extract(text)`` cuts the text into segments that tile it line by line, in order:

* **batch** — consecutive command lines, each starting with an arrow after optional
  indentation (the lexicon's ``is_command_line``: ``→ -> --> => ⇒ ⟶ ➜``). A blank line
  or a prose line ends the batch, so ``→ view a\\n\\n→ view b`` is two batches (the
  seeds batch "consecutive lines"; a blank line is the model pausing). A command whose
  quoted text runs over several lines
  (``→ respond a7x2 "para one`` … ``para two"``) is one command when the joined lines
  parse; its line number is its first line.
* **think** — ``→ think`` opens a block closed by a line that is just ``←`` (or ``<-``);
  an unclosed block runs to the end of the text (``closed=False``). ``→ think some text``
  is a one-line thought unless a closing line follows before the next command line.
* **prose** — everything else, including blank lines, stray ``←`` lines, and every line
  inside a fenced code block (````` or ``~~~``), where arrows are examples, not commands.

Offsets: ``start``/``end`` index ``text`` (end exclusive, so ``text[start:end]`` is the
segment, without its final newline or carriage return); lines are 0-based and inclusive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from loom.commands.grammar import parse
from loom.commands.lexicon import is_closer, is_command_line
from loom.commands.syntax import Command, ParseError, Think

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_MAX_QUOTE_LINES = 200  # how far a quoted text may run over lines
#: a line calling an outside (MCP) tool, ``→ NAME.TOOL …``: no Loom verb has a dot, so
#: the grammar does not know it, and the collaborator reads it (``agent/outside``)
_OUTSIDE = re.compile(r"[^\S\r\n]*\S+[^\S\r\n]*[A-Za-z][\w-]*\.\w")
_Kind = Literal["prose", "batch", "think"]


@dataclass(frozen=True)
class ReplySegment:
    """A run of lines of one kind."""

    kind: _Kind
    text: str
    start_line: int
    end_line: int
    start: int
    end: int
    #: For batches: (line number, parse result) per command.
    commands: list[tuple[int, Command | ParseError]] = field(default_factory=list)
    #: For think blocks: the thought, without the ``→ think`` and ``←`` lines.
    content: str | None = None
    #: For think blocks: False when no ``←`` closed it.
    closed: bool = True


class _Lines:
    """The text's lines with their offsets, ``\\r`` removed from the line text."""

    def __init__(self, text: str) -> None:
        raw = text.split("\n") if text else []
        if text.endswith("\n"):
            raw.pop()
        self.starts: list[int] = []
        self.lines: list[str] = []
        pos = 0
        for line in raw:
            self.starts.append(pos)
            self.lines.append(line[:-1] if line.endswith("\r") else line)
            pos += len(line) + 1

    def end(self, i: int) -> int:
        return self.starts[i] + len(self.lines[i])


def _command(ls: _Lines, i: int) -> tuple[Command | ParseError, int]:
    """The command starting at line ``i`` and its last line (quotes may span lines)."""
    result = parse(ls.lines[i])
    if not (isinstance(result, ParseError) and result.message.startswith("unterminated quote")):
        return result, i
    joined = ls.lines[i]
    for j in range(i + 1, min(len(ls.lines), i + 1 + _MAX_QUOTE_LINES)):
        joined += "\n" + ls.lines[j]
        longer = parse(joined)
        if not isinstance(longer, ParseError):
            return longer, j
        if _OUTSIDE.match(ls.lines[i]) and longer.message.startswith("unknown command"):
            return longer, j  # an outside tool's call (NAME.TOOL), its quote closed
        if not longer.message.startswith("unterminated quote"):
            break
    return result, i


def _think_end(ls: _Lines, i: int, inline: str) -> tuple[int, bool]:
    """Last line of the think opened at ``i`` and whether ``←`` closed it."""
    for j in range(i + 1, len(ls.lines)):
        if is_closer(ls.lines[j]):
            return j, True
        if inline and is_command_line(ls.lines[j]):
            return i, True  # a one-line thought: a command came before any ←
    return (len(ls.lines) - 1, False) if not inline else (i, True)


def extract(text: str) -> list[ReplySegment]:
    """Cut ``text`` into prose, command batches and think blocks (see the module doc)."""
    ls = _Lines(text)
    segments: list[ReplySegment] = []

    def add(kind: _Kind, first: int, last: int, **extra: object) -> None:
        start, end = ls.starts[first], ls.end(last)
        segments.append(
            ReplySegment(kind, text[start:end], first, last, start, end, **extra)  # type: ignore[arg-type]
        )

    prose_from: int | None = None
    batch: list[tuple[int, Command | ParseError]] = []
    batch_from = 0
    fence: str | None = None
    i = 0
    while i < len(ls.lines):
        line = ls.lines[i]
        command: Command | ParseError | None = None
        if fence is None and is_command_line(line):
            command, last = _command(ls, i)
        if command is None:
            m = _FENCE.match(line)
            if m is not None:
                mark = m.group(1)
                if fence is None:
                    fence = mark
                elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip(
                    " `~"
                ):
                    fence = None
            if batch:
                add("batch", batch_from, i - 1, commands=batch)
                batch = []
            if prose_from is None:
                prose_from = i
            i += 1
            continue
        if prose_from is not None:
            add("prose", prose_from, i - 1)
            prose_from = None
        if isinstance(command, Think):
            if batch:
                add("batch", batch_from, i - 1, commands=batch)
                batch = []
            end, closed = _think_end(ls, i, command.content)
            content = command.content
            if end > i:
                body = ls.lines[i + 1: end if closed else end + 1]
                content = "\n".join(([content] if content else []) + body)
            add("think", i, end, content=content, closed=closed)
            i = end + 1
            continue
        if not batch:
            batch_from = i
        batch.append((i, command))
        i = last + 1
    if batch:
        add("batch", batch_from, len(ls.lines) - 1, commands=batch)
    if prose_from is not None:
        add("prose", prose_from, len(ls.lines) - 1)
    return segments


def typed_commands(text: str) -> list[tuple[str, Command | str | None]]:
    """Each command of ``text`` in order (seed 000's batching: consecutive lines), with the
    text it was typed as (a quote may run over lines): a parsed command, a think block as
    :class:`Think`, the typed text itself for a line that did not parse (the executor
    answers it with the parse error and its hint), None for each line of prose."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[tuple[str, Command | str | None]] = []
    for seg in extract(text):
        if seg.kind == "prose":
            out += [(line.strip(), None) for line in seg.text.split("\n") if line.strip()]
        elif seg.kind == "think":
            out.append((seg.text, Think(content=seg.content or "")))
        else:
            starts = [i for i, _ in seg.commands] + [seg.end_line + 1]
            for k, (i, cmd) in enumerate(seg.commands):
                typed = "\n".join(lines[i:starts[k + 1]]).strip()
                out.append((typed, typed if isinstance(cmd, ParseError) else cmd))
    return out
