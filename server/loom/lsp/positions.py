"""A document's text with a line index, and LSP positions in utf-8, utf-16 or utf-32.

`→` is 3 UTF-8 bytes and 1 UTF-16 unit; ``︱`` likewise. Offsets here are Python string
indices (code points); positions convert through the negotiated encoding.
"""

from __future__ import annotations

import bisect


def units(s: str, encoding: str) -> int:
    """The length of ``s`` in the encoding's units."""
    if s.isascii() or encoding == "utf-32":
        return len(s)
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-16":
        return len(s.encode("utf-16-le")) // 2
    return len(s)


def _index_for_units(line: str, units: int, encoding: str) -> int:
    """The code-point index in ``line`` that ``units`` encoding units reach (clamped)."""
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    if encoding == "utf-8":
        raw = line.encode("utf-8")[:max(0, units)]
        return len(raw.decode("utf-8", errors="ignore"))
    # utf-16: decode the first ``units`` code units (in C: a long prose line is typed in
    # at every key); a position inside a surrogate pair counts the whole character.
    raw = line[:max(0, units)].encode("utf-16-le")[:2 * max(0, units)]
    index = len(raw.decode("utf-16-le", errors="ignore"))
    if len(line[:index].encode("utf-16-le")) < len(raw):
        index += 1  # the half of a pair that decoding dropped
    return min(index, len(line))


class TextDoc:
    """Text plus the offsets where lines start, kept up to date edit by edit."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.encoding = encoding
        self.text = text
        self._starts = self._line_starts(text, 0)
        self._ascii: dict[int, bool] = {}  # line → all ASCII (columns are offsets)

    @staticmethod
    def _line_starts(text: str, base: int) -> list[int]:
        starts = [base]
        i = text.find("\n")
        while i != -1:
            starts.append(base + i + 1)
            i = text.find("\n", i + 1)
        return starts

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, n: int) -> str:
        if not 0 <= n < len(self._starts):
            return ""
        start = self._starts[n]
        end = self._starts[n + 1] - 1 if n + 1 < len(self._starts) else len(self.text)
        return self.text[start:end]

    def line_start(self, n: int) -> int:
        return self._starts[max(0, min(n, len(self._starts) - 1))]

    def offset_at(self, line: int, character: int) -> int:
        """The offset of an LSP position (clamped into the document)."""
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self.text)
        text = self.line(line)
        return self._starts[line] + _index_for_units(text, character, self.encoding)

    def position_at(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start = self._starts[line]
        if self.encoding == "utf-32" or self._line_ascii(line):
            return line, offset - start
        prefix = self.text[start:offset]
        return line, (len(prefix) if prefix.isascii() else units(prefix, self.encoding))

    def _line_ascii(self, n: int) -> bool:
        flag = self._ascii.get(n)
        if flag is None:
            flag = self._ascii[n] = self.line(n).isascii()
        return flag

    def replace(self, start: int, end: int, new: str) -> None:
        """Replace ``text[start:end]`` with ``new`` and update the line index."""
        self.text = self.text[:start] + new + self.text[end:]
        first = bisect.bisect_right(self._starts, start)  # lines starting after `start`
        last = bisect.bisect_right(self._starts, end)
        delta = len(new) - (end - start)
        inserted = self._line_starts(new, start)[1:]
        tail = [s + delta for s in self._starts[last:]]
        self._starts[first:] = inserted + tail
        self._ascii.clear()
