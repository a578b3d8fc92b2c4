"""Hosts: everything that plugs Contextware into an agent.

Owns the hook handlers (``hooks``, with Claude Code's transcript reader ``claude_transcript`` and
the host-aware note ``instructions``), the MCP server (``mcp_front``, the standard-library stdio
front hosts start, over ``mcp_server``, the SDK server running the tools) and the installers:
``install`` dispatches to one module per host (``gemini_cli``, ``claude_code``, ``mcp_hosts``) over
the shared pieces (``setup``: how hooks are run, the manifest, the skill; ``installed_files``: each
file an install writes and its exact undo) and one JSON settings merger (``settings_merge``).

May import every domain below it (memory, offload, codeindex, storage) and the shared helpers. Only
``cli`` imports it.
"""
