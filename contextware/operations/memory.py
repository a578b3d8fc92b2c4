"""Memory: look at and fix what was saved, one declaration per ``memory`` subcommand and MCP tool
(``memory.records``, ``memory.edits``, ``memory.history``, ``memory.maintenance``).

The maintenance subcommands with no MCP tool (``reembed``, ``compact``, ``retain``, ``repair``,
``review``, ``accept``, ``promote``) stay written out in ``cli/memory.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contextware.memory.records import FACT_KINDS, RESULTS, ROLES
from contextware.operations.spec import Operation, Param, number_of, text_of
from contextware.storage.schemas import MEMORY_TABLES

if TYPE_CHECKING:
    from contextware.storage.project import Project

STATUSES = ("active", "superseded")
COLLECTIONS = tuple(MEMORY_TABLES)


def _id(action: str) -> Param:
    return Param(
        "id",
        str,
        f"the memory's id to {action}, e.g. fact-1a2b3c4d5e6f",
        mcp_help="The memory's id, e.g. fact-1a2b3c4d5e6f, episode-… or log-….",
        positional="ID",
        positional_help=f"the memory's id to {action}, e.g. fact-1a2b3c4d5e6f",
        positional_only=True,
        required=True,
    )


def _run_confirm(project: "Project", memory_id: str, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.edits import confirm

    return confirm(project, memory_id)


def _run_delete(project: "Project", memory_id: str, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.edits import delete

    return delete(project, memory_id)


def _run_history(project: "Project", memory_id: str, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.history import history

    return history(project, memory_id)


def _check_id(values: Mapping[str, object]) -> str:
    return str(values.get("id") or "")


# -- list -----------------------------------------------------------------------------------------
def _check_list(values: Mapping[str, object]) -> Mapping[str, object]:
    return values


def _run_list(project: "Project", values: Mapping[str, object], _: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.records import list_records

    limit = number_of(values, "limit")
    listed = list_records(
        project, text_of(values, "collection"), 0 if limit is None else limit, stale=bool(values.get("stale"))
    )
    return listed


LIST = Operation(
    name="memory list",
    tool="list_memories",
    script="memory",
    function="memory.records.list_records",
    doc="list memories, newest first",
    title="List memories",
    summary="List saved memories (facts, episodes, logs), newest first; --stale: only facts and episodes whose linked files changed, moved or went away.",
    tool_summary="""List saved memories (facts, episodes, logs), newest first, with their ids, texts, kinds,
    topics, status and times; total is how many there are. Use it to find the id of a memory to
    fix (update_memory), trace (memory_history) or remove (delete_memory); to find memories by
    meaning, use recall. With stale, only memories flagged may_be_stale: check each against the
    code, then confirm_memory, update_memory or supersede it.""",
    params=(
        Param(
            "collection",
            str,
            "facts, episodes or logs (default: all)",
            choices=COLLECTIONS,
            mcp_help="Only this collection: facts, episodes or logs (default: all).",
        ),
        Param(
            "limit",
            int,
            "most records to show (default 20)",
            default=20,
            minimum=1,
            maximum=1000,
            mcp_help="Most memories to return, newest first (default 20).",
        ),
        Param(
            "stale",
            bool,
            "only facts and episodes whose linked files changed, moved or went away",
            default=False,
            mcp_help="Only active facts and episodes whose linked source files changed, moved or were deleted since they were saved.",
        ),
    ),
    check=_check_list,
    run=_run_list,
    read_only=True,
)


# -- one memory by its id -------------------------------------------------------------------------
def _run_get(project: "Project", memory_id: str, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.records import get
    from contextware.memory.turns.usage import fetched

    row = get(project, memory_id)
    try:  # read by its id: someone went for this memory (use feedback; never fails the read)
        fetched(project.data_dir, memory_id)
    except Exception:  # noqa: BLE001
        pass
    return row


GET = Operation(
    name="memory get",
    tool="get_memory",
    script="memory",
    function="memory.records.get",
    doc="show one memory",
    title="Show one memory",
    summary="One memory by its id, with every field. A missing id is error not_found.",
    tool_summary="""One memory by its id, with every field (has_vector says whether it is embedded yet). A
    missing id is error not_found.""",
    params=(_id("show"),),
    check=_check_id,
    run=_run_get,
    read_only=True,
)

CONFIRM = Operation(
    name="memory confirm",
    tool="confirm_memory",
    script="memory",
    function="memory.edits.confirm",
    doc="confirm a memory still holds although code it names changed",
    title="Confirm a memory still holds",
    summary="Confirm that a memory flagged may_be_stale still holds: it is tied again to the files it names as they are now.",
    tool_summary="""Confirm that a fact or episode flagged may_be_stale (a source file it names changed, moved
    or was deleted since it was saved) still holds: it is tied again to the files it names as they
    are now, and the flag is cleared. If it no longer holds, fix it with update_memory or save the
    new fact with supersedes instead. A log is error bad_collection; a missing id is not_found.""",
    params=(_id("confirm"),),
    check=_check_id,
    run=_run_confirm,
    # Only the memory's links to code change; confirming twice is confirming once.
    idempotent=True,
)

DELETE = Operation(
    name="memory delete",
    tool="delete_memory",
    script="memory",
    function="memory.edits.delete",
    doc="delete one memory",
    title="Delete a memory",
    summary="Delete one memory for good; deleting a fact that superseded another makes the older one current again.",
    tool_summary="""Delete one memory for good (a wrong, outdated or sensitive one). Deleting a fact that
    superseded another makes the older fact current again (listed as reactivated). A missing id is
    error not_found.""",
    params=(_id("delete"),),
    check=_check_id,
    run=_run_delete,
    destructive=True,
    idempotent=True,
)

HISTORY = Operation(
    name="memory history",
    tool="memory_history",
    script="memory",
    function="memory.history.history",
    doc="the chain of facts that superseded one another, oldest first",
    title="History of a memory",
    summary="A fact's chain of facts that superseded one another, oldest first, from any of its links.",
    tool_summary="""The history of a memory: for a fact, the chain of facts that superseded one another, oldest
    first, from any of its links, with each one's status and created/updated times; current is the
    id of the chain's active fact. Edits in place are not versioned. Episodes and logs have no
    chain: the record itself.""",
    params=(_id("trace"),),
    check=_check_id,
    run=_run_history,
    read_only=True,
)


# -- update ---------------------------------------------------------------------------------------
CHANGES = (
    Param(
        "text",
        str,
        "new text (facts, logs); - reads standard input",
        mcp_help="Facts and logs: the new text (one or two sentences for a fact).",
    ),
    Param("kind", str, "new kind (facts)", choices=FACT_KINDS, mcp_help="Facts: the new kind."),
    Param(
        "topics",
        list,
        "new comma-separated topics (facts, episodes)",
        mcp_help='Facts and episodes: the new topics (replace the old ones), e.g. ["testing", "ci"].',
    ),
    Param("status", str, "active or superseded (facts)", choices=STATUSES, mcp_help="Facts: active or superseded."),
    Param("goal", str, "new goal (episodes)", mcp_help="Episodes: the new goal."),
    Param(
        "result",
        str,
        "success, failure or partial (episodes)",
        choices=RESULTS,
        mcp_help="Episodes: success, failure or partial.",
    ),
    Param("category", str, "new category (episodes)", mcp_help="Episodes: the new category (test, deploy, ...)."),
    Param(
        "summary",
        str,
        "new summary (episodes); - reads standard input",
        mcp_help="Episodes: the new summary (what was done and learned).",
    ),
    Param("role", str, "user or agent (logs)", choices=ROLES, mcp_help="Logs: user or agent."),
)


def _check_update(values: Mapping[str, object]) -> dict[str, Any]:
    """``edits.update``'s keywords: the id and every change (None: unchanged); the function checks them."""
    return {"record_id": str(values.get("id") or ""), **{p.name: values.get(p.name) for p in CHANGES}}


