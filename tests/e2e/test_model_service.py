"""The local model's service without the model: a stand-in llama-server
(tests/e2e/fake_llama_server.py) run by the real supervisor, found through the real
records. One service however many clients race to start it; a server that cannot start
says why; an idle service stops by itself; a dead supervisor's leftovers are cleared; the
files that hold the service's key are the user's alone."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from loom.llm import ModelError, ModelProfile, make_provider
from loom.llm.service import client as service
from loom.llm.service.record import alive
from loom.model.sampling import Sampling
from tests.e2e.conftest import FakeLlama


def spec(fake: FakeLlama):  # type: ignore[no-untyped-def]
    return service.spec_for(str(fake.model))


def wait_until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_racing_clients_share_one_service(fake_llama: FakeLlama) -> None:
    got: list[str] = []

    def start() -> None:
        got.append(service.ensure_running(spec(fake_llama)).instance)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and len(set(got)) == 1
    record = service.running(spec(fake_llama))
    assert record is not None and record.instance == got[0]
    assert service.healthy(record)


async def test_a_generation_through_the_service(fake_llama: FakeLlama) -> None:
    p = make_provider(ModelProfile(name="l", provider="local", model=str(fake_llama.model)))
    result = await p.complete("Once", Sampling(n=6, tokens=5))
    assert [c.index for c in result.completions] == list(range(6))
    # n beyond the server's slots is split into requests of at most that many
    sizes = [r["body"]["n"] for r in fake_llama.requests()]
    assert sorted(sizes) == [2, service.PARALLEL]
    assert result.provider == "local"


def test_the_key_is_asked_for_and_kept_private(fake_llama: FakeLlama) -> None:
    record = service.ensure_running(spec(fake_llama))
    request = urllib.request.Request(record.base_url + "/completions", method="POST",
                                     data=json.dumps({"prompt": "x"}).encode(),
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 401
    files = service.files_of(spec(fake_llama))
    assert stat.S_IMODE(fake_llama.runtime.stat().st_mode) == 0o700
    assert stat.S_IMODE(files.record.stat().st_mode) == 0o600
    assert not files.record.with_suffix(".key").exists()  # read at start, then removed
    cmdline = Path(f"/proc/{record.server_pid}/cmdline").read_bytes()
    assert record.api_key.encode() not in cmdline  # `ps` does not show it


def test_a_server_that_cannot_start_says_why(fake_llama: FakeLlama,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_EXIT", "3")
    with pytest.raises(ModelError) as failed:
        service.ensure_running(spec(fake_llama))
    assert failed.value.message == ("the local model process could not start with status 3: "
                                    "error: failed to load model (fake)")
    monkeypatch.delenv("FAKE_LLAMA_EXIT")
    assert service.ensure_running(spec(fake_llama))  # and the next try starts one


def test_an_idle_service_stops_by_itself(fake_llama: FakeLlama,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_MODEL_IDLE_S", "1")
    record = service.ensure_running(spec(fake_llama))
    files = service.files_of(spec(fake_llama))
    wait_until(lambda: not alive(record.supervisor_pid) and not alive(record.server_pid))
    ended = files.read_exit()
    assert ended is not None and ended.reason == "idle" and ended.instance == record.instance
    assert files.read_record() is None


def test_a_dead_supervisors_server_goes_and_a_new_one_starts(fake_llama: FakeLlama) -> None:
    record = service.ensure_running(spec(fake_llama))
    os.kill(record.supervisor_pid, signal.SIGKILL)
    wait_until(lambda: not alive(record.server_pid))  # it dies with its supervisor
    again = service.ensure_running(spec(fake_llama))
    assert again.instance != record.instance and service.healthy(again)


def test_stop_all(fake_llama: FakeLlama) -> None:
    record = service.ensure_running(spec(fake_llama))
    assert service.stop_all(fake_llama.runtime) == 1
    assert not alive(record.server_pid) and not alive(record.supervisor_pid)
    assert service.files_of(spec(fake_llama)).read_exit().reason == "stopped"  # type: ignore[union-attr]
