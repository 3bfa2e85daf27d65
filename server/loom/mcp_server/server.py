"""The MCP server: the SDK's low-level ``Server`` over ``McpWorkspace``, and the watcher
that tells connected clients what changed.

Two tools (``loom``: arrow commands; ``loom_trees``: the trees), the resources and their
templates, one prompt (``loom_context``: seed 001's context for an outside agent), and
change notifications in both of the protocol's eras: ``subscriptions/listen`` streams
(2026-07-28) through the SDK's subscription bus, and ``resources/subscribe`` with
``notifications/resources/updated`` for clients of the 2025 protocol. The watcher reads
the workspace's change log, so a human's commit in an editor, the collaborator's writes
and another process's all reach the client.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp.types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError

from loom import __version__
from loom.app import App
from loom.errors import LoomError
from loom.mcp_server.workspace import (
    TOOL_NAME,
    TREE_PARTS,
    TREES_TOOL,
    McpWorkspace,
    rendered,
)

log = logging.getLogger(__name__)

POLL_S = 0.3  # how often the watcher reads the change log
CONTEXT_PROMPT = "loom_context"
INSTRUCTIONS = (
    "Loom: branching trees of human and model writing, shared with the people working in "
    f"them. Act through the {TOOL_NAME} tool (arrow commands, one per line: → tree, "
    "→ view a7x2, → annotate a7x2 \"…\", → continue n:3); read the trees as resources "
    f"(loom://tree/ID/overview, …/path, …/context); the {CONTEXT_PROMPT} prompt gives your "
    "place, permissions and memory.")


class _Server(Server[Any]):
    """The SDK's server, declaring the change notifications Loom sends whoever starts a
    session: the streamable-HTTP manager asks for the initialization options itself,
    without ours, so the default has to be right (else HTTP said ``listChanged: false``)."""

    def create_initialization_options(self, notification_options: NotificationOptions
                                      | None = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True),
            *args, **kwargs)


class LoomMcpServer:
    """One ``loom mcp`` process: the workspace view, the SDK server, and the watcher."""

    def __init__(self, app: App, poll_s: float = POLL_S) -> None:
        self.view = McpWorkspace(app)
        self.poll_s = poll_s
        self.bus = InMemorySubscriptionBus()
        # 2025-era subscribers: per connection, a session to notify through and its URIs
        self.legacy: dict[int, tuple[ServerSession, set[str]]] = {}
        self.server: Server[Any] = _Server(
            "loom", version=__version__, title="Loom", instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe, on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=ListenHandler(self.bus),
            on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt)

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options()

    # ── tools ──

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        description = await anyio.to_thread.run_sync(self.view.tool_description)
        return types.ListToolsResult(tools=[
            types.Tool(
                name=TOOL_NAME, title="Loom commands", description=description,
                input_schema={
                    "type": "object",
                    "properties": {
                        "commands": {"type": "string", "description":
                                     "one or more arrow commands, one per line "
                                     "(→ view a7x2)"},
                        "tree": {"type": "string", "description":
                                 "the tree's title or id (default: the tree you were "
                                 f"last in; {TREES_TOOL} lists them)"},
                    },
                    "required": ["commands"],
                },
                annotations=types.ToolAnnotations(read_only_hint=False,
                                                  destructive_hint=False,
                                                  open_world_hint=False)),
            types.Tool(
                name=TREES_TOOL, title="Loom trees",
                description="The trees you may read: id, title, mode, size, and the one "
                            "you were last in.",
                input_schema={"type": "object", "properties": {}},
                annotations=types.ToolAnnotations(read_only_hint=True,
                                                  open_world_hint=False)),
        ])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == TREES_TOOL:
            text, ok = await anyio.to_thread.run_sync(self.view.trees_text), True
        elif params.name == TOOL_NAME:
            commands, tree = args.get("commands"), args.get("tree")
            if not isinstance(commands, str) or (tree is not None
                                                 and not isinstance(tree, str)):
                text, ok = ("✗ INVALID_SYNTAX: commands must be text (and tree a title "
                            "or id)\n  hint: {\"commands\": \"→ tree\"}"), False
            else:
                answer = await anyio.to_thread.run_sync(self.view.run, commands, tree)
                text, ok = answer.text, answer.ok
        else:
            text, ok = (f"✗ NOT_FOUND: no tool {params.name!r}\n"
                        f"  hint: the tools are {TOOL_NAME} and {TREES_TOOL}"), False
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    is_error=not ok)

    # ── resources ──

    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        found = await anyio.to_thread.run_sync(self.view.resources)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, description=r.description,
                           mime_type="text/plain") for r in found])

    async def _list_templates(self, ctx: ServerRequestContext[Any],
                              params: types.PaginatedRequestParams | None
                              ) -> types.ListResourceTemplatesResult:
        templates = [types.ResourceTemplate(uri_template=f"loom://tree/{{tree}}/{part}",
                                            name=f"a tree's {name}", description=what,
                                            mime_type="text/plain")
                     for part, name, what in TREE_PARTS]
        templates.append(types.ResourceTemplate(
            uri_template="loom://document/{id}", name="a document",
            description="a document of the workspace", mime_type="text/plain"))
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(self.view.read, uri)
        except LoomError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=rendered(err),
                           data={"uri": uri}) from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, text=text, mime_type="text/plain")])

    async def _subscribe(self, ctx: ServerRequestContext[Any],
                         params: types.SubscribeRequestParams) -> types.EmptyResult:
        _session, uris = self.legacy.setdefault(_connection_of(ctx), (ctx.session, set()))
        uris.add(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any],
                           params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.legacy.get(_connection_of(ctx), (ctx.session, set()))[1].discard(str(params.uri))
        return types.EmptyResult()

    # ── the prompt ──

    async def _list_prompts(self, ctx: ServerRequestContext[Any],
                            params: types.PaginatedRequestParams | None
                            ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(
            name=CONTEXT_PROMPT, title="Loom context",
            description="Where you are in a tree, your permissions, who else is active, "
                        "and your operational memory (what the collaborator is told "
                        "each turn)",
            arguments=[types.PromptArgument(name="tree", required=False,
                                            description="the tree's title or id")])])

    async def _get_prompt(self, ctx: ServerRequestContext[Any],
                          params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != CONTEXT_PROMPT:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"✗ NOT_FOUND: no prompt {params.name!r}")
        ref = (params.arguments or {}).get("tree")

        def context() -> str:
            return self.view.context(self.view.tree(ref))

        try:
            text = await anyio.to_thread.run_sync(context)
        except LoomError as err:
            raise MCPError(code=types.INVALID_PARAMS, message=rendered(err)) from None
        return types.GetPromptResult(
            description="your place in the loom", messages=[types.PromptMessage(
                role="user", content=types.TextContent(type="text", text=text))])

    # ── what changed ──

    async def watch(self) -> None:
        """Until cancelled: the change log read every ``poll_s``; the resources it touches
        announced to the clients that asked."""
        cursor = self.view.app.ws.follow()
        while True:
            await anyio.sleep(self.poll_s)
            try:
                changes = await anyio.to_thread.run_sync(cursor.poll)
            except Exception:  # a database blip: the next poll catches up
                log.warning("loom mcp: reading the change log failed", exc_info=True)
                continue
            if changes:
                await self.announce(*self.view.touched(changes))

    async def announce(self, uris: set[str], listing: bool) -> None:
        for uri in sorted(uris):
            await self.bus.publish(ResourceUpdated(uri=uri))
        if listing:
            await self.bus.publish(ResourcesListChanged())
        for key, (session, wanted) in list(self.legacy.items()):
            try:
                for uri in sorted(uris & wanted):
                    await session.send_resource_updated(uri)
                if listing:
                    await session.send_resource_list_changed()
            except Exception:  # that client has gone: it drops out
                log.info("loom mcp: a subscriber has gone", exc_info=True)
                self.legacy.pop(key, None)


def _connection_of(ctx: ServerRequestContext[Any]) -> int:
    """Which connection a request came on: the SDK makes a session per request, each
    holding its connection (a request's session notifies through the connection's own
    channel once the request has been answered)."""
    return id(getattr(ctx.session, "_connection", ctx.session))
