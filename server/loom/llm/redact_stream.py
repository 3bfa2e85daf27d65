"""Redaction of text that streams in: a key split over two chunks never reaches the caller.

Each piece is appended to the unreleased text; what :func:`~loom.redact.release_point`
says no later piece can change is redacted and released, the rest (the word still
arriving, a header name waiting for its value, an open private key block) is held.
``flush`` releases the held text at the end of the stream, treating a key cut off by
the token limit as a secret too. The released pieces join to the stored text.
"""

from __future__ import annotations

from loom.redact import RUN_CHARS, redact, release_point


class StreamRedactor:
    """One stream's text: ``feed`` pieces in, ``flush`` at the end."""

    __slots__ = ("_pending", "_received", "_released")

    def __init__(self) -> None:
        self._pending = ""
        self._received: list[str] = []
        self._released: list[str] = []

    def feed(self, piece: str) -> str:
        """The redacted text that ``piece`` lets go of (often "", or more than ``piece``)."""
        self._received.append(piece)
        pending = self._pending + piece
        if not piece.strip(RUN_CHARS):
            # The piece only lengthens the last word, which is held anyway.
            self._pending = pending
            return ""
        cut, risky = release_point(pending)
        if cut == 0:
            self._pending = pending
            return ""
        out = redact(pending[:cut]) if risky else pending[:cut]
        self._pending = pending[cut:]
        self._released.append(out)
        return out

    def flush(self) -> str:
        """Everything still held, redacted as the end of a reply."""
        out = redact(self._pending, final=True)
        self._pending = ""
        if out:
            self._released.append(out)
        return out

    @property
    def received(self) -> str:
        """The text as it arrived (never stored or shown: it is what gets checked)."""
        return "".join(self._received)

    @property
    def text(self) -> str:
        """The redacted text released so far."""
        return "".join(self._released)
