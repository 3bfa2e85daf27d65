"""What every command returns: a rendered ``✓``/``✗`` text plus machine-readable data."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from loom.errors import LoomError
from loom.render.formats import error


class Result(BaseModel):
    ok: bool
    text: str
    command: str = ""
    code: str | None = None
    message: str | None = None
    hint: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def success(cls, text: str, command: str = "", **data: Any) -> Result:
        return cls(ok=True, text=text, command=command, data=data)

    @classmethod
    def failure(cls, code: str, message: str, hint: str | None = None,
                command: str = "") -> Result:
        return cls(ok=False, text=error(code, message, hint), command=command, code=code,
                   message=message, hint=hint)

    @classmethod
    def from_error(cls, err: LoomError, command: str = "") -> Result:
        return cls.failure(err.code, err.message, err.hint, command)
