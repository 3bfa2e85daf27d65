"""The bundled local model's tokenizer, for exact token counts (SPEC-NOTES decision 14).

Only the vocabulary is loaded (llama.cpp ``vocab_only``: fast, no weights). ``loom.app``
installs :func:`local_tokenizer` into :mod:`loom.memory.tokens`; the core never imports
this module.
"""

from __future__ import annotations

import atexit

from loom.memory.tokens import Tokenizer


def local_tokenizer() -> Tokenizer | None:
    """A token counter over the bundled model's vocabulary, or None when llama.cpp or the
    model is not installed."""
    try:
        import llama_cpp
    except ImportError:
        return None
    from loom.llm.providers.local import bundled_gguf, quiet_llama_logs

    path = bundled_gguf()
    if path is None:
        return None
    quiet_llama_logs()
    tok = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    atexit.register(tok.close)  # before interpreter teardown breaks its finalizer

    def count(text: str) -> int:
        return len(tok.tokenize(text.encode("utf-8"), add_bos=False))

    return count
