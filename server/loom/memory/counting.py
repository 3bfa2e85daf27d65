"""Token counts for budgets and stash sizes (SPEC-NOTES decision 14).

Exact counts come from a tokenizer the composition root installs with
:func:`use_tokenizer` (``loom.app`` installs the bundled local model's vocabulary, see
:mod:`loom.llm.tokenizer`); without one, or when it cannot load, the count is a documented
estimate of one token per four characters. Callers label which.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

#: An exact token count of a text.
Tokenizer = Callable[[str], int]
#: Loads a tokenizer on first use (it may be slow), or gives None when there is none.
TokenizerLoader = Callable[[], Tokenizer | None]

_loader: TokenizerLoader | None = None


def use_tokenizer(loader: TokenizerLoader | None) -> None:
    """Count exactly with what ``loader`` loads (on the first exact count); None: estimate.
    Installing the same loader again keeps the loaded tokenizer."""
    global _loader
    if loader is not _loader:
        _loader = loader
        _tokenizer.cache_clear()


@functools.cache
def _tokenizer() -> Tokenizer | None:
    loader = _loader
    if loader is None:
        return None
    try:
        return loader()
    except Exception:  # a tokenizer that will not load: estimate
        return None


def count_tokens(text: str, exact: bool = True) -> tuple[int, bool]:
    """``(count, is_exact)``. ``exact=False`` skips loading the tokenizer."""
    if exact:
        tok = _tokenizer()
        if tok is not None:
            return tok(text), True
    return max(1, math.ceil(len(text) / 4)) if text else 0, False
