import asyncio

import pytest

from loom.llm.aio import gather_all, run_cancellable
from loom.llm.assemble import Collector, DeltaCallbackError
from loom.llm.base import ModelError, Usage
from loom.llm.retry import Attempt


async def test_run_cancellable_returns_result():
    async def work():
        return 42

    assert await run_cancellable(work(), asyncio.Event()) == 42
    assert await run_cancellable(work(), None) == 42


async def test_run_cancellable_stops_a_stalled_call():
    cancel = asyncio.Event()
    stopped = asyncio.Event()

    async def stall():
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()

    asyncio.get_running_loop().call_later(0.02, cancel.set)
    with pytest.raises(ModelError) as info:
        await asyncio.wait_for(run_cancellable(stall(), cancel), 2)
    assert info.value.kind == "cancelled"
    assert stopped.is_set()


async def test_run_cancellable_leaves_the_caller_usable():
    cancel = asyncio.Event()

    async def swallow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "ignored the cancellation"

    asyncio.get_running_loop().call_later(0.01, cancel.set)
    with pytest.raises(ModelError, match="cancelled"):
        await run_cancellable(swallow(), cancel)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)  # no stray cancellation is pending for this task


async def test_run_cancellable_passes_outer_cancellation_through():
    async def stall():
        await asyncio.sleep(30)

    task = asyncio.ensure_future(run_cancellable(stall(), asyncio.Event()))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_run_cancellable_already_set():
    cancel = asyncio.Event()
    cancel.set()

    async def work():
        raise AssertionError("must not run")

    with pytest.raises(ModelError, match="cancelled"):
        await run_cancellable(work(), cancel)


async def test_gather_all_cancels_siblings_on_first_failure():
    cancelled = []

    async def slow(i):
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    async def fail():
        await asyncio.sleep(0.01)
        raise ModelError("server", "x")

    with pytest.raises(ModelError):
        await gather_all([slow(0), fail(), slow(2)])
    assert sorted(cancelled) == [0, 2]


def test_collector_resets_an_index_on_a_new_attempt():
    seen = []
    c = Collector(2, lambda i, s: seen.append((i, s)), None)
    sink = c.begin(Attempt(1), [0])
    sink.raw({"a": 1})
    sink.text(0, "half")
    sink = c.begin(Attempt(2), [0])
    sink.raw({"a": 2})
    sink.text(0, "whole")
    sink.finish(0, "stop")
    sink.usage(Usage(prompt_tokens=3, completion_tokens=1), 0)
    other = c.begin(Attempt(1), [1])
    other.text(1, "two")
    other.usage(Usage(prompt_tokens=3, completion_tokens=1), 1)
    result = c.build(model="m", provider="p", params={"n": 2})
    assert [x.text for x in result.completions] == ["whole", "two"]
    assert result.completions[0].finish_reason == "stop"
    assert result.raw == [{"a": 2}]
    assert result.usage == Usage(prompt_tokens=6, completion_tokens=2)
    assert seen == [(0, "half"), (0, "whole"), (1, "two")]


def test_sink_stops_after_cancel_and_wraps_callback_errors():
    cancel = asyncio.Event()
    c = Collector(1, None, cancel)
    sink = c.begin(Attempt(1), [0])
    sink.text(0, "a")
    cancel.set()
    with pytest.raises(ModelError, match="cancelled"):
        sink.text(0, "b")

    def bad(_i, _s):
        raise ValueError("caller bug")

    sink = Collector(1, bad, None).begin(Attempt(1), [0])
    with pytest.raises(DeltaCallbackError) as info:
        sink.text(0, "x")
    assert isinstance(info.value.original, ValueError)


def test_raw_chunks_are_serialised_and_redacted():
    from openai._models import construct_type
    from openai.types import Completion as SdkCompletion

    from loom.llm.assemble import raw_to_json

    chunk = construct_type(
        type_=SdkCompletion,
        value={"id": "c",
               "choices": [{"index": 0, "text": "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAA7A"}]},
    )
    out = raw_to_json([chunk, {"plain": "password=hunter2", "n": 1}])
    assert out == [
        {"id": "c", "choices": [{"index": 0, "text": "[REDACTED]"}]},
        {"plain": "password=[REDACTED]", "n": 1},
    ]
    # A numeric "password" would break the JSON text when redacted: fall back per value.
    assert raw_to_json([{"password": 12345678}]) == [{"password": 12345678}]
