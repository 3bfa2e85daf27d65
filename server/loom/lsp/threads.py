"""Loop-only state checked (docs/architecture.md, "Threading model"): the open documents
and their buffers belong to the event loop's thread, and a method that changes them says
so with ``on_loop``. With ``LOOM_CHECK_LOOP=1`` (the test suites set it) a call from any
other thread raises ``OffTheLoop``; without it the check is one flag test.

The loop's thread is the one that answered ``initialize`` (``claim_loop``); before that,
and in a process that serves no editor (the unit tests' fake host), nothing is checked."""

from __future__ import annotations

import os
import threading

CHECKING = os.environ.get("LOOM_CHECK_LOOP", "").lower() in ("1", "on", "yes", "true")
_loop_thread: int | None = None


class OffTheLoop(AssertionError):
    """Loop-only state touched from another thread (a worker, a listener)."""


def claim_loop() -> None:
    """This thread runs the event loop: loop-only state is changed here only."""
    global _loop_thread
    _loop_thread = threading.get_ident()


def release_loop() -> None:
    """No thread is the loop's any more (a test's loop has ended)."""
    global _loop_thread
    _loop_thread = None


def on_loop(what: str) -> None:
    """Raise ``OffTheLoop`` when checking and this is not the loop's thread."""
    if CHECKING and _loop_thread is not None and threading.get_ident() != _loop_thread:
        raise OffTheLoop(f"{what}: loop-only state changed from thread "
                         f"{threading.current_thread().name!r}, not the event loop's")
