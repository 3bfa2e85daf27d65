"""``loom mcp``: a Loom workspace for any MCP client (Claude Code, Claude Desktop, editors'
agent panels), as one named participant.

- ``workspace.py``: what the client sees and does, in Loom's terms: the ``loom`` tool
  (arrow commands through the executor, answered with the seeds' result text), the
  resources (each tree's overview, the participant's path as prose, its context,
  documents) and the context prompt. No MCP here: it is tested without a transport.
- ``server.py``: the MCP SDK's low-level server over that, and the watcher that turns the
  change log into resource notifications.
- ``serve.py``: stdio, or streamable HTTP on loopback behind a bearer token.
"""
