"""Loom Protocol decoder: indentation-based text to JSON data (grammar in docs/protocol.md)."""

from __future__ import annotations

from enum import Enum
from typing import Any, NamedTuple, NoReturn

from loom.protocol.errors import LoomProtocolError
from loom.protocol.lexical import (
    BLOCK_CLIP,
    BLOCK_STRIP,
    CELL_SEP,
    MAX_DEPTH,
    SEP,
    UNSAFE_RE,
    scan_quoted,
)
from loom.protocol.lines import Line, Notes, split_lines
from loom.protocol.scalars import (
    Fail,
    check_plain_key,
    parse_key_token,
    parse_quoted,
    parse_scalar,
    split_items,
)
from loom.protocol.schema import SchemaLike, Shape, conform

STEP = 2  # strict indentation step


class LenientResult(NamedTuple):
    value: Any
    assumptions: list[str]
    """Human-readable notes, ``line N: ...``, on everything lenient decoding repaired."""


def loads(text: str | bytes, *, lenient: bool = False, schema: SchemaLike = None) -> Any:
    """Decode Loom Protocol text.

    Strict by default: malformed text raises :class:`LoomProtocolError` with ``line`` and
    ``column``. ``lenient=True`` also accepts what models often write (inline ``# comments``,
    other indent widths, trailing spaces, a ``` fence, CRLF, duplicate keys); use
    :func:`loads_lenient` to see what was assumed. With a ``schema`` (JSON Schema or a
    pydantic model), a bare scalar where the schema expects an array is that one-item
    array (seed 004's ``actions: send`` is ``["send"]``; :mod:`loom.protocol.schema`).
    """
    return conform(_decode(text, lenient).value, Shape.of(schema))


def loads_lenient(text: str | bytes, *, schema: SchemaLike = None) -> LenientResult:
    """Lenient decoding that also returns the list of assumptions it made."""
    result = _decode(text, True)
    shape = Shape.of(schema)
    return result if shape is None else LenientResult(conform(result.value, shape),
                                                      result.assumptions)


def _decode(text: str | bytes, lenient: bool) -> LenientResult:
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise LoomProtocolError(f"not UTF-8: {e.reason}", 1, 1) from None
    notes = Notes()
    parser = _Parser(split_lines(text, lenient, notes), lenient, notes)
    try:
        value = parser.document()
    except RecursionError:
        ln = parser.current()
        raise LoomProtocolError("nesting too deep", ln.num if ln else 1, 1) from None
    return LenientResult(value, notes.lines())


class _Kind(Enum):
    ITEM = 1  # "- x"
    KEY = 2  # "key: x" or "key:"
    SCALAR = 3  # anything else: a value on a line of its own


def classify(text: str) -> _Kind:
    first = text[0]
    if first == "-" and (len(text) == 1 or text[1] == " "):
        return _Kind.ITEM
    if first == '"':
        end = scan_quoted(text, 0)
        if (
            0 < end < len(text)
            and text[end] == ":"
            and (end + 1 == len(text) or text[end + 1] == " ")
        ):
            return _Kind.KEY
        return _Kind.SCALAR
    if first in "[{":
        return _Kind.SCALAR
    colon = text.find(": ")
    if colon >= 0:
        return _Kind.KEY if '"' not in text[:colon] else _Kind.SCALAR
    if text[-1] == ":" and '"' not in text:
        return _Kind.KEY
    return _Kind.SCALAR


