"""What a writer for another loom's format produced, and what that format could not hold."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Written:
    """``data`` is the file's content (``str`` for text formats), ``media_type`` and ``extension``
    (with its dot, ``".json"``) name it; ``cannot_hold`` says in words each thing of the tree the
    format has no place for ("3 links (socketteer/loom has no links between nodes)")."""

    data: str | bytes
    media_type: str
    extension: str
    cannot_hold: list[str] = field(default_factory=list)
