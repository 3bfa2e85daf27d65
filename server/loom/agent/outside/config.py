"""``[mcp.servers.NAME]`` in config.toml: the MCP servers the collaborator may use.

::

    [mcp.servers.files]                 # stdio: Loom starts the program
    command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
    env = { API_TOKEN = "…" }           # added to a minimal environment

    [mcp.servers.search]                # streamable HTTP: Loom connects to it
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "Bearer …" }
    approval = "never"                  # its calls need no yes in approval mode
    timeout_s = 30                      # per call

Env and header values are secrets: kept as ``SecretStr`` (never in a repr, a log line or
an error) and registered with :mod:`loom.redact`, so none reaches a model or the trace
either. A broken table is an error naming the table and the field, never its value.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from loom.errors import LoomError
from loom.llm.config import default_config_path
from loom.redact import register_secret

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


class McpServerConfig(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    command: list[str] | None = None
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    #: "always": in approval mode each call waits for the human's yes (as a write does)
    approval: Literal["always", "never"] = "always"
    timeout_s: float = Field(60.0, gt=0)  # per tool call
    startup_timeout_s: float = Field(30.0, gt=0)  # to start, connect and list its tools
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("a server's name is a letter, then letters, digits, _ or - "
                             "(at most 32; the model calls its tools as NAME.TOOL)")
        return value

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, value: object) -> object:
        if isinstance(value, str):  # "prog arg" is forgiven: split as a shell would
            return shlex.split(value)
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError('give either command = ["program", "arg", …] (stdio) or '
                             'url = "http://…" (streamable HTTP)')
        if self.command is not None and not self.command:
            raise ValueError("command: the program to start is missing")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url: an http:// or https:// address")
        if self.url is not None and (self.env or self.cwd):
            raise ValueError("env and cwd are for a server Loom starts (command = …)")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a server reached by url")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def where(self) -> str:
        """What it is, for messages (the program, or the URL without its query)."""
        if self.command is not None:
            return shlex.join(self.command)
        return (self.url or "").split("?", 1)[0]

    def secrets(self) -> list[str]:
        return [v.get_secret_value() for v in (*self.env.values(), *self.headers.values())]


def _first_error(exc: ValidationError) -> str:
    """The first problem, by field and message (never the value: it may be a secret)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


def parse_servers(data: Mapping[str, object], file: str = "config.toml"
                  ) -> dict[str, McpServerConfig]:
    """The ``[mcp.servers.*]`` tables of a parsed config (``INVALID_SYNTAX`` naming the
    table and field when one is wrong). Their secrets are registered for redaction."""
    mcp = data.get("mcp", {})
    if not isinstance(mcp, dict):
        raise LoomError("INVALID_SYNTAX", f"{file}: [mcp] must be a table",
                        "write [mcp.servers.NAME] tables")
    tables = mcp.get("servers", {})
    if not isinstance(tables, dict):
        raise LoomError("INVALID_SYNTAX", f"{file}: [mcp.servers] must be a table",
                        "write one [mcp.servers.NAME] table per server")
    out: dict[str, McpServerConfig] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise LoomError("INVALID_SYNTAX", f"{file}: mcp.servers.{name} must be a table",
                            f"write [mcp.servers.{name}] with command = […] or url = \"…\"")
        for value in (*(table.get("env") or {}).values(), *(table.get("headers") or {}
                                                            ).values()):
            if isinstance(value, str):
                register_secret(value)  # before validation: an error must not show it
        try:
            server = McpServerConfig(**{**table, "name": name})
        except ValidationError as exc:
            raise LoomError("INVALID_SYNTAX",
                            f"{file}: MCP server {name!r} is invalid: {_first_error(exc)}",
                            f"fix [mcp.servers.{name}] in {file}") from None
        except TypeError:
            raise LoomError("INVALID_SYNTAX", f"{file}: MCP server {name!r} is invalid",
                            f"fix [mcp.servers.{name}] in {file}") from None
        if server.enabled:
            out[name] = server
    return out


def load_servers(path: Path | str | None = None,
                 env: Mapping[str, str] | None = None) -> dict[str, McpServerConfig]:
    """The enabled MCP servers config.toml names (``LOOM_CONFIG``, else the user's config
    file); none when there is no file or no ``[mcp]`` table."""
    file = Path(path).expanduser() if path is not None else default_config_path(env)
    if not file.is_file():
        return {}
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise LoomError("INVALID_SYNTAX", f"cannot read {file}: {exc}",
                        f"fix the file at {file}") from None
    return parse_servers(data, str(file))
