"""Identifiers: ULIDs for entities, localIds for nodes (SPEC-NOTES decision 2).

A ULID's first 10 characters are its timestamp, so prefixes of nodes made in the same few
minutes collide. A localId is therefore taken from the ULID's *random* part: 6 lowercase
Crockford base32 characters, extended one character at a time on collision within a tree.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import time
from typing import Any

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
LOCAL_ID_LENGTH = 6
MIN_PREFIX = 3

_LOCAL_ID_RE = re.compile(rf"^[{CROCKFORD}]{{{MIN_PREFIX},16}}$")
# Crockford decoding is forgiving: i/l read as 1, o as 0.
_NORMALISE = str.maketrans({"i": "1", "l": "1", "o": "0"})


@functools.cache
def _ulid() -> Any:
    """python-ulid's ``ULID``, imported on first use: its import reads package metadata
    (12-14 ms)."""
    from ulid import ULID

    return ULID


def new_ulid() -> str:
    """A ULID whose random part is fresh randomness every time.

    python-ulid is monotonic within a millisecond (it increments the random part), which
    would give every node of a bulk insert or an n:3 generation the same first localId
    characters; localIds need independent random parts. Made as ``new_ulids`` makes them,
    without python-ulid: an editor's session opens with one, before its first answer."""
    return new_ulids(1)[0]


_B32_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
                                     CROCKFORD.upper().encode())
# Any byte → the Crockford character of its low five bits (256 is a multiple of 32, so a
# random byte gives a uniformly random character: five random bits).
_BYTE_TO_CROCKFORD = bytes(CROCKFORD.upper().encode()[b % 32] for b in range(256))


def new_ulids(count: int) -> list[str]:
    """``count`` ULIDs as ``new_ulid`` makes them (this millisecond, fresh randomness
    each), several times faster: an import of a foreign file makes one a node. The time
    is encoded once (its 6 bytes left-padded to 10 and base32-encoded: the last 10 of 16
    characters); each random part is 16 random bytes mapped in C to 16 characters of five
    random bits each (80 bits, as a ULID's)."""
    head = b"\0\0\0\0" + (time.time_ns() // 1_000_000).to_bytes(6, "big")
    stamp = base64.b32encode(head).translate(_B32_TO_CROCKFORD).decode()[6:]
    random = os.urandom(16 * count).translate(_BYTE_TO_CROCKFORD).decode()
    return [stamp + random[i:i + 16] for i in range(0, 16 * count, 16)]


def ordered_ulid() -> str:
    """A ULID that sorts after every earlier one this process made, even within the same
    millisecond (python-ulid increments the random part): for records listed in the order
    they were made, on any database (PostgreSQL has no insertion-ordered rowid)."""
    return str(_ulid()())


def local_id_candidates(ulid: str) -> list[str]:
    """The localIds a node may take, shortest first (6 characters up to the whole random part)."""
    random_part = ulid[10:].lower()
    return [random_part[:n] for n in range(LOCAL_ID_LENGTH, len(random_part) + 1)]


def normalise_local_id(text: str) -> str:
    """Lower-case a typed id and fold Crockford's look-alike letters."""
    return text.strip().lower().translate(_NORMALISE)
