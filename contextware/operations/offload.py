"""Offload: hand a research task to Gemini and get back only a summary (``offload.run.offload``).

The command line also manages the sessions (``offload.py sessions list|show|delete``, its
``words`` and ``--keep-gemini``): no MCP tool does, so ``cli/offload.py`` runs that part itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextware.operations.spec import Operation, Param, text_of, texts

if TYPE_CHECKING:
    from contextware.storage.project import Project

SUMMARY = """Hand a context-heavy research task to Gemini (1M-token context) and get back only a
summary; the full answer is saved under contextware_data/offloads/ and indexed for recall.

  offload.py --prompt P [--files a,b] [--include-dirs d,e]     one-shot, cached
  offload.py --session NAME --prompt P                        a named multi-turn session
  offload.py --feature F --prompt P                           the feature's current session
  offload.py --resume-id ID --prompt P                        continue any Gemini session
  offload.py sessions list | show NAME | delete NAME

Piped standard input is extra context. A cached answer is reused while its files are unchanged and it
is younger than cache_ttl_days (config.json); --refresh asks again."""

TOOL_SUMMARY = """Hand a context-heavy research task to Gemini (1M-token context) and get back only a summary,
    when a question needs far more context than you should read yourself (a whole folder, long logs, many
    files, a library's source). Needs Gemini CLI installed and logged in; can take minutes. Returns
    cached, summary, full_response_path (read it only when the summary is not enough) and tokens; the full
    answer is saved under contextware_data/offloads/ and indexed for recall (scope offloads). The same
    question about unchanged files is answered from the cache (cached: true)."""

SESSIONS = "sessions"

PARAMS = (
    Param(
        "words",
        list,
        "manage sessions: sessions list, sessions show NAME, sessions delete NAME",
        positional="sessions ACTION [NAME]",
        positional_help="manage sessions: sessions list, sessions show NAME, sessions delete NAME",
        positional_only=True,
        mcp=False,
    ),
    Param(
        "prompt",
        str,
        "the research question or task for Gemini",
        short="-p",
        required=True,
        mcp_help="The research question or task for Gemini.",
    ),
    Param(
        "files",
        list,
        "comma-separated files whose content Gemini reads (sent on its standard input)",
        metavar="F,G",
        repeat=True,
        split=True,
        path=True,
        path_existing=True,
        mcp_help="Files whose content Gemini reads, relative to the project root.",
    ),
    Param(
        "include_dirs",
        list,
        "comma-separated folders Gemini may read itself (--include-directories)",
        metavar="A,B",
        repeat=True,
        split=True,
        path=True,
        path_existing=True,
        mcp_help="Folders Gemini may read itself, relative to the project root.",
    ),
    Param(
        "context",
        str,
        "extra context text (the command line reads piped standard input)",
        cli=False,
        mcp_help="Extra context text for Gemini (what the CLI reads from piped standard input), e.g. a diff or a log.",
    ),
    Param(
        "model",
        str,
        "Gemini model for the research (default: offload_model in config.json)",
        short="-m",
        mcp_help="Gemini model for the research (default: offload_model in config.json).",
    ),
    Param(
        "topic",
        list,
        "topic(s) to file the answer under, comma-separated",
        aliases=("--topics",),
        metavar="T",
        mcp_name="topics",
        mcp_help="Topics to file the answer under.",
    ),
    Param(
        "refresh",
        bool,
        "ignore a cached answer and ask Gemini again",
        default=False,
        mcp_help="Ignore a cached answer and ask Gemini again (one-shot offloads only).",
    ),
    Param(
        "session",
        str,
        "create or continue the named multi-turn session",
        metavar="NAME",
        group=SESSIONS,
        mcp_help="Create or continue this named multi-turn session; each turn returns the session's cumulative summary.",
    ),
    Param(
        "feature",
        str,
        "reuse the feature's current Gemini session (its first prompt carries [Feature: F])",
        metavar="F",
        group=SESSIONS,
        mcp_help="Reuse this feature's current Gemini session (a new one starts after repeated errors or past 350k tokens of context).",
    ),
    Param(
        "resume_id",
        str,
        "continue this existing Gemini session by its id (overrides --session/--feature session choice)",
        metavar="ID",
        group=SESSIONS,
        mcp_help="Continue this existing Gemini session by its id.",
    ),
    Param(
        "keep_gemini",
        bool,
        "sessions delete: keep the Gemini CLI sessions, delete only ours",
        default=False,
        group=SESSIONS,
        mcp=False,
    ),
)

# The inputs of a research task (what ``sessions`` must not be given).
TASK_INPUTS = tuple(p.name for p in PARAMS if p.name not in ("words", "keep_gemini", "context"))


@dataclass(frozen=True)
class OffloadRequest:
    """One research task: the prompt, what Gemini reads (files as texts, folders it may open) and
    extra context, the model and topics (None: config.json's, none), and the session it belongs to."""

    prompt: str
    files: str | list[str] | None = None
    include_dirs: str | list[str] | None = None
    context: str | None = None
    model: str | None = None
    topic: str | list[str] | None = None
    refresh: bool = False
    session: str | None = None
    feature: str | None = None
    resume_id: str | None = None


def check(values: Mapping[str, object]) -> OffloadRequest:
    """The task of these values: a prompt, and nothing that belongs to ``sessions``."""
    from contextware.core.errors import FieldError

    if values.get("keep_gemini"):
        raise FieldError("{field} applies to sessions delete only.", field="keep_gemini", code="bad_option")
    if values.get("prompt") is None:
        raise FieldError(
            "Give the research task with {field} (or use sessions list|show|delete).",
            field="prompt",
            code="empty_prompt",
        )
    return OffloadRequest(
        prompt=str(values["prompt"]),
        files=_texts_as_given(values.get("files")),
        include_dirs=_texts_as_given(values.get("include_dirs")),
        context=text_of(values, "context"),
        model=text_of(values, "model"),
        topic=_texts_as_given(values.get("topic")),
        refresh=bool(values.get("refresh")),
        session=text_of(values, "session"),
        feature=text_of(values, "feature"),
        resume_id=text_of(values, "resume_id"),
    )


def _texts_as_given(value: object) -> str | list[str] | None:
    """A text or a list of texts as the caller gave it, or None."""
    return value if value is None or isinstance(value, str) else list(texts(value))


def run(project: "Project", request: OffloadRequest, values: Mapping[str, object]) -> Mapping[str, object]:
    from contextware.offload.run import offload

    return offload(
        project,
        request.prompt,
        files=request.files,
        include_dirs=request.include_dirs,
        model=request.model,
        topic=request.topic,
        refresh=request.refresh,
        stdin_text=request.context,
        session=request.session,
        feature=request.feature,
        resume_id=request.resume_id,
    )


OFFLOAD = Operation(
    name="offload",
    tool="offload",
    script="offload",
    function="offload.run.offload",
    doc="hand research to Gemini and get back only a summary; multi-turn with `--session`, `--feature`, `--resume-id`; `sessions list\\|show\\|delete`; full answers are kept under `contextware_data/offloads/` and cached by prompt, model and file hashes",
    title="Offload research to Gemini",
    summary=SUMMARY,
    tool_summary=TOOL_SUMMARY,
    params=PARAMS,
    check=check,
    run=run,
    in_process=True,  # long, and it runs Gemini CLI with this process's environment
    open_world=True,
    serialise=False,  # minutes long: other calls do not wait for it
    retry=False,  # it may have asked Gemini already
)
