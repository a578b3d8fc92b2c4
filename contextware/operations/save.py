"""Save: a fact, an episode or a conversation log (``memory.records.save``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from contextware.memory.records import COLLECTIONS, FACT_KINDS, RESULTS, ROLES
from contextware.operations.spec import Operation, Param

if TYPE_CHECKING:
    from contextware.storage.project import Project

SUMMARY = """Save a fact (default), an episode or a conversation log to the project's memory.

An exact duplicate returns the existing id as duplicate_of and writes nothing; near-duplicates are
saved and listed under similar, so you can supersede one. Obvious secrets are redacted."""

TOOL_SUMMARY = """Save a fact (default), an episode or a conversation log to the project's memory.

    A fact is a durable truth: a preference or constraint the user states, a decision, a convention or an
    environment detail. An episode records a task's outcome (goal, result, category); save one after
    anything that failed, half-worked or took real effort, with the lesson in the content. A log keeps a
    chunk of the conversation (long text is chunked). An exact duplicate returns duplicate_of and writes
    nothing; near-duplicates are saved and listed under similar, so you can supersede one instead of
    adding a contradiction. Obvious secrets are redacted (listed under redacted)."""

FACTS = "facts"
EPISODES = "episodes (the content is the summary: what was done and learned)"
LOGS = "logs (long text is chunked)"

PARAMS = (
    Param(
        "content",
        str,
        "the text to save, or - to read it from standard input",
        mcp_help="The text to save: the fact (one or two sentences that make sense with no context), the episode's summary (what was done and learned) or the log chunk.",
        positional="CONTENT",
        positional_help="the text to save, or - to read it from standard input",
        positional_only=True,
        required=True,
    ),
    Param(
        "type",
        str,
        "fact (default), episode or log",
        default="fact",
        choices=tuple(COLLECTIONS),
        mcp_help="fact (default), episode or log.",
    ),
    Param(
        "kind",
        str,
        "preference, constraint, decision, convention, environment or note (default)",
        choices=FACT_KINDS,
        group=FACTS,
        mcp_help="Facts: preference, constraint, decision, convention, environment or note (default).",
    ),
    Param(
        "topics",
        list,
        "comma-separated topics, e.g. testing,ci (facts and episodes)",
        group=FACTS,
        mcp_help='Facts and episodes: topics, e.g. ["testing", "ci"].',
    ),
    Param(
        "supersedes",
        str,
        "id of the fact this one replaces (kept for audit, hidden from recall)",
        metavar="ID",
        group=FACTS,
        mcp_help="Facts: id of the fact this one replaces (kept for audit, hidden from recall), e.g. fact-1a2b3c4d5e6f.",
    ),
    Param(
        "goal", str, "what the task set out to do", group=EPISODES, mcp_help="Episodes: what the task set out to do."
    ),
    Param(
        "result",
        str,
        "success, failure or partial",
        choices=RESULTS,
        group=EPISODES,
        mcp_help="Episodes: success, failure or partial.",
    ),
    Param(
        "category",
        str,
        "shell, git, code, test, build, deploy, debug, ...",
        group=EPISODES,
        mcp_help="Episodes: shell, git, code, test, build, deploy, debug, ...",
    ),
    Param(
        "session",
        str,
        "conversation/session id",
        metavar="ID",
        group=LOGS,
        mcp_help="Logs: the conversation/session id.",
    ),
    Param("role", str, "user or agent", choices=ROLES, group=LOGS, mcp_help="Logs: user or agent."),
    Param(
        "speaker",
        str,
        "who spoke, when a role has several people (e.g. two users)",
        metavar="NAME",
        group=LOGS,
        mcp=False,
    ),
)

# What an episode cannot do without, and why (asked for together, before the model loads).
EPISODE_NEEDS = {"goal": "what the task set out to do", "result": "whether it worked: success, failure or partial"}


def check(values: Mapping[str, object]) -> dict[str, Any]:
    """The keywords of ``records.save`` for these values; an episode missing its goal or result is
    refused here, naming every missing input, before anything loads."""
    from contextware.core.errors import FieldError

    if str(values.get("type") or "").strip().lower() == "episode":
        missing = [name for name in EPISODE_NEEDS if values.get(name) is None]
        if missing:
            rest = "".join(f" and a {name} ({EPISODE_NEEDS[name]})" for name in missing[1:])
            raise FieldError(
                f"An episode needs {{field}} ({EPISODE_NEEDS[missing[0]]}){rest}.",
                field=missing[0],
                code=f"missing_{missing[0]}",
            )
    asked = {k: v for k, v in values.items() if k not in ("type", "content", "session")}
    return {
        "type_": values.get("type"),
        "content": values.get("content") or "",
        "session_id": values.get("session"),
        **asked,
    }


def run(project: "Project", request: dict[str, Any], values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.memory.records import save

    return cast("dict[str, Any]", save(project, **request))  # the command's JSON


SAVE = Operation(
    name="save",
    tool="save_fact",
    script="save_fact",
    function="memory.records.save",
    doc="save a fact (default), an episode or a conversation log; an exact duplicate writes nothing",
    title="Save to project memory",
    summary=SUMMARY,
    tool_summary=TOOL_SUMMARY,
    params=PARAMS,
    check=check,
    run=run,
    embeds=True,
    quick=True,
    idempotent=True,
)
