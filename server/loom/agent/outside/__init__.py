"""The collaborator's MCP client: the tools of the MCP servers config.toml
names, called by the model with ``→ SERVER.TOOL key:value …`` lines beside its arrow
commands, under the same approval, trace, threshold and fading (docs/agent.md).

``config`` reads ``[mcp.servers.NAME]``; ``calls`` reads the line; ``schema`` shows and
checks a tool's arguments; ``hub`` keeps the connections (the official SDK, on a loop of
its own); ``tools`` is what the turn loop uses (:class:`~loom.agent.outside.tools.Outside`).
"""
