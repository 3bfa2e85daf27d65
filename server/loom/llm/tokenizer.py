"""The bundled local model's tokenizer, for exact token counts (SPEC-NOTES decision 14).

No model code runs in a Loom process, so the count does not come from llama.cpp:
the vocabulary and merges are read once from the SmolLM2 .gguf (llama.cpp's own ``gguf``
reader, about 2 s) into a Hugging Face ``tokenizers`` BPE with SmolLM2's pre-tokenizer
(digits one by one, then GPT-2's byte-level split, as llama.cpp's ``smollm`` pre-type
does), cached as ``tokenizer.json`` beside the cached model (later loads take ~0.1 s).
Counts equal llama-server's ``/tokenize`` (tests/e2e/test_model_service.py checks it).
``loom.app`` installs :func:`local_tokenizer` into :mod:`loom.memory.counting`; the core
never imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loom.llm.service.paths import cache_dir
from loom.llm.service.setup import MODEL_FILE, bundled_gguf
from loom.memory.counting import Tokenizer


def tokenizer_file() -> Path:
    return cache_dir() / "models" / f"{Path(MODEL_FILE).stem}.tokenizer.json"


def build_tokenizer(gguf_path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` equal to llama.cpp's for a GPT-2-style (``smollm``) gguf."""
    from gguf import GGUFReader
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    fields = GGUFReader(str(gguf_path)).fields
    kind = fields["tokenizer.ggml.model"].contents()
    if kind != "gpt2":
        raise ValueError(f"{gguf_path.name}: a {kind!r} tokenizer, not a BPE one")
    tokens = fields["tokenizer.ggml.tokens"].contents()
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"].contents()]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    tok = HFTokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def load_tokenizer() -> Any | None:
    """The cached tokenizer, built from the bundled .gguf the first time; None without one."""
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        return None
    cached = tokenizer_file()
    if cached.is_file():
        return HFTokenizer.from_file(str(cached))
    gguf_path = bundled_gguf()
    if gguf_path is None:
        return None
    try:
        tok = build_tokenizer(gguf_path)
    except ImportError:
        return None
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    tok.save(str(partial))
    partial.replace(cached)
    return tok


def local_tokenizer() -> Tokenizer | None:
    """A token counter over the bundled model's vocabulary, or None when it is not set up."""
    tok = load_tokenizer()
    if tok is None:
        return None

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    return count
