"""The collaborator's MCP tools, beside its arrow commands: what the model is told of them,
and one call from the line it wrote to the ``✓``/``✗`` result it reads.

:class:`Outside` is what the turn loop sees: ``claims(line)`` (a ``→ NAME.TOOL …`` line,
or ``→ help NAME[.TOOL]``), ``prepare(line)`` (read, find the tool, check the arguments
against its schema: a :class:`Prepared` call, or the ``✗ INVALID_SYNTAX`` to feed back
without calling anything), ``run(prepared)`` (the call, with the server's timeout) and
``context()`` (the section of the system prompt listing the tools). Approval, the trace,
the turn record, the threshold and fading are the loop's, as for every command.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from loom.agent.outside.calls import (
    ArgumentError,
    ToolCall,
    canonical,
    parse_arguments,
    tool_word,
)
from loom.agent.outside.config import McpServerConfig, load_servers
from loom.agent.outside.hub import Failure, Hub
from loom.agent.outside.schema import ToolSpec, check, coerce, help_text, summary_line
from loom.commands.lexicon import split_line
from loom.commands.results import Result
from loom.errors import LoomError
from loom.llm.base import ImagePart
from loom.redact import redact, redact_obj
from loom.render.text import plural, preview, thousands

log = logging.getLogger(__name__)

HEAD = "=== Outside tools (MCP servers) ==="
HOW = ("Call one on its own line, like a command: → SERVER.TOOL key:value key2:\"quoted "
       "text\" (numbers, true/false, quoted text, [arrays], {objects}), or → SERVER.TOOL "
       "{\"key\": …} with one JSON object. Their results come back like a command's. "
       "→ help SERVER.TOOL shows a tool's arguments in full.")
CONTEXT_TOOLS = 40  # tools listed with their signature; more are named only
ERROR_TEXT_CHARS = 2_000  # of a tool's own error text fed back


@dataclass
class Prepared:
    """A call ready to run, or what to say instead (``result``)."""

    line: str  # as the model wrote it (redacted)
    command: str  # canonical (redacted): what the trace, the record and approval show
    call: ToolCall | None = None
    spec: ToolSpec | None = None
    result: Result | None = None
    arguments: dict[str, object] = field(default_factory=dict)  # redacted


class Outside:
    """The MCP servers of config.toml, for one collaborator (or a process's)."""

    def __init__(self, servers: Mapping[str, McpServerConfig] | None = None, *,
                 problem: LoomError | None = None, start: bool = True) -> None:
        self.configs = dict(servers or {})
        self.problem = problem  # config.toml's [mcp] could not be read
        self.hub = Hub(self.configs)
        if start and self.configs:
            self.hub.start()

    @classmethod
    def from_config(cls) -> Outside | None:
        """The servers config.toml names, connecting in the background; None when it
        names none. A broken ``[mcp]`` table is said in the context (and logged)."""
        try:
            servers = load_servers()
        except LoomError as err:
            log.warning("MCP servers not used: %s", err.message)
            return cls(problem=err)
        return cls(servers) if servers else None

    def __bool__(self) -> bool:
        return bool(self.configs) or self.problem is not None

    async def ready(self) -> None:
        if self.configs:
            await self.hub.ready()

    def close(self) -> None:
        self.hub.close()

    # -- what the model is told --
    def needs_approval(self, prepared: Prepared) -> bool:
        cfg = self.configs.get(prepared.call.server) if prepared.call else None
        return cfg is None or cfg.approval != "never"

    def context(self, approval: bool = False) -> str:
        """The system prompt's section: how to call, then each server's tools (a server
        that failed is named with why)."""
        if not self:
            return ""
        lines = [HEAD, HOW]
        if self.problem is not None:
            lines.append(f"(none can be used: ✗ {self.problem.code}: {self.problem.message})")
        shown = 0
        for name, cfg in self.configs.items():
            failed = self.hub.failure(name)
            if failed is not None:
                lines.append(f"{name}: not available (✗ {failed.code}: "
                             f"{preview(failed.message, 240)})")
                continue
            tools = self.hub.servers[name].tools
            asks = " (each call waits for the human's approval)" if approval and \
                cfg.approval != "never" else ""
            lines.append(f"{name}: {plural(len(tools), 'tool')}{asks}")
            for spec in tools:
                if shown < CONTEXT_TOOLS:
                    lines.append(f"  {summary_line(spec)}")
                    shown += 1
            if len(tools) > 0 and shown >= CONTEXT_TOOLS:
                rest = [t.name for t in tools][max(0, CONTEXT_TOOLS - shown):]
                if rest:
                    lines.append(f"  also: {', '.join(rest)} (→ help {name}.TOOL)")
        lines.append("===")
        return "\n".join(lines)

    # -- one line --
    def claims(self, line: str) -> bool:
        """Whether ``line`` (the first line of a command) is for an MCP tool: ``→ X.Y …``
        or ``→ help`` of a server or a tool, when servers are configured."""
        if not self:
            return False
        if tool_word(line) is not None:
            return True
        words = split_line(line.strip()).body.split()
        if len(words) == 2 and words[0].lower() == "help":
            target = words[1].strip("[]")
            return target in self.configs or target.split(".", 1)[0] in self.configs
        return False

    def _names(self) -> list[str]:
        return [t.full_name for t in self.hub.tools()]

    def _guess(self, name: str) -> str | None:
        names = self._names()
        if not names:
            return None
        best = process.extractOne(name, names, scorer=fuzz.ratio, score_cutoff=60)
        return best[0] if best else None

    def prepare(self, raw: str) -> Prepared:
        """Read the call the model wrote and check it (see the module doc)."""
        shown = redact(raw.strip())
        first = raw.strip().split("\n", 1)[0]
        word = tool_word(first)
        if word is None:  # → help NAME[.TOOL]
            target = split_line(first).body.split()[1].strip("[]")
            return Prepared(shown, redact(f"→ help {target}"), result=self._help(target))
        server, tool, _ = word
        name = f"{server}.{tool}"
        if self.problem is not None:
            return Prepared(shown, shown, result=Result.failure(
                self.problem.code, f"no MCP server can be used: {self.problem.message}",
                self.problem.hint, shown))
        if server not in self.configs:
            guess = self._guess(name)
            return Prepared(shown, shown, result=Result.failure(
                "INVALID_SYNTAX", f'no MCP server "{server}"'
                + (f" (did you mean {guess}?)" if guess else ""),
                f"the MCP servers: {', '.join(self.configs)}" if self.configs else
                "config.toml names no MCP server", shown))
        failed = self.hub.failure(server)
        if failed is not None:
            return Prepared(shown, shown, result=Result.failure(
                failed.code, failed.message, failed.hint, shown))
        spec = next((t for t in self.hub.servers[server].tools if t.name == tool), None)
        if spec is None:
            guess = self._guess(name)
            return Prepared(shown, shown, result=Result.failure(
                "INVALID_SYNTAX", f'{server} has no tool "{tool}"'
                + (f" (did you mean {guess}?)" if guess else ""),
                f"→ help {server} lists its tools", shown))
        # the arguments: everything after NAME.TOOL, over lines when a quote spans them
        body = split_line(raw.strip()).body
        rest = body[body.index(name) + len(name):]
        try:
            args, bare = parse_arguments(rest)
        except ArgumentError as err:
            return Prepared(shown, shown, result=Result.failure(
                "INVALID_SYNTAX", f"{name}: {err}", self._takes(spec), shown))
        if not isinstance(args, dict):
            return Prepared(shown, shown, result=Result.failure(
                "INVALID_SYNTAX", f"{name}: the arguments must be a JSON object",
                self._takes(spec), shown))
        args = coerce(spec, args, bare)
        call = ToolCall(server, tool, args)
        command = redact(canonical(call))
        redacted = redact_obj(args)
        problem = check(spec, args)
        if problem is not None:
            return Prepared(shown, command, call, spec, Result.failure(
                "INVALID_SYNTAX", problem, self._takes(spec), command), redacted)
        return Prepared(shown, command, call, spec, None, redacted)

    @staticmethod
    def _takes(spec: ToolSpec) -> str:
        line = summary_line(spec).split(" — ", 1)[0]
        if not spec.properties:
            return f"{spec.full_name} takes no arguments: {line}"
        return f"{line} (? marks an optional argument; → help {spec.full_name})"

    def _help(self, target: str) -> Result:
        command = f"→ help {target}"
        server, _, tool = target.partition(".")
        if server not in self.configs:
            return Result.failure("INVALID_SYNTAX", f'no MCP server "{server}"',
                                  f"the MCP servers: {', '.join(self.configs)}", command)
        failed = self.hub.failure(server)
        if failed is not None:
            return Result.failure(failed.code, failed.message, failed.hint, command)
        tools = self.hub.servers[server].tools
        if not tool:
            lines = [f"✓ {server}: {plural(len(tools), 'tool')}"]
            lines += [f"  {summary_line(t)}" for t in tools]
            return Result.success("\n".join(lines), command)
        spec = next((t for t in tools if t.name == tool), None)
        if spec is None:
            guess = self._guess(target)
            return Result.failure("INVALID_SYNTAX", f'{server} has no tool "{tool}"'
                                  + (f" (did you mean {guess}?)" if guess else ""),
                                  f"→ help {server} lists its tools", command)
        return Result.success("✓ " + help_text(spec), command)

    async def run(self, prepared: Prepared, sees_images: bool) -> tuple[Result, list[ImagePart]]:
        """Call the tool: its result (``✓ NAME.TOOL`` and its text, a line per image), and
        the images to send when the model sees them."""
        call = prepared.call
        assert call is not None and prepared.result is None
        reply = await self.hub.call(call.server, call.tool, call.arguments)
        if isinstance(reply, Failure):
            return Result.failure(reply.code, reply.message, reply.hint, prepared.command), []
        text = reply.text.rstrip()
        if reply.is_error:
            first = preview(" ".join(text.split()), 300) or "(no text)"
            result = Result.failure(
                "MODEL_ERROR", f"{call.name} failed: {first}",
                f"the tool said so; check its arguments (→ help {call.name})",
                prepared.command)
            if len(text) > 300:
                result.text += "\n" + text[:ERROR_TEXT_CHARS]
            return result, []
        lines = [f"✓ {call.name}" + ("" if text or reply.images or reply.notes else
                                     " (no output)")]
        if text:
            lines.append(text)
        for i, image in enumerate(reply.images, 1):
            about = f"{image.media_type}, {thousands(image.size)} bytes"
            lines.append(f"[image {i}: {about}, attached below]" if sees_images else
                         f"[image {i}: {about}: returned, but this model is not sent "
                         "images]")
        lines += reply.notes
        result = Result.success("\n".join(lines), prepared.command, tool=call.name,
                                images=len(reply.images))
        return result, (reply.images if sees_images else [])


_shared: list[Outside | None] = []
_shared_lock = threading.Lock()


def shared_outside() -> Outside | None:
    """The MCP servers of config.toml, connected once per process (the language server's
    collaborators, one per tree, share them) and closed when it exits; None when the file
    names none."""
    with _shared_lock:
        if not _shared:
            outside = Outside.from_config()
            if outside is not None:
                atexit.register(outside.close)
            _shared.append(outside)
        return _shared[0]
