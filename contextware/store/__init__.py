"""The session store: JSON values under a namespace and a key (``contextware store``, the MCP
``session_store`` tool), bounded in bytes and keys by eviction within the save's own commit
(``kvstore``).  Not searched by recall; the briefing lists its namespaces.  May import:
``storage`` and ``core``.
"""
