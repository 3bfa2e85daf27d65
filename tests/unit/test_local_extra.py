"""Without the ``local`` extra, ``loom doctor`` and ``loom model setup`` name it first
(issue 44 item 7): before, both advised ``loom model setup``, which fetched 170 MB and built
for minutes before the user learned that nothing here could run the model."""

from __future__ import annotations

import importlib.util

import pytest

from loom import cli
from loom.llm import doctor
from loom.llm.service import setup

HINT = ("pipx install --force 'loom-lsp[local]' (uv tool install --force 'loom-lsp[local]'; "
        "in a virtualenv: pip install 'loom-lsp[local]')")


@pytest.fixture
def without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None if name in ("gguf", "tokenizers") else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_doctor_names_the_missing_extra_before_any_setup(without_the_extra: None) -> None:
    checks = doctor.local_setup()
    first = checks[0]
    assert (first.status, first.text) == (
        "error", "the 'local' extra is not installed (no module gguf, tokenizers)")
    assert first.hint == f"{HINT}, then run `loom model setup`"
    # the setup advice that follows is for after the extra
    later = [c.hint for c in checks[1:] if c.hint]
    assert all(h.startswith("after installing the 'local' extra") for h in later), later


def test_model_setup_refuses_without_the_extra_and_fetches_nothing(
        without_the_extra: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def never(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("fetched or built without the extra")

    monkeypatch.setattr(setup, "fetch_model", never)
    monkeypatch.setattr(setup, "build_server", never)
    monkeypatch.setattr(setup, "bundled_gguf", lambda: None)
    assert cli.main(["model", "setup"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("✗ SETUP: the 'local' extra is not installed (no module gguf, "
                          "tokenizers): nothing was fetched or built\n"), err
    assert f"  hint: {HINT}, then run `loom model setup` again" in err


def test_with_the_extra_nothing_is_said_of_it() -> None:
    assert setup.missing_local_extra() == []  # the test install has it
    assert not any("extra" in c.text for c in doctor.local_setup())