def _run_update(project: "Project", request: dict[str, Any], values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.edits import update

    changes = dict(request)
    return update(project, changes.pop("record_id"), **changes)


UPDATE = Operation(
    name="memory update",
    tool="update_memory",
    script="memory",
    function="memory.edits.update",
    doc="change fields of one memory (re-embeds it)",
    title="Fix a memory",
    summary="Change the given fields of one fact, episode or log and re-embed it (the old values are not kept).",
    tool_summary="""Fix a memory in place: change the given fields of one fact, episode or log and re-embed it
    (the old values are not kept). When a fact is no longer true because something changed, save
    the new fact with supersedes instead, which keeps the old one for audit. A field that does
    not apply to the memory's collection is error bad_option; secrets are redacted.""",
    params=(_id("fix"), *CHANGES),
    check=_check_update,
    run=_run_update,
    embeds=True,
    # Overwrites the old values (not kept); the same change twice has no further effect.
    destructive=True,
    idempotent=True,
)


# -- stats ----------------------------------------------------------------------------------------
def _run_stats(project: "Project", _: Mapping[str, object], values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.maintenance import stats

    return stats(project)


STATS = Operation(
    name="memory stats",
    tool="memory_stats",
    script="memory",
    function="memory.maintenance.stats",
    doc="rows, disk size, model, last write and versions per table",
    title="Memory statistics",
    summary="Rows, versions, last write, embedding model, missing vectors and disk size per table.",
    tool_summary="""Statistics of the project's memory: rows, versions, last write, embedding model, missing
    vectors and disk size per table (facts, episodes, logs, code index, offloads, session store).""",
    params=(),
    check=_check_list,
    run=_run_stats,
    read_only=True,
)

MEMORY_OPERATIONS = (LIST, GET, UPDATE, DELETE, HISTORY, CONFIRM, STATS)  # the MCP tools' order
