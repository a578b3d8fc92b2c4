"""MCP tools to look at and fix memory (list, get, update, delete, history, confirm, stats: built from
their declarations in ``operations.memory``) and to build the code index (crawl: ``operations.crawl``)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.types import CallToolResult, ToolAnnotations

from contextware.hosts.mcp.params import declared_tool
from contextware.operations.crawl import CRAWL
from contextware.operations.memory import MEMORY_OPERATIONS

TOOLS: dict[str, tuple[Callable[..., CallToolResult], str, ToolAnnotations]] = {
    **{op.tool: declared_tool(op) for op in MEMORY_OPERATIONS},
    "crawl_project": declared_tool(CRAWL),
}
