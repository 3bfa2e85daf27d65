"""Shared fixtures: a fresh SQLite workspace per test, and a fixed clock."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(tmp_path: Path, clock: Clock):  # type: ignore[no-untyped-def]
    from loom.app import open_app

    a = open_app(tmp_path / "loom.db", use_default_subject=False)
    a.ws.clock = clock
    return a
