"""Reading a file to import: only regular files, never more bytes than a limit allows.

An import reads what someone else wrote, so nothing about it is trusted: a FIFO or a
device (``/dev/zero``) would block or never end, a huge or decompression-bomb file would
exhaust memory. Limits come from ``ImportLimits`` (environment variables override the
defaults, which sit well above the largest real loom file: socketteer's demo is 1.6 MB).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from loom.errors import LoomError

MB = 1024 * 1024


class ImportLimits(BaseModel):
    """How much an import may read. ``LOOM_IMPORT_MAX_MB`` overrides ``max_file_bytes``."""

    max_file_bytes: int = Field(default=512 * MB, gt=0)  # the file itself (JSON or zip)
    max_document_bytes: int = Field(default=512 * MB, gt=0)  # tree.openloom inside a bundle
    max_media_bytes: int = Field(default=64 * MB, gt=0)  # one image or audio file
    max_media_total: int = Field(default=1024 * MB, gt=0)  # all media of one import
    max_members: int = Field(default=20_000, gt=0)  # entries in a bundle
    max_ratio: int = Field(default=200, gt=0)  # uncompressed ÷ compressed size of a member

    @classmethod
    def from_env(cls) -> ImportLimits:
        limits = cls()
        raw = os.environ.get("LOOM_IMPORT_MAX_MB", "").strip()
        if raw:
            try:
                mb = float(raw)
            except ValueError:
                raise LoomError("INVALID_SYNTAX", f"LOOM_IMPORT_MAX_MB={raw!r} is not a number",
                                "give a size in megabytes, e.g. LOOM_IMPORT_MAX_MB=1024") from None
            if mb <= 0:
                raise LoomError("INVALID_SYNTAX", "LOOM_IMPORT_MAX_MB must be positive")
            limits.max_file_bytes = limits.max_document_bytes = int(mb * MB)
        return limits


def size_text(n: int) -> str:
    """``1.6 MB``, ``512 MB``, ``900 bytes``."""
    if n >= MB:
        return f"{n / MB:,.1f} MB".replace(".0 MB", " MB")
    if n >= 1024:
        return f"{n / 1024:,.1f} KB".replace(".0 KB", " KB")
    return f"{n:,} bytes"


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path, mode: int) -> LoomError:
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return LoomError("INVALID_SYNTAX", f"{path} is {what}, not a file Loom can import",
                     "import a saved .openloom, .json or .zip file")


def read_source(path: str | Path, limits: ImportLimits) -> bytes:
    """The file's bytes, or a LoomError naming why it cannot be read."""
    p = Path(path)
    try:
        info = p.stat()
    except FileNotFoundError:
        raise LoomError("NOT_FOUND", f"file {p} does not exist") from None
    except PermissionError:
        raise LoomError("PERMISSION_DENIED", f"cannot read {p}: permission denied") from None
    except OSError as err:
        raise LoomError("NOT_FOUND", f"cannot read {p}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(p, info.st_mode)
    if info.st_size > limits.max_file_bytes:
        raise _too_big(p, info.st_size, limits.max_file_bytes)
    try:
        # O_NONBLOCK: if the path is swapped for a FIFO after the check, open does not hang.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except PermissionError:
        raise LoomError("PERMISSION_DENIED", f"cannot read {p}: permission denied") from None
    except OSError as err:
        raise LoomError("NOT_FOUND", f"cannot read {p}: {err.strerror or err}") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(p, mode)
        data = handle.read(limits.max_file_bytes + 1)
    if len(data) > limits.max_file_bytes:
        raise _too_big(p, len(data), limits.max_file_bytes)
    return data


def _too_big(path: Path | str, size: int, limit: int) -> LoomError:
    return LoomError("LIMIT_EXCEEDED",
                     f"{path} is larger than the import limit of {size_text(limit)}"
                     + (f" ({size_text(size)})" if size > limit else ""),
                     "raise the limit with LOOM_IMPORT_MAX_MB=… (or --max-mb) if you trust it")


def parse_json(raw: bytes, name: str) -> Any:
    """Parsed JSON, or INVALID_SYNTAX saying what is wrong with the text."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise LoomError("INVALID_SYNTAX",
                        f"{name} is not UTF-8 text (bad byte at offset {err.start})",
                        "export the file as JSON again") from None
    if not text.strip():
        raise LoomError("INVALID_SYNTAX", f"{name} is empty")
    try:
        return json.loads(text)
    except RecursionError:
        raise LoomError("LIMIT_EXCEEDED", f"{name} nests JSON too deeply to read",
                        "a loom file nests a few levels per node at most") from None
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise LoomError("INVALID_SYNTAX",
                            f"{name} is truncated: the JSON stops in the middle of a value "
                            f"(after {len(text):,} characters)",
                            "the file was cut short; export or copy it again") from None
        raise LoomError("INVALID_SYNTAX", f"{name} is not valid JSON: {err.msg} at line "
                        f"{err.lineno} column {err.colno}") from None
