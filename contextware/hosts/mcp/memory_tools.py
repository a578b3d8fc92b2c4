"""MCP tools to look at and fix memory (list, get, update, delete, history, confirm, stats) and to build the
code index (crawl): thin adapters over the functions ``memory.py`` and ``crawl_project.py`` call,
with the parameter types and annotations of ``params``, as ``tools``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from contextware.codeindex.indexer import SUMMARIZERS
from contextware.core.text import split_list
from contextware.hosts.mcp.calls import call, under_root
from contextware.hosts.mcp.params import READS, bounded_int, flag, opt_choice, opt_int, opt_text, strings, writes
from contextware.memory.records import FACT_KINDS, RESULTS, ROLES
from contextware.storage.schemas import MEMORY_TABLES

STATUSES = ("active", "superseded")
_ID = Annotated[str, Field(description="The memory's id, e.g. fact-1a2b3c4d5e6f, episode-… or log-….")]


def list_memories(
    collection: opt_choice(MEMORY_TABLES, "Only this collection: facts, episodes or logs (default: all).") = None,
    limit: bounded_int("Most memories to return, newest first (default 20).", 1, 1000) = 20,
    stale: flag(
        "Only active facts and episodes whose linked source files changed, moved or were deleted since they were saved."
    ) = False,
) -> CallToolResult:
    """List saved memories (facts, episodes, logs), newest first, with their ids, texts, kinds,
    topics, status and times; total is how many there are. Use it to find the id of a memory to
    fix (update_memory), trace (memory_history) or remove (delete_memory); to find memories by
    meaning, use recall. With stale, only memories flagged may_be_stale: check each against the
    code, then confirm_memory, update_memory or supersede it."""
    from contextware.memory.records import list_records

    return call(lambda p: list_records(p, collection, limit, stale=stale))


def get_memory(id: _ID) -> CallToolResult:
    """One memory by its id, with every field (has_vector says whether it is embedded yet). A
    missing id is error not_found."""
    from contextware.memory.records import get

    def fetch(p: Any) -> dict[str, Any]:
        row = get(p, id)
        from contextware.memory.turns.usage import fetched

        try:  # read by its id: the agent went for this memory (use feedback; never fails the read)
            fetched(p.data_dir, id)
        except Exception:  # noqa: BLE001
            pass
        return row

    return call(fetch)


def update_memory(
    id: _ID,
    text: opt_text("Facts and logs: the new text (one or two sentences for a fact).") = None,
    kind: opt_choice(FACT_KINDS, "Facts: the new kind.") = None,
    topics: strings('Facts and episodes: the new topics (replace the old ones), e.g. ["testing", "ci"].') = None,
    status: opt_choice(STATUSES, "Facts: active or superseded.") = None,
    goal: opt_text("Episodes: the new goal.") = None,
    result: opt_choice(RESULTS, "Episodes: success, failure or partial.") = None,
    category: opt_text("Episodes: the new category (test, deploy, ...).") = None,
    summary: opt_text("Episodes: the new summary (what was done and learned).") = None,
    role: opt_choice(ROLES, "Logs: user or agent.") = None,
) -> CallToolResult:
    """Fix a memory in place: change the given fields of one fact, episode or log and re-embed it
    (the old values are not kept). When a fact is no longer true because something changed, save
    the new fact with supersedes instead, which keeps the old one for audit. A field that does
    not apply to the memory's collection is error bad_option; secrets are redacted."""
    from contextware.memory.edits import update

    changes = {
        "text": text,
        "kind": kind,
        "topics": topics,
        "status": status,
        "goal": goal,
        "result": result,
        "category": category,
        "summary": summary,
        "role": role,
    }
    return call(lambda p: update(p, id, **changes), embeds=True)


def delete_memory(id: _ID) -> CallToolResult:
    """Delete one memory for good (a wrong, outdated or sensitive one). Deleting a fact that
    superseded another makes the older fact current again (listed as reactivated). A missing id is
    error not_found."""
    from contextware.memory.edits import delete

    return call(lambda p: delete(p, id))


def memory_history(id: _ID) -> CallToolResult:
    """The history of a memory: for a fact, the chain of facts that superseded one another, oldest
    first, from any of its links, with each one's status and created/updated times; current is the
    id of the chain's active fact. Edits in place are not versioned. Episodes and logs have no
    chain: the record itself."""
    from contextware.memory.history import history

    return call(lambda p: history(p, id))


def confirm_memory(id: _ID) -> CallToolResult:
    """Confirm that a fact or episode flagged may_be_stale (a source file it names changed, moved
    or was deleted since it was saved) still holds: it is tied again to the files it names as they
    are now, and the flag is cleared. If it no longer holds, fix it with update_memory or save the
    new fact with supersedes instead. A log is error bad_collection; a missing id is not_found."""
    from contextware.memory.edits import confirm

    return call(lambda p: confirm(p, id))


def memory_stats() -> CallToolResult:
    """Statistics of the project's memory: rows, versions, last write, embedding model, missing
    vectors and disk size per table (facts, episodes, logs, code index, offloads, session store)."""
    from contextware.memory.maintenance import stats

    return call(stats)


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
    "list_memories": (list_memories, "List memories", READS),
    "get_memory": (get_memory, "Show one memory", READS),
    "update_memory": (
        update_memory,
        "Fix a memory",
        # Overwrites the old values (not kept); the same change twice has no further effect.
        writes(destructive=True, idempotent=True),
    ),
    "delete_memory": (delete_memory, "Delete a memory", writes(destructive=True, idempotent=True)),
    "memory_history": (memory_history, "History of a memory", READS),
    # Only the memory's links to code change; confirming twice is confirming once.
    "confirm_memory": (confirm_memory, "Confirm a memory still holds", writes(destructive=False, idempotent=True)),
    "memory_stats": (memory_stats, "Memory statistics", READS),
    "crawl_project": (
        crawl_project,
        "Index the project's source files",
        # Rows of deleted files are dropped from the index (it mirrors the files; nothing of the user's
        # is lost); the auto summariser may call Gemini's API, outside this machine.
        writes(destructive=False, idempotent=True, open_world=True),
    ),
}
