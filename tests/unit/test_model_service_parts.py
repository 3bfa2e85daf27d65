"""The model service's pure parts: the portable build's flags and name, and a
dead model process in words."""

from __future__ import annotations

import pytest

from loom.llm.service import crash, setup
from loom.llm.service.record import ExitRecord
from tests.local_model import REQUIRED


def test_the_build_is_portable_whatever_the_builder() -> None:
    flags = setup.build_flags("x86_64")
    assert "-DGGML_NATIVE=OFF" in flags
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"} <= set(flags)
    assert {"-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF"} <= set(flags)
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in flags  # nothing fetched while building
    arm = setup.build_flags("aarch64")
    assert "-DGGML_NATIVE=OFF" in arm and not any("AVX" in f for f in arm)


def test_a_build_with_other_flags_is_another_build(monkeypatch: pytest.MonkeyPatch) -> None:
    key = setup.build_key("x86_64")
    assert key.startswith(f"{setup.LLAMA_CPP_SDIST[1]}-x86_64-")
    assert setup.build_key("aarch64") != key
    monkeypatch.setattr(setup, "_COMMON_FLAGS", (*setup._COMMON_FLAGS, "-DGGML_AVX512=ON"))
    assert setup.build_key("x86_64") != key


@pytest.mark.skipif(setup.built_server() is None and not REQUIRED,
                    reason="the local model server is not built (loom model setup)")
def test_the_built_server_holds_no_amx_or_avx512() -> None:
    server = setup.built_server()
    assert server is not None
    counts = setup.instruction_counts(server)
    assert counts == {"amx_instructions": 0, "zmm_uses": 0}


def ended(returncode: int | None, *tail: str) -> ExitRecord:
    return ExitRecord(instance="i", reason="crashed", returncode=returncode,
                      output_tail=list(tail), at=0.0)


def test_sigill_says_the_cpu_cannot_run_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crash, "cpu_flags", lambda: {"sse2", "avx", "fma"})
    err = crash.died(ended(-4))
    assert err.message == "the local model process died: illegal instruction (SIGILL)"
    assert err.hint is not None
    assert err.hint.startswith("this CPU cannot run the model server's build (it needs avx2, "
                               "f16c, bmi2, which this CPU does not list)")
    monkeypatch.setattr(crash, "cpu_flags", lambda: {"sse2", *setup.X86_NEEDS, "amx_tile"})
    err = crash.died(ended(-4), starting=True)
    assert err.message == "the local model process could not start: illegal instruction (SIGILL)"
    assert "reports but cannot run" in (err.hint or "")


def test_other_deaths_in_words() -> None:
    killed = crash.died(ended(-9))
    assert killed.message == ("the local model process was killed (SIGKILL) while it was "
                              "generating")
    assert "out of memory" in (killed.hint or "") and crash.AGAIN in (killed.hint or "")
    segv = crash.died(ended(-11, "llama_decode: failed to decode", "bye"))
    assert segv.message == ("the local model process died with SIGSEGV: llama_decode: failed "
                            "to decode")
    status = crash.died(ended(1, "error: unable to load model"), starting=True)
    assert status.message == ("the local model process could not start with status 1: "
                              "error: unable to load model")
    assert status.kind == "unavailable"
    assert crash.hung(4.0).render() == (
        "✗ MODEL_ERROR: the local model process stopped answering (nothing for 4 s); Loom "
        "stopped it\n  hint: the next request starts a fresh model process")


def test_missing_features_reads_x86_only() -> None:
    assert crash.missing_features({"fp", "asimd"}) == []  # an ARM CPU: nothing to say
    assert crash.missing_features(set()) == []
    assert crash.missing_features({"sse2", "avx"}) == ["avx2", "fma", "f16c", "bmi2"]


def test_the_runtime_directory_is_private(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loom.llm.service.paths import runtime_dir

    shared = tmp_path / "run"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv("LOOM_RUNTIME_DIR", str(shared))
    assert runtime_dir() == shared
    assert shared.stat().st_mode & 0o777 == 0o700


def test_model_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from loom.llm.service import client

    monkeypatch.delenv("LOOM_MODEL_THREADS", raising=False)
    for cores, threads in ((1, 1), (2, 1), (4, 3), (16, 15)):
        monkeypatch.setattr(client.os, "cpu_count", lambda c=cores: c)
        assert client.model_threads() == threads
    monkeypatch.setenv("LOOM_MODEL_THREADS", "1")
    assert client.model_threads() == 1
    monkeypatch.setenv("LOOM_MODEL_THREADS", "64")
    assert client.model_threads() == 16  # never more than the cores
    monkeypatch.setenv("LOOM_MODEL_THREADS", "lots")
    assert client.model_threads() == 15
