"""MCP tools to look at and fix memory (list, get, update, delete, history, confirm, stats: built from
their declarations in ``operations.memory``) and to build the code index (crawl: a thin adapter over
the function ``crawl_project.py`` calls, with the parameter types and annotations of ``params``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, ToolAnnotations

from contextware.codeindex.indexer import SUMMARIZERS
from contextware.core.text import split_list
from contextware.hosts.mcp.calls import call, under_root
from contextware.hosts.mcp.params import declared_tool, flag, opt_choice, opt_int, strings, writes
from contextware.operations.memory import MEMORY_OPERATIONS


def crawl_project(
    paths: strings("Only these files or folders, relative to the project root (default: the whole project).") = None,
    summarizer: opt_choice(
        SUMMARIZERS,
        "auto (default: summarizer in config.json; Gemini CLI when installed and logged in, else the local tree-sitter summariser), gemini or local.",
    ) = None,
    jobs: opt_int("Files (or Gemini batches) summarised in parallel (default: one per CPU, at most 8).", 1) = None,
    force: flag("Re-index every file even if it is unchanged.") = False,
    upgrade: flag("Replace local summaries with Gemini ones.") = False,
) -> CallToolResult:
    """Index the project's source files (a summary and the symbols of each), so that recall with
    scope code finds the right files. Git-tracked plus untracked-not-ignored files; .gitignore and
    .contextwareignore rules apply. Unchanged files are skipped (a re-crawl is cheap), rows of
    deleted files are removed; the first crawl of a large project takes minutes. Returns counts:
    scanned, indexed, unchanged, removed, skipped, failed."""
    from contextware.codeindex.indexer import crawl

    def work(p: Any) -> dict[str, Any]:
        chosen = under_root(p, split_list(paths)) or None
        return crawl(
            p, chosen, summarizer=summarizer or p.config.get("summarizer"), jobs=jobs, force=force, upgrade=upgrade
        )

    return call(work, embeds=True)


TOOLS: dict[str, tuple[Callable[..., CallToolResult], str, ToolAnnotations]] = {
    **{op.tool: declared_tool(op) for op in MEMORY_OPERATIONS},
    "crawl_project": (
        crawl_project,
        "Index the project's source files",
        # Rows of deleted files are dropped from the index (it mirrors the files; nothing of the user's
        # is lost); the auto summariser may call Gemini's API, outside this machine.
        writes(destructive=False, idempotent=True, open_world=True),
    ),
}
