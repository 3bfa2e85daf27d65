"""The semantic-token legend: the one piece of the decorations the server's capabilities
name, so ``initialize`` is answered before the features themselves are imported."""

from __future__ import annotations

from lsprotocol import types as lsp

from loom.model.tokens import BUCKET_NAMES

TOKEN_TYPES = ["loomModel", "loomHuman", "loomArrow", "loomVerb", "loomNodeRef", "loomFlag",
               "loomString", "loomDocRef"]
# nodeStart, edited, then the token-probability buckets (features/probabilities.py)
TOKEN_MODIFIERS = ["nodeStart", "edited", *BUCKET_NAMES]
LEGEND = lsp.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)
