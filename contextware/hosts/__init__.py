"""Hosts: everything that plugs Contextware into an agent, in three rooms.

- ``hooks``: the hook process and its handlers (memory brought into every turn, turns captured);
- ``mcp``: the MCP server (a standard-library stdio front over the SDK server and its tools);
- ``install``: wiring hooks, the MCP server and the skill into each host's files, and the exact undo.

May import (each room) every domain below ``hosts`` (memory, offload, codeindex, storage), the
service client, ``gemini`` and the shared helpers; the rooms do not import each other.  Imported by
``cli`` (``contextware hook``, ``contextware mcp``, ``install``), by ``resident`` (hook events and MCP
tool calls run in the service) and by the entry points ``scripts/hook.py`` and ``scripts/mcp_server.py``.
"""
