"""Token counts: exact with the tokenizer the composition root installs, else an estimate
labelled as one (SPEC-NOTES decision 14)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loom.memory import counting
from loom.memory.counting import count_tokens, use_tokenizer


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = counting._loader  # the process-wide tokenizer other tests rely on
    yield
    use_tokenizer(before)


def test_without_a_tokenizer_the_count_is_an_estimate() -> None:
    use_tokenizer(None)
    assert count_tokens("twelve chars") == (3, False)
    assert count_tokens("") == (0, False)


def test_an_installed_tokenizer_counts_exactly_and_loads_once() -> None:
    loads: list[int] = []

    def loader():  # type: ignore[no-untyped-def]
        loads.append(1)
        return lambda text: len(text.split())

    use_tokenizer(loader)
    assert count_tokens("one two three") == (3, True)
    use_tokenizer(loader)  # installing it again keeps what was loaded
    assert count_tokens("a b") == (2, True)
    assert count_tokens("a b c d e f g h", exact=False) == (4, False)
    assert loads == [1]


def test_a_tokenizer_that_cannot_load_falls_back_to_the_estimate() -> None:
    def broken():  # type: ignore[no-untyped-def]
        raise OSError("model file is damaged")

    use_tokenizer(broken)
    assert count_tokens("twelve chars") == (3, False)
    use_tokenizer(lambda: None)  # nothing installed (no llama.cpp): the same
    assert count_tokens("twelve chars") == (3, False)
