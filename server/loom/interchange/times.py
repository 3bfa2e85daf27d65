"""Times in the files looms write, read into Unix seconds and written back exactly.

Open Loom writes ISO-8601 with a zone; the looms it imports write local times without a
zone (socketteer), milliseconds since 1970 (MiniLoom, exoloom) or Swift reference-date
seconds (Open Loom v1). A time that does not parse is dropped, never guessed (Open Loom
§ 8.5): the readers return ``None``.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

SWIFT_EPOCH = 978_307_200.0  # 2001-01-01T00:00:00Z, where Swift's Date counts from
_EARLIEST = 0.0  # 1970
_LATEST = 4_102_444_800.0  # 2100: later values are not times a loom wrote


def format_time(ts: float) -> str:
    """``2026-07-08T21:14:00Z``, with ``.123`` when the time has milliseconds and six
    digits only when it has microseconds, so that what Open Loom files say survives."""
    whole = math.floor(ts)
    micros = round((ts - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    # time.gmtime, not datetime: a third of the cost, and an export formats every node
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    if micros == 0:
        return text + "Z"
    if micros % 1000 == 0:
        return f"{text}.{micros // 1000:03d}Z"
    return f"{text}.{micros:06d}Z"


def parse_iso(value: object) -> float | None:
    """An ISO-8601 timestamp as Unix seconds; a time without a zone is read as UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _plausible(when.timestamp())


def parse_epoch(value: object, *, millis: bool | None = None) -> float | None:
    """Seconds or milliseconds since 1970 (``millis=None``: milliseconds when the number is
    too large to be seconds)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    seconds = value / 1000 if (millis or (millis is None and value > 1e11)) else float(value)
    return _plausible(seconds)


def parse_swift(value: object) -> float | None:
    """Swift ``Date`` as ``JSONEncoder`` writes it by default: seconds since 2001-01-01;
    an ISO string is accepted too (the ``.iso8601`` strategy)."""
    if isinstance(value, str):
        return parse_iso(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return _plausible(SWIFT_EPOCH + float(value))


def parse_any(value: object) -> float | None:
    """ISO text, else a number of seconds or milliseconds since 1970."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.replace(".", "", 1).isdigit():
            return parse_epoch(float(stripped))
        return parse_iso(stripped)
    return parse_epoch(value)


def _plausible(ts: float) -> float | None:
    return ts if _EARLIEST <= ts <= _LATEST else None
