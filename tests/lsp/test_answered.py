"""Every request answered, with the right code, whatever a client sends.

The malformed-traffic set (``tests/lsp/malformed.py``: garbage frames, batches, invalid
params for standard and Loom requests and commands, unknown methods, notifications with
bad params, a client that answers the server's requests with null, an error or not at
all, cancellation) runs against one real server over stdio; the lifecycle set covers
requests before ``initialize``, ``shutdown`` with requests in flight, requests after it
and ``exit``. Before this change 39 of them (of the first 110) got no answer at all."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.malformed import Outcome, cases, fresh_db, run_lifecycle, run_set


def _report(outcomes: list[Outcome]) -> str:
    bad = [o for o in outcomes if not (o.answered and o.correct)]
    return "\n".join(f"{o.line}: {str(o.got)[:240]}" for o in bad)


def test_the_set_is_large_enough() -> None:
    groups = {c.group for c in cases()}
    assert len(cases()) >= 40
    assert {"garbage", "standard", "loom request", "loom command", "client answers",
            "unknown", "notification", "cancel"} <= groups


async def test_every_malformed_request_is_answered(tmp_path: Path) -> None:
    outcomes = await run_set(fresh_db(tmp_path))
    assert len(outcomes) == len(cases()) + 1
    assert not _report(outcomes), _report(outcomes)


async def test_lifecycle_every_request_is_answered_and_exit_ends(tmp_path: Path) -> None:
    outcomes = await run_lifecycle(fresh_db(tmp_path))
    assert [o.case.name for o in outcomes if o.case.group == "after shutdown"] == [
        "hover after shutdown", "loom/read after shutdown", "a command after shutdown",
        "a second shutdown", "a notification after shutdown",
        "exit ends the process with code 0"]
    assert not _report(outcomes), _report(outcomes)
