"""Images in chat messages, as each provider's wire format wants them (seed 003 §4).

A :class:`~loom.llm.base.ImagePart` names a file; it is read and base64-encoded here, when
the request is built, so no image lives in memory or the store as base64. A message
without images keeps its plain ``{"role", "content": str}`` shape (what every request
sent before images existed). A file gone by send time becomes a line of text saying so.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom.llm.base import ChatMessage, ImagePart

#: What the hosted providers accept inline.
MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _encoded(part: ImagePart) -> str | None:
    try:
        return base64.b64encode(Path(part.source).read_bytes()).decode("ascii")
    except OSError:
        return None


def _missing(part: ImagePart) -> dict[str, str]:
    return {"type": "text", "text": f"[an image ({part.media_type}) that is no longer "
                                    "available]"}


def openai_message(message: ChatMessage) -> dict[str, Any]:
    """One message for the Chat Completions API: images as ``image_url`` data URLs."""
    return _with_images(message, lambda image, data: {
        "type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{data}"}})


def anthropic_message(message: ChatMessage) -> dict[str, Any]:
    """One message for the Messages API: images as base64 ``image`` blocks."""
    return _with_images(message, lambda image, data: {
        "type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                    "data": data}})


def _with_images(message: ChatMessage,
                 block: Callable[[ImagePart, str], dict[str, Any]]) -> dict[str, Any]:
    """A user message with images: its text, then each image as ``block`` makes it (a
    text line for one whose file is gone); any other message as plain text."""
    if not message.images or message.role != "user":
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    for image in message.images:
        data = _encoded(image)
        parts.append(_missing(image) if data is None else block(image, data))
    return {"role": message.role, "content": parts}
