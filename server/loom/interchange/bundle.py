"""Open Loom bundles: a ZIP whose root holds ``tree.openloom`` and the media it refers to.

Reading checks the whole archive before anything is imported: every member's path (no
``..``, no absolute or drive paths, no symbolic links, no duplicates), the number of
members, and each member's size and compression ratio against ``ImportLimits`` — and it
counts the bytes really inflated, so a member whose header lies is stopped too. A bundle
that fails any check is refused whole.
"""

from __future__ import annotations

import io
import stat
import zipfile

from loom.errors import LoomError
from loom.interchange.files import ImportLimits, size_text

DOCUMENT = "tree.openloom"
_CHUNK = 1 << 16


def is_zip(data: bytes) -> bool:
    return data[:4] in (b"PK\x03\x04", b"PK\x05\x06")


def member_path(ref: str) -> str | None:
    """The normalised member path of a bundle ``ref``, or None when it may not be one
    (absolute, a drive, ``..``, a URL, empty)."""
    if not ref or "\x00" in ref or ":" in ref.split("/", 1)[0]:
        return None
    text = ref.replace("\\", "/")
    if text.startswith("/"):
        return None
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


def _refuse(name: str, why: str) -> LoomError:
    return LoomError("INVALID_SYNTAX", f"{name}: {why}; the bundle was refused, nothing was "
                     "imported", "a bundle is a ZIP with tree.openloom and its media at the root")


class Bundle:
    """A checked archive: the document's bytes, and the media members on demand."""

    def __init__(self, data: bytes, name: str, limits: ImportLimits) -> None:
        self.name, self.limits = name, limits
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as err:
            raise LoomError("INVALID_SYNTAX", f"{name} is not a readable ZIP bundle: {err}",
                            "export the bundle again") from None
        if len(infos) > limits.max_members:
            raise LoomError("LIMIT_EXCEEDED", f"{name} holds {len(infos):,} files, more than "
                            f"the {limits.max_members:,} a bundle may hold",
                            "a bundle holds one document and its media")
        self.members: dict[str, zipfile.ZipInfo] = {}
        declared = 0
        for info in infos:
            path = member_path(info.filename)
            if path is None:
                raise _refuse(name, f'member "{info.filename}" has an unsafe path')
            if stat.S_ISLNK(info.external_attr >> 16):
                raise _refuse(name, f'member "{info.filename}" is a symbolic link')
            if info.flag_bits & 0x1:
                raise _refuse(name, f'member "{info.filename}" is encrypted')
            if info.is_dir():
                continue
            if path in self.members:
                raise _refuse(name, f'"{path}" appears twice')
            cap = limits.max_document_bytes if path == DOCUMENT else limits.max_media_bytes
            if info.file_size > cap:
                raise LoomError("LIMIT_EXCEEDED", f'{name}: "{path}" would inflate to '
                                f"{size_text(info.file_size)}, over the limit of "
                                f"{size_text(cap)}", "nothing was imported")
            if info.file_size > 1024 * 1024 and \
                    info.file_size > limits.max_ratio * max(info.compress_size, 1):
                ratio = info.file_size // max(info.compress_size, 1)
                raise _refuse(name, f'"{path}" inflates {ratio:,}-fold (a zip bomb)')
            declared += info.file_size
            self.members[path] = info
        if declared > limits.max_media_total + limits.max_document_bytes:
            raise LoomError("LIMIT_EXCEEDED", f"{name} would inflate to {size_text(declared)}, "
                            "over the import limit", "nothing was imported")
        if DOCUMENT not in self.members:
            raise LoomError("INVALID_SYNTAX", f"{name} has no {DOCUMENT} at its root",
                            "a bundle is a ZIP with tree.openloom and its media at the root")
        self.read_total = 0

    def document(self) -> bytes:
        return self.read(DOCUMENT, self.limits.max_document_bytes)

    def has(self, path: str) -> bool:
        return path in self.members

    def read(self, path: str, cap: int | None = None) -> bytes:
        """A member's bytes, inflating at most ``cap`` (and the import's total) bytes."""
        cap = self.limits.max_media_bytes if cap is None else cap
        info = self.members[path]
        out = bytearray()
        try:
            with self.zip.open(info) as handle:
                while chunk := handle.read(_CHUNK):
                    out += chunk
                    if len(out) > cap or len(out) > info.file_size:
                        raise _refuse(self.name, f'"{path}" inflates past its declared size '
                                      "(a zip bomb)")
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
            raise LoomError("INVALID_SYNTAX", f'{self.name}: "{path}" cannot be read: {err}',
                            "export the bundle again") from None
        if path != DOCUMENT:
            self.read_total += len(out)
            if self.read_total > self.limits.max_media_total:
                raise LoomError("LIMIT_EXCEEDED", f"{self.name}: the media add up to more than "
                                f"{size_text(self.limits.max_media_total)}",
                                "nothing was imported")
        return bytes(out)


def write_bundle(document: str, members: dict[str, bytes]) -> bytes:
    """The ZIP bytes: ``tree.openloom`` first, then each media member."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo(DOCUMENT, (2000, 1, 1, 0, 0, 0)), document.encode("utf-8"),
                   compress_type=zipfile.ZIP_DEFLATED)
        for path in sorted(members):
            info = zipfile.ZipInfo(path, (2000, 1, 1, 0, 0, 0))
            z.writestr(info, members[path], compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()
