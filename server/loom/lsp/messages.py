"""What an editor shows of a message is its first line (Neovim echoes it, VS Code's status
bar and notifications lead with it): what the writer must not miss goes there. A typo's
reading, ``(read as → continue n:2 tokens:15)``, and a partial failure of ``models:`` were
last lines, seen only in ``:Loom messages``. Pure text functions."""

from __future__ import annotations

READ_AS = "(read as "


def note_first(text: str, note: str | None) -> str:
    """``text`` with ``note`` at the end of its first line."""
    if not note:
        return text
    head, sep, rest = text.partition("\n")
    return f"{head} {note}{sep}{rest}"


def read_as_first(text: str) -> str:
    """The executor's last line ``(read as …)`` moved up to the end of the first."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1].startswith(READ_AS) and lines[-1].endswith(")"):
        return note_first("\n".join(lines[:-1]), lines[-1])
    return text
