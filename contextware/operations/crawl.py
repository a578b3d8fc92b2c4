"""Crawl: build or refresh the code index of the whole project (``codeindex.indexer.crawl``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextware.codeindex.summarizing import SUMMARIZERS
from contextware.operations.spec import Operation, Param, number_of, text_of, texts

if TYPE_CHECKING:
    from contextware.storage.project import Project

SUMMARY = """Index the project's source files: a summary and the symbols of each file, searchable with
`recall.py --scope code`.

In a git repository the files are the tracked ones plus untracked files that are not ignored;
elsewhere .gitignore rules apply; .contextwareignore (gitignore syntax) excludes more. The data dir,
.git, virtualenvs, node_modules, build outputs and lock files are never indexed. Files whose mtime and
size (then content hash) are unchanged are skipped; rows of deleted files are removed. An interrupted
crawl keeps what it finished: run it again to continue."""

TOOL_SUMMARY = """Index the project's source files (a summary and the symbols of each), so that recall with
    scope code finds the right files. Git-tracked plus untracked-not-ignored files; .gitignore and
    .contextwareignore rules apply. Unchanged files are skipped (a re-crawl is cheap), rows of
    deleted files are removed; the first crawl of a large project takes minutes. Returns counts:
    scanned, indexed, unchanged, removed, skipped, failed."""

PARAMS = (
    Param(
        "paths",
        list,
        "only these files or folders (default: the whole project)",
        mcp_help="Only these files or folders, relative to the project root (default: the whole project).",
        positional="PATH",
        positional_help="only these files or folders (default: the whole project)",
        positional_only=True,
        path=True,
    ),
    Param(
        "summarizer",
        str,
        "auto (default: Gemini when installed and authenticated, else local, per file), gemini or local",
        choices=SUMMARIZERS,
        mcp_help="auto (default: summarizer in config.json; Gemini CLI when installed and logged in, else the local tree-sitter summariser), gemini or local.",
    ),
    Param(
        "jobs",
        int,
        "files (or Gemini batches) summarised in parallel (default: one per CPU, at most 8)",
        minimum=1,
        mcp_help="Files (or Gemini batches) summarised in parallel (default: one per CPU, at most 8).",
    ),
    Param(
        "force",
        bool,
        "re-index every file even if it is unchanged",
        default=False,
        mcp_help="Re-index every file even if it is unchanged.",
    ),
    Param(
        "upgrade",
        bool,
        "replace local summaries with Gemini ones",
        default=False,
        mcp_help="Replace local summaries with Gemini ones.",
    ),
)


@dataclass(frozen=True)
class CrawlRequest:
    """What to crawl (no paths: the whole project), how (None: ``summarizer`` in config.json) and
    whether to report progress on standard error (the command line's)."""

    paths: tuple[str, ...]
    summarizer: str | None
    jobs: int | None
    force: bool
    upgrade: bool
    progress: bool = False


def check(values: Mapping[str, object]) -> CrawlRequest:
    """The request of these values (a text is one path: a name may hold a comma)."""
    from contextware.codeindex.summarizing import check_summarizer

    summarizer = text_of(values, "summarizer")
    return CrawlRequest(
        paths=texts(values.get("paths")),
        summarizer=check_summarizer(summarizer) if summarizer else None,
        jobs=number_of(values, "jobs"),
        force=bool(values.get("force")),
        upgrade=bool(values.get("upgrade")),
    )


def run(project: "Project", request: CrawlRequest, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.codeindex.indexer import crawl

    return crawl(
        project,
        list(request.paths) or None,
        summarizer=request.summarizer or project.config.summarizer,
        jobs=request.jobs,
        force=request.force,
        upgrade=request.upgrade,
        progress=request.progress,
    )


CRAWL = Operation(
    name="crawl",
    tool="crawl_project",
    script="crawl_project",
    function="codeindex.indexer.crawl",
    doc="index the project's source files; unchanged files are skipped, deleted ones removed",
    title="Index the project's source files",
    summary=SUMMARY,
    tool_summary=TOOL_SUMMARY,
    params=PARAMS,
    check=check,
    run=run,
    embeds=True,
    in_process=True,
    # Rows of deleted files are dropped from the index (it mirrors the files; nothing of the user's
    # is lost); the auto summariser may call Gemini's API, outside this machine.
    idempotent=True,
    open_world=True,
)
