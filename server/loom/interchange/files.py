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

import loom.interchange.jsontext as jsontext
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
    refuse_beyond_memory(info.st_size, p.name)  # before reading it: nothing is spent
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


# Tapestry Loom's weave (``.tapestry``): a header, a version number, then rkyv binary data
# (read by interchange/tapestry.py).
TAPESTRY_MAGIC = b"VersionedTapestryWeave"


#: What an import costs in memory beyond the process itself, per byte of the file
#: (bench/bench_import_memory.py: a 64 MB single node peaked at 537 MB, 65 MB of 2 KB
#: nodes at 424 MB, with the process's own ~150 MB; the issue saw 15-19x before a huge
#: node's summary and word count stopped splitting it into a list of every word).
PARSE_MEMORY_FACTOR = 10
PROCESS_MEMORY = 200 * MB


def available_memory() -> int | None:
    """What this machine can still give (``MemAvailable``, capped by a cgroup's limit),
    or None where it cannot be read."""
    free: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError):
        return None
    try:  # a container's own limit (cgroup v2), less what it already uses
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit.isdigit():
            room = int(limit) - used
            free = room if free is None else min(free, room)
    except (OSError, ValueError):
        pass
    return free


def refuse_beyond_memory(size: int, name: str, available: int | None = None) -> None:
    """A LoomError when parsing a file of ``size`` bytes would need more memory than this
    machine has free (a 500 MB file under the 512 MB cap takes 7.35 GB: the machine,
    not Loom, would say no). Nothing is read or written then."""
    free = available_memory() if available is None else available
    need = PARSE_MEMORY_FACTOR * size + PROCESS_MEMORY
    if free is not None and need > free:
        most = max(0, (free - PROCESS_MEMORY) // PARSE_MEMORY_FACTOR)
        raise LoomError(
            "LIMIT_EXCEEDED",
            f"importing {name} ({size_text(size)}) needs about {size_text(need)} of memory "
            f"and this machine has {size_text(free)} free: files up to about "
            f"{size_text(most)} import here",
            "free memory, or import it on a machine with more; nothing was written")


def parse_json(raw: bytes, name: str) -> Any:
    """Parsed JSON (nested to any depth), or a LoomError saying what is wrong with the
    text: INVALID_SYNTAX for text that is not JSON or holds what is not a character,
    LIMIT_EXCEEDED for a number too long to keep or a file too large for memory."""
    try:
        value = jsontext.fast_loads(raw)
    except MemoryError:
        raise _no_memory(name, raw) from None
    if value is not jsontext.CAREFUL:
        return value
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if raw[err.start:err.start + 1] == b"\xed" and \
                b"\xa0" <= raw[err.start + 1:err.start + 2] <= b"\xbf":
            # A UTF-16 surrogate written as UTF-8 (or text handed over with one in it).
            raise LoomError("INVALID_SYNTAX",
                            f"{name} holds half of a UTF-16 surrogate pair without its other "
                            f"half (not a character) at offset {err.start}",
                            "the program that wrote the file split a character (an emoji?) in "
                            "two: remove or retype it") from None
        raise LoomError("INVALID_SYNTAX",
                        f"{name} is not UTF-8 text (bad byte at offset {err.start})",
                        "export the file as JSON again") from None
    if not text.strip():
        raise LoomError("INVALID_SYNTAX", f"{name} is empty")
    try:
        return jsontext.loads(text)
    except MemoryError:
        raise _no_memory(name, raw) from None
    except jsontext.JsonProblem as err:
        raise json_problem(err, text, name) from None
    except json.JSONDecodeError as err:
        if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string"):
            raise LoomError("INVALID_SYNTAX",
                            f"{name} is truncated: the JSON stops in the middle of a value "
                            f"(after {len(text):,} characters)",
                            "the file was cut short; export or copy it again") from None
        raise LoomError("INVALID_SYNTAX", f"{name} is not valid JSON: {err.msg} at line "
                        f"{err.lineno} column {err.colno}") from None


def _no_memory(name: str, raw: bytes) -> LoomError:
    return LoomError("LIMIT_EXCEEDED", f"there is not enough memory to read {name} "
                     f"({size_text(len(raw))})",
                     "close other programs, or import the file on a larger machine")


def json_problem(err: jsontext.JsonProblem, text: str, name: str) -> LoomError:
    """The LoomError for JSON holding what Loom cannot keep, saying where it is."""
    where = ""
    if err.pos >= 0:
        line = text.count("\n", 0, err.pos) + 1
        column = err.pos - (text.rfind("\n", 0, err.pos) + 1) + 1
        where = f" at line {line} column {column}"
    if err.kind == "number":
        return LoomError("LIMIT_EXCEEDED", f"{name} holds {err.message}{where}",
                         "a loom file holds no such number: check what wrote the file")
    if err.kind == "constant":
        return LoomError("INVALID_SYNTAX", f"{name} holds {err.message}{where}",
                         "write the value as a string or null")
    return LoomError("INVALID_SYNTAX", f"{name}: {err.message}{where}",
                     "the program that wrote the file split a character (an emoji?) in two: "
                     "remove or retype it")
