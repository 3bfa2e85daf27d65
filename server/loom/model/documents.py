"""Markdown documents split into sections by heading (``§id`` references)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.errors import LoomError

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{#([\w-]+)\})?\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    level: int
    start: int  # 0-based line of the heading
    end: int  # 0-based exclusive end line


def slug(text: str) -> str:
    s = re.sub(r"[^\w\s-]", "", text.lower().replace("'", "").replace("’", ""))
    return re.sub(r"[\s_]+", "-", s).strip("-")


def sections(content: str) -> list[Section]:
    lines = content.split("\n")
    heads: list[tuple[int, int, str, str]] = []
    in_fence = False
    seen: dict[str, int] = {}
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        m = None if in_fence else _HEADING.match(line)
        if m:
            title = m.group(2)
            sid = m.group(3) or slug(title) or f"section-{len(heads) + 1}"
            if sid in seen:
                seen[sid] += 1
                sid = f"{sid}-{seen[sid]}"
            else:
                seen[sid] = 1
            heads.append((i, len(m.group(1)), title, sid))
    out = []
    for k, (start, level, title, sid) in enumerate(heads):
        end = len(lines)
        for start2, level2, _, _ in heads[k + 1:]:
            if level2 <= level:
                end = start2
                break
        out.append(Section(sid, title, level, start, end))
    return out


def check_name(name: str) -> str:
    """A document's name as given, stripped; ``INVALID_SYNTAX`` for an empty one, the one
    answer every tool gives (the store checks it on every lookup and creation)."""
    name = name.strip()
    if not name:
        raise LoomError("INVALID_SYNTAX", "a document needs a name",
                        'name it in quotes, as doc:"character notes"; → read alone lists '
                        "the documents")
    return name


FUZZY_SCORE = 85  # a misspelt name still finds the one section it is this close to


def section_name(ref: str) -> str:
    """A section reference as the participant wrote it, without its ``§``: how every
    output names the section afterwards (SPEC-NOTES 16: ``§motivation``)."""
    return ref.strip().lstrip("§").strip()


def find_section(content: str, ref: str) -> Section | list[Section]:
    """The section a reference names: exact id (a heading's slug or its explicit
    ``{#id}``), then the unique one whose id or title has it as a word or a prefix, then
    the unique one fuzzily close to it; a list of candidates when none or several match."""
    name = section_name(ref)
    ref_slug = slug(name)
    all_sections = sections(content)
    for s in all_sections:
        if s.id == ref_slug or s.id == name:
            return s
    hits = [s for s in all_sections
            if ref_slug and (ref_slug in s.id.split("-") or s.id.startswith(ref_slug)
                             or ref_slug in slug(s.title))]
    if len(hits) == 1:
        return hits[0]
    if not hits and ref_slug:
        from rapidfuzz import fuzz

        def score(s: Section) -> float:
            words = {s.id, *s.id.split("-"), *slug(s.title).split("-")}
            return max(fuzz.ratio(ref_slug, w) for w in words if w)

        close = [s for s in all_sections if score(s) >= FUZZY_SCORE]
        if len(close) == 1:
            return close[0]
        hits = close
    return hits or all_sections


def same_section(content: str, a: str, b: str) -> bool:
    """Whether two references name one section of ``content`` (or, naming none, are the
    same name)."""
    first, second = find_section(content, a), find_section(content, b)
    if isinstance(first, Section) and isinstance(second, Section):
        return first.id == second.id
    return section_name(a) == section_name(b)


_EXPLICIT_ID = re.compile(r"\s*\{#[\w-]+\}(?=\s*#*\s*$)")


def without_ids(text: str) -> str:
    """The text with each heading as written, less its explicit ``{#id}`` (SPEC-NOTES 16:
    the id names the section, it is no part of what the reader reads)."""
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _HEADING.match(line):
            line = _EXPLICIT_ID.sub("", line)
        out.append(line)
    return "\n".join(out)
