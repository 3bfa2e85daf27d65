"""Token counts for budgets and stash sizes (SPEC-NOTES decision 14).

Uses the bundled local model's tokenizer (llama.cpp, vocabulary only: fast, no weights)
when it is installed; otherwise a documented estimate of one token per four characters.
Callers label which.
"""

from __future__ import annotations

import atexit
import functools
import math
from typing import Any


@functools.cache
def _tokenizer() -> Any | None:
    try:
        import llama_cpp

        from loom.llm.providers.local import bundled_gguf, quiet_llama_logs

        path = bundled_gguf()
        if path is None:
            return None
        quiet_llama_logs()
        tok = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        atexit.register(tok.close)  # before interpreter teardown breaks its finalizer
        return tok
    except Exception:  # no llama.cpp, no model, or a model that will not load: estimate
        return None


def count_tokens(text: str, exact: bool = True) -> tuple[int, bool]:
    """``(count, is_exact)``. ``exact=False`` skips loading the tokenizer."""
    if exact:
        tok = _tokenizer()
        if tok is not None:
            return len(tok.tokenize(text.encode("utf-8"), add_bos=False)), True
    return max(1, math.ceil(len(text) / 4)) if text else 0, False