class _Parser:
    def __init__(self, lines: list[Line], lenient: bool, notes: Notes) -> None:
        self.lines = lines
        self.pos = 0
        self.lenient = lenient
        self.notes = notes
        self._widths_noted: set[int] = set()
        self._loose_table_lines: list[int] = []
        self.depth = 0  # blocks open (MAX_DEPTH at most)

    # -- helpers ----------------------------------------------------------------------------

    def fail(self, message: str, line: Line, offset: int = 0) -> NoReturn:
        raise LoomProtocolError(message, line.num, line.indent + offset + 1)

    def failer(self, line: Line) -> Fail:
        def fail(message: str, offset: int) -> NoReturn:
            self.fail(message, line, offset)

        return fail

    def current(self) -> Line | None:
        return self.lines[self.pos] if self.pos < len(self.lines) else None

    def peek(self) -> Line | None:
        """The next line that is neither blank nor a full-line comment."""
        lines = self.lines
        while self.pos < len(lines):
            line = lines[self.pos]
            if line.structural:
                return line
            self.pos += 1
        return None

    def take(self, line: Line) -> None:
        self.pos += 1
        if line.comment is not None:
            self.notes.add(line.num, f"treated {line.comment!r} as a comment")

    def child_indent(self, parent: int, line: Line) -> int:
        """Check how far a nested block is indented; lenient accepts any consistent step."""
        step = line.indent - parent
        if step != STEP:
            if not self.lenient:
                self.fail(f"indented {step} spaces deeper than its parent; expected {STEP}", line)
            if step not in self._widths_noted:
                self._widths_noted.add(step)
                self.notes.add(
                    line.num, f"accepted a nested block indented {step} spaces (expected {STEP})"
                )
        return line.indent

    def missing(self, line: Line, what: str) -> None:
        if not self.lenient:
            self.fail(f'{what} has no value (write null, "", [] or {{}})', line)
        self.notes.add(line.num, f"read the missing value of {what} as null")

    # -- structure --------------------------------------------------------------------------

    def document(self) -> Any:
        first = self.peek()
        if first is None:
            line = self.current() or Line(1, 0, "", "")
            raise LoomProtocolError("empty document", line.num, 1)
        if first.indent:
            if not self.lenient:
                self.fail("the document must start in column 1", first)
            self.notes.add(first.num, f"accepted a document indented {first.indent} spaces")
        value = self.block(first.indent)
        extra = self.peek()
        if extra is not None:
            self.fail("unexpected text after the end of the document", extra)
        return value

    def block(self, indent: int) -> Any:
        """The value whose first line is the next line, at exactly ``indent``."""
        line = self.peek()
        if line is None or line.indent != indent:  # e.g. "- #:": a value the line never gave
            at = line or self.current() or Line(1, 0, "", "")
            raise LoomProtocolError("expected a value here", at.num, at.indent + 1)
        if self.depth >= MAX_DEPTH:
            self.fail(f"the value nests more than {MAX_DEPTH} levels deep", line)
        self.depth += 1
        try:
            return self._block(line, indent)
        finally:
            self.depth -= 1

    def _block(self, line: Line, indent: int) -> Any:
        kind = classify(line.text)
        if kind is _Kind.ITEM:
            return self.array(indent)
        if kind is _Kind.KEY:
            return self.obj(indent)
        self.take(line)
        value = self.value(line.text, 0, line, indent)
        self.no_deeper(indent)
        return value

    def no_deeper(self, indent: int) -> None:
        nxt = self.peek()
        if nxt is not None and nxt.indent > indent:
            self.fail("unexpected indentation", nxt)

    def obj(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while (line := self.peek()) is not None and line.indent == indent:
            kind = classify(line.text)
            if kind is not _Kind.KEY:
                if kind is _Kind.ITEM:
                    self.fail("expected 'key: value', found an array item", line)
                hint = " (a key is followed by ': ')" if ":" in line.text else ""
                self.fail(f"expected 'key: value', found {line.text!r}{hint}", line)
            self.take(line)
            key, rest, offset = self.split_key(line)
            if key in out:
                if not self.lenient:
                    self.fail(f"duplicate key {key!r}", line)
                self.notes.add(line.num, f"duplicate key {key!r}: the last value wins")
            if rest is None:
                out[key] = self.nested(indent, line, f"key {key!r}")
            else:
                out[key] = self.value(rest, offset, line, indent)
            self.no_deeper(indent)
        return out

    def array(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while (line := self.peek()) is not None and line.indent == indent:
            text = line.text
            if classify(text) is not _Kind.ITEM:
                self.fail(f"expected an array item '- ...', found {text!r}", line)
            rest = text[1:].lstrip(" ")
            if not rest:
                self.take(line)
                out.append(self.nested(indent, line, "array item"))
            else:
                gap = len(text) - len(rest)  # "-" and the spaces after it
                if gap != 2:
                    if not self.lenient:
                        self.fail("expected one space after '-'", line, 1)
                    self.notes.add(line.num, f"accepted {gap - 1} spaces after '-'")
                if classify(rest) is _Kind.SCALAR:
                    self.take(line)
                    out.append(self.value(rest, gap, line, indent))
                else:
                    # "- id: x" opens an object (or "- - x" an array) whose first line is the
                    # rest of this one, at the column where the rest starts
                    self.lines[self.pos] = Line(
                        line.num, indent + gap, rest, line.raw, line.comment
                    )
                    out.append(self.block(indent + gap))
            self.no_deeper(indent)
        return out

    def nested(self, indent: int, owner: Line, what: str) -> Any:
        """The value after ``key:`` or ``-`` at the end of a line: an indented block."""
        child = self.peek()
        if child is None or child.indent <= indent:
            self.missing(owner, what)
            return None
        return self.block(self.child_indent(indent, child))

    def split_key(self, line: Line) -> tuple[str, str | None, int]:
        """``(key, value text or None, offset of the value text)`` of a key line."""
        text = line.text
        if text[0] == '"':
            end = scan_quoted(text, 0)
            key = parse_quoted(text[:end], 0, self.failer(line))
            colon = end
        else:
            colon = text.find(": ")
            if colon < 0:
                colon = len(text) - 1
            key = text[:colon]
            if not key:
                self.fail('empty key; write "" for an empty key', line)
            if key[-1].isspace() or key[0].isspace():
                if not self.lenient:
                    self.fail(f"whitespace around key {key!r}; quote the key", line)
                self.notes.add(line.num, f"read key {key!r} as {key.strip()!r}")
                key = key.strip()
            check_plain_key(key, self.failer(line))
        if colon + 1 == len(text):
            return key, None, 0
        rest = text[colon + 2 :]
        offset = colon + 2
        if not rest or rest[0].isspace():
            stripped = rest.lstrip()
            if not self.lenient or not stripped:
                self.fail("expected exactly one space after ':'", line, colon + 1)
            self.notes.add(line.num, f"ignored extra spaces after the key {key!r}")
            offset += len(rest) - len(stripped)
            rest = stripped
        return key, rest, offset

    # -- values on a line -------------------------------------------------------------------

    def value(self, text: str, offset: int, line: Line, owner: int) -> Any:
        """A value written after ``key: `` / ``- `` (or alone on a line); ``owner`` is the
        indentation of the line that owns any block or table rows below it."""
        fail = self.failer(line)
        first = text[0]
        if first == "|":
            if text in (BLOCK_STRIP, BLOCK_CLIP):
                return self.block_string(text, line, owner)
            fail(
                "a block string starts with '|' or '|-' alone; quote a string starting with '|'",
                offset,
            )
        if first == "{":
            if text == "{}":
                return {}
            if text[-1] != "}":
                fail(
                    "'{' without a closing '}' (only {} and table headers {a, b} use braces; "
                    "quote a string that starts with '{')",
                    offset,
                )
            self._loose_table_lines.clear()
            names = self.cells(text[1:-1], line, offset + 1)
            return self.table([parse_key_token(t, o, fail) for t, o in names], line, owner)
        if first == "[":
            if text[-1] != "]":
                if self.lenient:
                    self.notes.add(line.num, f"read {text!r} as a string (no closing ']')")
                    return text
                fail("'[' without a closing ']'; quote a string that starts with '['", offset)
            inner = text[1:-1]
            if not inner:
                return []
            return [parse_scalar(t, o, fail) for t, o in split_items(inner, fail, offset + 1)]
        if first != '"' and SEP not in text:
            return parse_scalar(text, offset, fail)
        items = split_items(text, fail, offset)
        if len(items) == 1:
            return parse_scalar(text, offset, fail)
        return [parse_scalar(t, o, fail) for t, o in items]

    def block_string(self, indicator: str, owner_line: Line, owner: int) -> str:
        lines = self.lines
        i = self.pos
        content: list[str] = []
        kept = 0  # content lines up to the last non-blank one
        indent = -1
        while i < len(lines):
            line = lines[i]
            if not line.raw:
                content.append("")
                i += 1
                continue
            if indent < 0:
                if line.indent <= owner:
                    break
                indent = self.child_indent(owner, line)
            elif line.indent < indent:
                if line.indent > owner and line.structural:
                    self.fail("less indented than the block string above it", line)
                break
            text = line.raw[indent:]
            bad = UNSAFE_RE.search(text)
            if bad:
                self.fail(
                    f"character U+{ord(bad.group()):04X} in a block string; quote the "
                    "string instead",
                    line,
                    indent - line.indent + bad.start(),
                )
            content.append(text)
            i += 1
            kept = len(content)
        del content[kept:]  # trailing blank lines separate; they are not text
        self.pos += kept  # one content entry per line read, blank or not
        if not content:
            if not self.lenient:
                self.fail("block string has no text below it", owner_line)
            self.notes.add(owner_line.num, 'read an empty block string as ""')
            return ""
        return "\n".join(content) + ("\n" if indicator == BLOCK_CLIP else "")

    def table(self, cols: list[str], header: Line, owner: int) -> list[dict[str, Any]]:
        if len(set(cols)) != len(cols):
            self.fail("duplicate column name in a table header", header)
        rows: list[dict[str, Any]] = []
        first = self.peek()
        if first is None or first.indent <= owner:
            if not self.lenient:
                self.fail("table header has no rows below it", header)
            self.notes.add(header.num, "read a table with no rows as []")
            return rows
        indent = self.child_indent(owner, first)
        while (line := self.peek()) is not None and line.indent == indent:
            self.take(line)
            fail = self.failer(line)
            cells = self.cells(line.text, line, 0)
            if len(cells) != len(cols):
                fail(f"row has {len(cells)} cells; the header has {len(cols)} columns", 0)
            rows.append(
                {c: parse_scalar(t, o, fail) for c, (t, o) in zip(cols, cells, strict=True)}
            )
        self.no_deeper(owner)
        if self._loose_table_lines:
            self.notes.add(self._loose_table_lines[0], "ignored spaces after ',' in the table")
            self._loose_table_lines.clear()
        return rows

    def cells(self, text: str, line: Line, offset: int) -> list[tuple[str, int]]:
        """The comma-separated cells of a table row or header; lenient skips spaces after
        the commas (models often write ``1, Ada`` by analogy with inline arrays)."""
        out = split_items(text, self.failer(line), offset, CELL_SEP, loose=self.lenient)
        if self.lenient and any(o > offset and line.text[o - 1] == " " for _, o in out):
            self._loose_table_lines.append(line.num)
        return out
