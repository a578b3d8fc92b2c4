"""The MCP tools: the declared behaviours' (save, recall, index, context: built from
``contextware.operations``), and one thin adapter per other tool over the plain function the CLI
calls, with the published argument schema (enums, bounds) and truthful annotations (read-only,
destructive, idempotent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from contextware.core.text import split_list
from contextware.hosts.mcp.calls import call, under_root
from contextware.hosts.mcp.params import (
    declared_tool,
    flag,
    opt_text,
    strings,
    writes,
)
from contextware.operations.context import CONTEXT
from contextware.operations.index import INDEX
from contextware.operations.recall import RECALL
from contextware.operations.save import SAVE
from contextware.operations.store import STORE

# -- tools ------------------------------------------------------------------------------------------


def offload(
    prompt: Annotated[str, Field(description="The research question or task for Gemini.")],
    files: strings("Files whose content Gemini reads, relative to the project root.") = None,
    include_dirs: strings("Folders Gemini may read itself, relative to the project root.") = None,
    context: opt_text(
        "Extra context text for Gemini (what the CLI reads from piped standard input), e.g. a diff or a log."
    ) = None,
    model: opt_text("Gemini model for the research (default: offload_model in config.json).") = None,
    topics: strings("Topics to file the answer under.") = None,
    refresh: flag("Ignore a cached answer and ask Gemini again (one-shot offloads only).") = False,
    session: opt_text(
        "Create or continue this named multi-turn session; each turn returns the session's cumulative summary."
    ) = None,
    feature: opt_text(
        "Reuse this feature's current Gemini session (a new one starts after repeated errors or past 350k tokens of context)."
    ) = None,
    resume_id: opt_text("Continue this existing Gemini session by its id.") = None,
) -> CallToolResult:
    """Hand a context-heavy research task to Gemini (1M-token context) and get back only a summary,
    when a question needs far more context than you should read yourself (a whole folder, long logs, many
    files, a library's source). Needs Gemini CLI installed and logged in; can take minutes. Returns
    cached, summary, full_response_path (read it only when the summary is not enough) and tokens; the full
    answer is saved under contextware_data/offloads/ and indexed for recall (scope offloads). The same
    question about unchanged files is answered from the cache (cached: true)."""
    from contextware.offload.run import offload as run_offload

    return call(
        lambda p: run_offload(
            p,
            prompt,
            files=under_root(p, split_list(files), existing_only=True),
            include_dirs=under_root(p, split_list(include_dirs), existing_only=True),
            model=model,
            topic=topics,
            refresh=refresh,
            stdin_text=context,
            session=session,
            feature=feature,
            resume_id=resume_id,
        ),
        serialise=False,
        retry=False,
    )


TOOLS: dict[str, tuple[Callable[..., CallToolResult], str, ToolAnnotations]] = {
    "save_fact": declared_tool(SAVE),
    "recall": declared_tool(RECALL),
    "index_file": declared_tool(INDEX),
    "offload": (
        offload,
        "Offload research to Gemini",
        writes(destructive=False, idempotent=False, open_world=True),
    ),
    "session_store": declared_tool(STORE),
    "load_session_context": declared_tool(CONTEXT),
}
