"""The preference log's vocabulary (schema v13 ``preference_event``) and a tree's settings
for it: which events there are, which of them are choices among siblings, and the tree
settings ``shuffle`` (sibling order randomised per showing) and ``blind`` (model names
hidden until the writer has chosen), kept in ``tree.extra["settings"]``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

SUGGESTION_SHOWN = "suggestion_shown"
SUGGESTION_ACCEPTED = "suggestion_accepted"
SUGGESTION_DISMISSED = "suggestion_dismissed"
SIBLING_PICK = "sibling_pick"
SWITCH = "switch"
PRUNE = "prune"
RATE = "rate"
BOOKMARK = "bookmark"
EDIT_OF_MODEL_TEXT = "edit_of_model_text"

Kind = Literal["suggestion_shown", "suggestion_accepted", "suggestion_dismissed",
               "sibling_pick", "switch", "prune", "rate", "bookmark", "edit_of_model_text"]
KINDS: tuple[str, ...] = (SUGGESTION_SHOWN, SUGGESTION_ACCEPTED, SUGGESTION_DISMISSED,
                          SIBLING_PICK, SWITCH, PRUNE, RATE, BOOKMARK, EDIT_OF_MODEL_TEXT)
#: Events that say the writer chose one node among its siblings (``chosen`` over
#: ``rejected``): these make preference pairs, win rates, and lift a blind tree's veil.
CHOICES: frozenset[str] = frozenset({SUGGESTION_ACCEPTED, SIBLING_PICK, SWITCH})

#: ``tree.extra`` key of the tree's settings
SETTINGS = "settings"
SHUFFLE = "shuffle"
BLIND = "blind"
SETTING_NAMES: tuple[str, ...] = (SHUFFLE, BLIND)


def settings_of(extra: Mapping[str, Any] | str | None) -> dict[str, bool]:
    """A tree's preference settings from its ``extra`` (a dict, or its JSON text)."""
    if isinstance(extra, str):
        import json

        try:
            extra = json.loads(extra)
        except ValueError:
            extra = None
    found = (extra or {}).get(SETTINGS) if isinstance(extra, Mapping) else None
    found = found if isinstance(found, Mapping) else {}
    return {name: bool(found.get(name, False)) for name in SETTING_NAMES}


def shuffles(extra: Mapping[str, Any] | str | None) -> bool:
    return settings_of(extra)[SHUFFLE]


def blind(extra: Mapping[str, Any] | str | None) -> bool:
    return settings_of(extra)[BLIND]
