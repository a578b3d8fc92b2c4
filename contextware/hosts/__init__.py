"""Hosts: everything that plugs Contextware into an agent.

Owns the hook handlers (``hooks``), the MCP server (``mcp_server``) and the installers: ``install``
dispatches to one module per host (``gemini_cli``) over the shared pieces (``setup``: how hooks are
run, the manifest of what was written, the skill) and one JSON settings merger (``settings_merge``).

May import every domain below it (memory, offload, codeindex, storage) and the shared helpers. Only
``cli`` imports it.
"""
