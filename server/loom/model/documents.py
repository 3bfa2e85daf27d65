"""Markdown documents split into sections by heading (``§id`` references)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def find_section(content: str, ref: str) -> Section | list[Section]:
    """The section a reference names (exact id, then a unique id/title containing it as a
    word); a list of candidates when none or several match."""
    ref_slug = slug(ref.lstrip("§"))
    all_sections = sections(content)
    for s in all_sections:
        if s.id == ref_slug or s.id == ref.lstrip("§"):
            return s
    hits = [s for s in all_sections
            if ref_slug and (ref_slug in s.id.split("-") or s.id.startswith(ref_slug)
                             or ref_slug in slug(s.title))]
    if len(hits) == 1:
        return hits[0]
    return hits or all_sections
