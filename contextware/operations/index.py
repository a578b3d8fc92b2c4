"""Index: (re)index given files in the code index (``codeindex.indexer.index_files``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextware.codeindex.summarizing import SUMMARIZERS
from contextware.operations.spec import Operation, Param, text_of, texts

if TYPE_CHECKING:
    from contextware.storage.project import Project

SUMMARY = """(Re)index the given files in the code index. Safe to run many at once in the background
(`uv run scripts/index_file.py src/app.py &`). Binary, too large (over max_file_bytes, default 1 MB),
ignored and out-of-project files are skipped and reported; a given file that no longer exists is
removed from the index."""

TOOL_SUMMARY = """(Re)index files in the code index, e.g. right after editing them, so recall with scope code
    stays fresh. Unchanged files are skipped; binary, too large (over max_file_bytes, default 1 MB),
    ignored and out-of-project files are skipped and reported; a given file that no longer exists is
    removed from the index."""

PARAMS = (
    Param(
        "paths",
        list,
        "files to index (relative to the working directory)",
        mcp_help="Files to (re)index, relative to the project root (or absolute).",
        positional="PATH",
        positional_help="files to index (relative to the working directory)",
        positional_only=True,
        required=True,
        path=True,
    ),
    Param(
        "summarizer",
        str,
        "auto (default), gemini or local",
        choices=SUMMARIZERS,
        mcp_help="auto (default: summarizer in config.json; Gemini CLI when installed and logged in, else the local tree-sitter summariser), gemini or local.",
    ),
    Param(
        "force",
        bool,
        "re-index even if the content is unchanged",
        default=False,
        mcp_help="Re-index even if the content is unchanged.",
    ),
)


@dataclass(frozen=True)
class IndexRequest:
    """Which files to (re)index, how to summarise them (None: ``summarizer`` in config.json) and
    whether an unchanged file is indexed again."""

    paths: tuple[str, ...]
    summarizer: str | None
    force: bool


def check(values: Mapping[str, object]) -> IndexRequest:
    """The request of these values: the paths as given (one path or a list; a name may hold a
    comma, so a text is never split) and a known summariser."""
    from contextware.codeindex.summarizing import check_summarizer

    summarizer = text_of(values, "summarizer")
    return IndexRequest(
        paths=texts(values.get("paths")),
        summarizer=check_summarizer(summarizer) if summarizer else None,
        force=bool(values.get("force")),
    )


def run(project: "Project", request: IndexRequest, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.codeindex.indexer import index_files

    summarizer = request.summarizer or project.config.summarizer
    return index_files(project, request.paths, summarizer=summarizer, force=request.force)


INDEX = Operation(
    name="index",
    tool="index_file",
    script="index_file",
    function="codeindex.indexer.index_files",
    doc="(re)index given files, e.g. in the background after an edit; safe to run many at once",
    title="Re-index source files",
    summary=SUMMARY,
    tool_summary=TOOL_SUMMARY,
    params=PARAMS,
    check=check,
    run=run,
    embeds=True,
    in_process=True,
    idempotent=True,
    open_world=True,  # the auto summariser may call Gemini's API
)
