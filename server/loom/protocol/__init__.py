"""The Loom Protocol: an indentation-based format for JSON data exchanged with models.

``dumps`` writes it, ``loads`` reads it back (strict by default; ``lenient=True`` accepts
what models commonly write), ``loads_lenient`` also says what it assumed. The grammar is
in ``docs/protocol.md``.
"""

from loom.protocol.decoder import LenientResult, loads, loads_lenient
from loom.protocol.encoder import dumps
from loom.protocol.errors import LoomEncodeError, LoomEncodeTypeError, LoomProtocolError

dump_for_model = dumps
"""Alias of :func:`dumps`: the text to put in a prompt is the canonical encoding."""

__all__ = [
    "LenientResult",
    "LoomEncodeError",
    "LoomEncodeTypeError",
    "LoomProtocolError",
    "dump_for_model",
    "dumps",
    "loads",
    "loads_lenient",
]
