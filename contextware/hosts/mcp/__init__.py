"""The MCP server: memory as tools for any MCP host.

- ``front``: the standard-library stdio front hosts start (``scripts/mcp_server.py``, ``contextware
  mcp``); answers discovery from ``declared`` and sends quick calls to the resident service;
- ``server``: the SDK server behind it (``call_tool``), whose declaration ``declared`` freezes;
- ``tools``: every tool, built from its behaviour's declaration (``contextware.operations``) by
  ``params`` (parameter types and annotations); ``calls``: how a call runs on a warm project;
- ``bounds``: every call's arguments bounded (sizes, lists, no ``true`` for a number) before a tool runs;
- ``messages``: the shapes of the JSON-RPC answers the front builds and of ``declared``.

May import memory, offload, codeindex, storage, the service client, the shared helpers, the MCP SDK
and pydantic; ``front``, ``bounds`` and ``messages`` only the standard library at module level (``server`` lazily, for a call it
runs itself).  Not ``hosts.hooks`` or ``hosts.install``.
"""
