"""The seeds' line formats, one function each (tested against the seeds' example text)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loom.model import permissions as perms
from loom.render.text import plural

BOUNDARY = "︱"
MODEL_MARK = "›"


def ok(first: str, *rest: str) -> str:
    """``✓ first`` with continuation lines indented two spaces."""
    return "\n".join([f"✓ {first}", *(f"  {line}" for line in rest)])


def error(code: str, message: str, hint: str | None = None) -> str:
    """``✗ CODE: message`` and, when there is one, ``  hint: …`` on the next line."""
    text = f"✗ {code}: {message}"
    return f"{text}\n  hint: {hint}" if hint else text


def ref(label: str) -> str:
    return f"[{label}]"


def node_header(label: str, author: str, when: str, depth: int) -> str:
    """``[a7x2] human · 3m ago · depth:7`` (the first line of ``view``)."""
    return f"{ref(label)} {author} · {when} · depth:{depth}"


def counts_line(continuations: int, annotations: int | None, links: int) -> str:
    """``3 continuations · 1 annotation · 1 link``; zero annotations and links are left out,
    and ``annotations=None`` leaves them out (they are listed above)."""
    parts = [plural(continuations, "continuation")]
    if annotations:
        parts.append(plural(annotations, "annotation"))
    if links:
        parts.append(plural(links, "link"))
    return " · ".join(parts)


def connections(continuations: int, annotations: int, links: int) -> str:
    """The connections part of per-node metadata; empty when there are none."""
    parts = []
    if continuations:
        parts.append(plural(continuations, "continuation"))
    if annotations:
        parts.append(plural(annotations, "annotation"))
    if links:
        parts.append(plural(links, "link"))
    return " · ".join(parts)


def node_metadata(label: str, author: str, when: str, conn: str = "") -> str:
    """Per-node metadata (001): ``[localId] author · time · connections``."""
    line = f"{ref(label)} {author} · {when}"
    return f"{line} · {conn}" if conn else line


def ambient(node: str, depth: int, siblings: int, annotations: int, links: int) -> str:
    return (f"⟨node:{node} depth:{depth} siblings:{siblings} annotations:{annotations} "
            f"links:{links}⟩")


def ambient_buffer(node: str, doc: str, words: int) -> str:
    return f'⟨node:{node} mode:buffer doc:"{doc}" words:{words}⟩'


def ambient_extended(line: str, permissions: Iterable[str],
                     others: Sequence[tuple[str, str]] = ()) -> str:
    """Seed 000's extended context after an ambient ``line``: ``⟨node:…⟩
    ⟨permissions:aware,write,read⟩ ⟨human active at c4m2⟩`` (a node, not a branch:
    SPEC-NOTES 6), one ``⟨… active at …⟩`` for each other participant active in the tree."""
    short = ",".join(perms.SHORT[p] for p in perms.ordered(permissions)) or "none"
    parts = [line, f"⟨permissions:{short}⟩"]
    parts += [f"⟨{who} active at {where}⟩" for who, where in others]
    return " ".join(parts)


def active_line(who: str, label: str, depth: int) -> str:
    """System-level visibility (001, decision 7): ``Human active at [c4m2], depth:8``."""
    return f"{who[:1].upper()}{who[1:]} active at {ref(label)}, depth:{depth}"


@dataclass(frozen=True)
class ProsePiece:
    content: str
    by_model: bool


def prose(pieces: Sequence[ProsePiece]) -> str:
    """Buffer prose for models: ``︱`` at node boundaries, ``›`` before model text."""
    out: list[str] = []
    for i, p in enumerate(pieces):
        if i:
            out.append(BOUNDARY + (MODEL_MARK if p.by_model else ""))
        out.append(p.content)
    return "".join(out)


def compact_path(labels: Sequence[str]) -> str:
    """``r001 → ... → a7x2 → b3k9``: root, an ellipsis, and the last two."""
    if len(labels) <= 4:
        return " → ".join(labels)
    return " → ".join([labels[0], "...", labels[-2], labels[-1]])


def doc_ref(name: str, section: str | None = None) -> str:
    return f'doc:"{name}"' + (f" §{section}" if section else "")
