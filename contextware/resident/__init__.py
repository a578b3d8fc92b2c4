"""The resident service itself (``python -m contextware.resident``): one process per data dir that
holds the open database and the loaded model and runs, for each request, the same
``contextware.cli.run``, ``contextware.hosts.hooks.handlers.run_hook`` and (MCP tool calls)
``contextware.hosts.mcp.server.call_tool`` as an in-process call would.

It sits above ``cli`` and ``hosts`` because it runs their handlers; nothing imports it (callers
reach it through the socket, via ``contextware.service``).
"""
