import logging

import pytest

from loom.llm.base import ModelError
from loom.llm.retry import RetryPolicy, call_with_retry

FAST = RetryPolicy(max_attempts=3, base_s=0.001, max_s=0.004)


class Script:
    """A call that raises the scripted errors in turn, then returns "ok"."""

    def __init__(self, *errors, stream_before_fail=False):
        self.errors = list(errors)
        self.calls = 0
        self.stream_before_fail = stream_before_fail

    async def __call__(self, attempt):
        self.calls += 1
        assert attempt.number == self.calls
        if self.errors:
            if self.stream_before_fail:
                attempt.streamed = True
            raise self.errors.pop(0)
        return "ok"


def transient(kind="server"):
    return ModelError(kind, f"{kind} hiccup", retryable=True)


async def test_retries_transient_errors_then_succeeds():
    call = Script(transient("rate_limited"), transient("timeout"))
    assert await call_with_retry(call, FAST) == "ok"
    assert call.calls == 3


async def test_gives_up_after_max_attempts():
    call = Script(transient(), transient(), transient(), transient())
    with pytest.raises(ModelError) as info:
        await call_with_retry(call, FAST)
    assert info.value.kind == "server"
    assert call.calls == 3


@pytest.mark.parametrize("kind", ["auth", "bad_request", "malformed", "config", "cancelled"])
async def test_final_errors_are_not_retried(kind):
    call = Script(ModelError(kind, "no", retryable=False))
    with pytest.raises(ModelError):
        await call_with_retry(call, FAST)
    assert call.calls == 1


async def test_no_retry_once_something_streamed():
    call = Script(transient(), stream_before_fail=True)
    with pytest.raises(ModelError) as info:
        await call_with_retry(call, FAST)
    assert call.calls == 1
    assert info.value.partial


async def test_other_exceptions_propagate_untouched():
    async def boom(_attempt):
        raise KeyError("x")

    with pytest.raises(KeyError):
        await call_with_retry(boom, FAST)


async def test_backoff_is_jittered_exponential_and_capped():
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    policy = RetryPolicy(max_attempts=6, base_s=2.0, max_s=60.0)
    call = Script(*[transient() for _ in range(5)])
    assert await call_with_retry(call, policy, sleep=sleep) == "ok"
    # initial * 2**k plus up to `base` of jitter, never above the cap.
    for k, wait in enumerate(waits):
        low = min(2.0 * 2**k, 60.0)
        assert low <= wait <= min(low + 2.0, 60.0)
    assert len(waits) == 5


async def test_default_policy_is_base_2_max_60_three_attempts():
    assert RetryPolicy() == RetryPolicy(max_attempts=3, base_s=2.0, max_s=60.0)


async def test_retry_after_is_honoured_up_to_the_cap():
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    err = ModelError("rate_limited", "slow", retryable=True, retry_after_s=30.0)
    policy = RetryPolicy(max_attempts=2, base_s=0.001, max_s=5.0)
    await call_with_retry(Script(err), policy, sleep=sleep)
    assert waits == [5.0]


async def test_retries_are_logged(caplog):
    caplog.set_level(logging.WARNING, logger="loom.llm")
    await call_with_retry(Script(transient()), FAST)
    assert "server hiccup" in caplog.text
