"""Images and audio in content blocks: checked against their declared type, stored once.

A block's ``ref`` is a ``data:`` URI or a path inside a bundle (Open Loom § 4.3); the
bytes must be what ``mimeType`` says (§ 9), recognised by their signature. A type Loom has
no signature for is accepted unless the bytes are recognisably something else or look
like markup (nothing imported is ever rendered as HTML or run).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from urllib.parse import unquote_to_bytes

from loom.errors import LoomError

# (mime, test) — the first bytes of each format Loom recognises.
_SIGNATURES: tuple[tuple[str, object], ...] = (
    ("image/png", lambda b: b.startswith(b"\x89PNG\r\n\x1a\n")),
    ("image/jpeg", lambda b: b.startswith(b"\xff\xd8\xff")),
    ("image/gif", lambda b: b[:6] in (b"GIF87a", b"GIF89a")),
    ("image/webp", lambda b: b[:4] == b"RIFF" and b[8:12] == b"WEBP"),
    ("image/bmp", lambda b: b.startswith(b"BM")),
    ("image/avif", lambda b: b[4:12] in (b"ftypavif", b"ftypavis")),
    ("image/heic", lambda b: b[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1")),
    ("audio/wav", lambda b: b[:4] == b"RIFF" and b[8:12] == b"WAVE"),
    ("audio/ogg", lambda b: b.startswith(b"OggS")),
    ("audio/flac", lambda b: b.startswith(b"fLaC")),
    ("audio/mpeg", lambda b: b.startswith(b"ID3") or b[:2] in (b"\xff\xfb", b"\xff\xf3",
                                                             b"\xff\xf2")),
    ("audio/mp4", lambda b: b[4:8] == b"ftyp" and b[8:12] in (b"M4A ", b"M4B ", b"mp42",
                                                            b"isom")),
    ("audio/webm", lambda b: b.startswith(b"\x1a\x45\xdf\xa3")),
)
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "audio/x-wav": "audio/wav",
            "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav", "audio/mp3": "audio/mpeg",
            "audio/x-flac": "audio/flac", "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4",
            "video/webm": "audio/webm", "image/x-ms-bmp": "image/bmp",
            "audio/x-mpeg": "audio/mpeg", "audio/vorbis": "audio/ogg",
            "audio/opus": "audio/ogg", "image/heif": "image/heic"}
_MARKUP = re.compile(rb"^\s*(<\?xml|<!doctype|<html|<script|<svg|<body|<iframe)", re.I)
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif",
               "image/webp": "webp", "image/bmp": "bmp", "image/svg+xml": "svg",
               "image/avif": "avif", "image/heic": "heic", "audio/wav": "wav",
               "audio/ogg": "ogg", "audio/flac": "flac", "audio/mpeg": "mp3",
               "audio/mp4": "m4a", "audio/webm": "webm"}


def normal_mime(mime: str) -> str:
    base = mime.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def sniff(data: bytes) -> str | None:
    """The type the bytes' signature says, if Loom knows it."""
    for mime, test in _SIGNATURES:
        if test(data):  # type: ignore[operator]
            return mime
    return None


def check(data: bytes, declared: str, kind: str, where: str) -> str:
    """The normalised type, or INVALID_SYNTAX when the bytes are not what ``declared`` says
    (or not a ``kind`` — image or audio — at all)."""
    mime = normal_mime(declared)
    if not mime.startswith(f"{kind}/"):
        raise LoomError("INVALID_SYNTAX",
                        f'{where}.mimeType: "{declared}" is not an {kind} type',
                        f"an {kind} block declares an {kind}/… type")
    found = sniff(data)
    if mime == "image/svg+xml":
        # SVG is text; it is kept, never rendered, so only its markup is checked for.
        if not re.match(rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<svg", data[:4096], re.S):
            raise _mismatch(where, declared, "it is not SVG markup")
        return mime
    if found is not None and found != mime:
        raise _mismatch(where, declared, f"the bytes are {found}")
    if found is None:
        if mime in dict(_SIGNATURES):
            raise _mismatch(where, declared, f"the bytes are not {mime}")
        if _MARKUP.match(data[:512]):
            raise _mismatch(where, declared, "the bytes are markup (HTML or XML)")
    return mime


def _mismatch(where: str, declared: str, found: str) -> LoomError:
    return LoomError("INVALID_SYNTAX", f'{where}: declared "{declared}" but {found}',
                     "a media file must be what its mimeType says; nothing was imported")


def parse_data_uri(ref: str, where: str) -> tuple[str, bytes, str]:
    """(media type, bytes, the text before the comma) of a ``data:`` URI."""
    head, sep, payload = ref.partition(",")
    if not sep:
        raise LoomError("INVALID_SYNTAX", f"{where}.ref: the data: URI has no comma")
    params = head[5:].split(";")
    mime = params[0] or "text/plain"
    if params[-1].lower() == "base64":
        try:
            data = base64.b64decode(payload, validate=False)
        except (binascii.Error, ValueError):
            raise LoomError("INVALID_SYNTAX",
                            f"{where}.ref: the data: URI's base64 does not decode") from None
    else:
        data = unquote_to_bytes(payload)
    return mime, data, head


def data_uri(head: str, data: bytes) -> str:
    """A ``data:`` URI again: ``head`` as the file had it, the bytes in base64."""
    return f"{head},{base64.b64encode(data).decode('ascii')}"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extension(mime: str) -> str:
    return _EXTENSIONS.get(normal_mime(mime), "bin")
