"""What a reader puts on a node besides text: a bookmark (with an optional label), tags and
a rating, kept in the node's ``bookmarked`` column and its ``extra`` JSON (``tags``,
``rating``, ``bookmarkLabel``: the names Open Loom's ``meta`` uses), plus the soft-delete
mark. Pure helpers over that JSON: no storage here."""

from __future__ import annotations

import json
from typing import Any

TAGS = "tags"
RATING = "rating"
BOOKMARK_LABEL = "bookmarkLabel"
DELETED = "deleted"  # {"at": unix seconds, "by": participant id, "root": the subtree's root}
#: How long a deleted subtree (or tree) can be restored before it may be purged.
UNDO_WINDOW_S = 30 * 24 * 3600


def extra_of(raw: Any) -> dict[str, Any]:
    """A node's ``extra`` as a dict, whether it came as a dict (a model) or JSON text (a
    row read for display)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw:
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


#: socketteer tags that are flags in Loom (bookmarked, pruned), not tags.
_FLAG_TAGS = frozenset({"bookmark", "archived"})


def tags_of(extra: Any) -> list[str]:
    """The node's tags: ``extra["tags"]``, or for a node imported from socketteer/loom
    before importers wrote that, the tags its file gave it (kept under ``socketteer``)."""
    data = extra_of(extra)
    tags = data.get(TAGS)
    if not isinstance(tags, list):
        kept = data.get("socketteer")
        tags = kept.get("tags") if isinstance(kept, dict) else None
        if not isinstance(tags, list):
            return []
        tags = [t for t in tags if str(t) not in _FLAG_TAGS]
    return [str(t) for t in tags if str(t).strip()]


def rating_of(extra: Any) -> int | None:
    value = extra_of(extra).get(RATING)
    if isinstance(value, bool):
        return 1 if value else -1
    return value if isinstance(value, int) else None


def bookmark_label(extra: Any) -> str | None:
    label = extra_of(extra).get(BOOKMARK_LABEL)
    return label if isinstance(label, str) and label.strip() else None


def deleted_of(extra: Any) -> dict[str, Any] | None:
    mark = extra_of(extra).get(DELETED)
    return mark if isinstance(mark, dict) else None


def normal_tag(tag: str) -> str:
    """Tags as typed (``#Dream``, ``dream``) are one tag: lower case, no ``#``, words
    joined by ``-`` (``"late night"`` is ``late-night``)."""
    return "-".join(tag.strip().lstrip("#").lower().split())


JUDGE = "judge"  # {"score": 0-10, "reason": one line, "rubric": the judge's rubric}


def judgement_of(extra: Any) -> dict[str, Any] | None:
    """The exploration judge's score on a node (``→ explore``): ``{"score", "reason",
    "rubric"}``, or None when no judge scored it."""
    mark = extra_of(extra).get(JUDGE)
    if not isinstance(mark, dict) or not isinstance(mark.get("score"), int | float):
        return None
    return mark


def judge_line(extra: Any) -> str | None:
    """``7/10 — vivid, and it opens a door`` (the hover's ``Judge:`` line), or None."""
    mark = judgement_of(extra)
    if mark is None:
        return None
    reason = str(mark.get("reason") or "").strip()
    return f"{mark['score']:g}/10" + (f" — {reason}" if reason else "")
