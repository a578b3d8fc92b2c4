"""The MCP tools, every one built from its behaviour's declaration in ``contextware.operations``
(``params.tool_function``): the published argument schema (enums, bounds), the call through
``calls.call`` on the current project, and truthful annotations (read-only, destructive, idempotent,
open world)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.types import CallToolResult, ToolAnnotations

from contextware.hosts.mcp.params import declared_tool
from contextware.operations.context import CONTEXT
from contextware.operations.crawl import CRAWL
from contextware.operations.index import INDEX
from contextware.operations.memory import MEMORY_OPERATIONS
from contextware.operations.offload import OFFLOAD
from contextware.operations.recall import RECALL
from contextware.operations.save import SAVE
from contextware.operations.store import STORE

# In the order ``tools/list`` shows them.
TOOL_OPERATIONS = (SAVE, RECALL, INDEX, OFFLOAD, STORE, CONTEXT, *MEMORY_OPERATIONS, CRAWL)

TOOLS: dict[str, tuple[Callable[..., CallToolResult], str, ToolAnnotations]] = {
    op.tool: declared_tool(op) for op in TOOL_OPERATIONS
}
