"""Splitting Loom Protocol text into lines, and the lenient clean-ups done line by line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.protocol.errors import LoomProtocolError
from loom.protocol.lexical import FENCE, scan_quoted

_FENCE_OPEN_RE = re.compile(r"```[\w.+-]*")


@dataclass(slots=True)
class Line:
    num: int  # 1-based line number in the original text
    indent: int  # 0-based column where ``text`` starts
    text: str  # the line after its indentation (lenient: without an inline comment)
    raw: str  # the whole line, as block strings read it
    comment: str | None = None  # lenient: the inline comment removed from ``text``

    @property
    def structural(self) -> bool:
        """Not blank and not a full-line comment."""
        return bool(self.text) and self.text[0] != "#"


class Notes:
    """What lenient decoding assumed, as ``line N: ...`` sentences in line order."""

    def __init__(self) -> None:
        self._items: list[tuple[int, str]] = []

    def add(self, line: int, message: str) -> None:
        self._items.append((line, message))

    def lines(self) -> list[str]:
        return [f"line {n}: {m}" for n, m in sorted(self._items, key=lambda t: t[0])]


def split_lines(text: str, lenient: bool, notes: Notes) -> list[Line]:
    """Lines of ``text``; strict mode rejects what lenient mode repairs (and notes)."""
    text = _line_endings(text, lenient, notes)
    if text.endswith("\n"):
        text = text[:-1]  # a final newline ends the last line; it is not a blank line
    raws = text.split("\n")
    _remove_fence(raws, lenient, notes)
    out: list[Line] = []
    trailing: list[int] = []
    for num, raw in enumerate(raws, 1):
        if raw and raw[-1].isspace():
            if not lenient:
                raise LoomProtocolError(
                    "trailing whitespace (accepted with lenient=True)", num, len(raw.rstrip()) + 1
                )
            raw = raw.rstrip()
            trailing.append(num)
        indent = len(raw) - len(raw.lstrip(" "))
        if indent < len(raw) and raw[indent] == "\t":
            raise LoomProtocolError("tab in indentation; indent with spaces", num, indent + 1)
        line = Line(num, indent, raw[indent:], raw)
        if lenient and "#" in line.text and line.structural:
            cut = inline_comment_start(line.text)
            if cut >= 0:
                line.comment = line.text[cut:].strip()
                line.text = line.text[:cut].rstrip()
        out.append(line)
    if trailing:
        where = ", ".join(map(str, trailing[:5])) + (", ..." if len(trailing) > 5 else "")
        lines_word = "line" if len(trailing) == 1 else "lines"
        notes.add(trailing[0], f"removed trailing whitespace ({lines_word} {where})")
    return out


def _line_endings(text: str, lenient: bool, notes: Notes) -> str:
    if text.startswith("\ufeff"):
        if not lenient:
            raise LoomProtocolError("byte order mark (accepted with lenient=True)", 1, 1)
        text = text[1:]
        notes.add(1, "ignored a byte order mark")
    cr = text.find("\r")
    if cr >= 0 and lenient and text.find("\r\n") == cr:
        text = text.replace("\r\n", "\n")
        notes.add(text.count("\n", 0, cr) + 1, "read CRLF line endings as LF")
        cr = text.find("\r")
    if cr >= 0:
        line = text.count("\n", 0, cr) + 1
        column = cr - (text.rfind("\n", 0, cr) + 1) + 1
        hint = " (CRLF line endings are accepted with lenient=True)" if not lenient else ""
        raise LoomProtocolError(f"carriage return{hint}", line, column)
    return text


def _remove_fence(raws: list[str], lenient: bool, notes: Notes) -> None:
    """Blank out a ``` fence around the whole document (line numbers stay put)."""
    filled = [i for i, r in enumerate(raws) if r.strip()]
    if not filled or not _FENCE_OPEN_RE.fullmatch(raws[filled[0]].strip()):
        return
    first = filled[0]
    if not lenient:
        raise LoomProtocolError(
            "a ``` code fence around the document (accepted with lenient=True)", first + 1, 1
        )
    raws[first] = ""
    last = filled[-1]
    if last != first and raws[last].strip() == FENCE:
        raws[last] = ""
        notes.add(
            first + 1,
            f"removed the ``` fence around the document (lines {first + 1} and {last + 1})",
        )
    else:
        notes.add(first + 1, "removed an opening ``` fence that has no closing fence")


def inline_comment_start(text: str) -> int:
    """Index of the whitespace before an inline ``# comment`` in ``text``; -1 if none.

    A comment is ``#`` preceded by whitespace and followed by whitespace or the end of the
    line, outside quoted strings; so ``#general`` and ``C#`` are text, not comments.
    """
    n = len(text)
    i = 0
    token_start = True
    while i < n:
        c = text[i]
        if c == '"' and token_start:
            end = scan_quoted(text, i)
            if end < 0:
                return -1
            i = end
            token_start = False
            continue
        if (
            c.isspace()
            and i + 1 < n
            and text[i + 1] == "#"
            and (i + 2 == n or text[i + 2].isspace())
        ):
            return i
        token_start = c in "[{," or (c == " " and i > 0 and text[i - 1] in ":,-")
        i += 1
    return -1
