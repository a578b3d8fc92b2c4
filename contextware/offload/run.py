"""Offloads: hand a context-heavy research task to Gemini (1M-token context) and give the agent back
only a summary; the full answer stays on disk (``<data_dir>/offloads/``) and is indexed for recall.

This module is the entry point the command line, hooks and MCP server share: it checks the input
(every bad input is a UsageError before anything is written) and dispatches to

- ``cache``: one-shot offloads with a cache keyed by prompt, model and sources;
- ``sessions``: named sessions, feature sessions and ``--resume-id``
  (``session_admin``: ``sessions list | show | delete``);
- ``sync``: ``sync.py check|rebuild|prune`` (the files are the truth, the table an index);
- ``table``: the table rows and the recall filters (``offload_where``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextware.core.errors import FieldError, UsageError
from contextware.core.text import check_unicode
from contextware.offload.files import check_name
from contextware.offload.table import offload_where, public_offload

if TYPE_CHECKING:
    from contextware.storage.project import Project

SESSION_ACTIONS = ("list", "show", "delete")
MAX_PROMPT_CHARS = 1_000_000
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
_GEMINI_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def _check_prompt(prompt: str | None) -> str:
    if prompt is None or not prompt.strip():
        raise FieldError(
            "The prompt is empty; say what Gemini should research with {field}.", field="prompt", code="empty_prompt"
        )
    if "\x00" in prompt:
        raise UsageError("The prompt contains NUL bytes; give text.", code="bad_prompt")
    check_unicode(prompt, "prompt")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise UsageError(
            f"The prompt is over {MAX_PROMPT_CHARS} characters; put long context in files or on standard input.",
            code="too_long",
        )
    return prompt.strip()


def _check_model(project: "Project", model: str | None) -> str | None:
    if model is not None:
        model = model.strip()
        if not _MODEL.match(model):
            raise FieldError(f"{{field}} {model!r} is not a model name such as gemini-2.5-pro.", field="model")
        return model
    return project.config.offload_model or None


def offload(
    project: "Project",
    prompt: str | None,
    *,
    files: str | Sequence[str] | None = None,
    include_dirs: str | Sequence[str] | None = None,
    model: str | None = None,
    topic: str | Sequence[str] | None = None,
    refresh: bool = False,
    stdin_text: str | None = None,
    session: str | None = None,
    feature: str | None = None,
    resume_id: str | None = None,
) -> dict[str, Any]:
    """Run one offload: one-shot (cached), or a turn of a named/feature session or of ``resume_id``.

    Returns ``{"cached", "summary", "full_response_path", "tokens", ...}``; never the full response."""
    from contextware.core.redact import refuse_secret_topics
    from contextware.core.text import parse_topics, split_list
    from contextware.offload.sources import build_stdin, read_file_texts, redact_sent, resolve_sources

    prompt = _check_prompt(prompt)
    session = check_name(session, "session")
    feature = check_name(feature, "feature")
    if resume_id is not None:
        resume_id = resume_id.strip()
        if not _GEMINI_ID.match(resume_id):
            raise FieldError(
                f"{{field}} {resume_id!r} is not a Gemini session id (letters, digits, '-', '_').", field="resume_id"
            )
        if not (session or feature):
            check_name(resume_id, "resume_id")  # it names the session folder too
    if refresh and (session or feature or resume_id):
        raise FieldError(
            "{field} applies to one-shot offloads; session turns are never cached.", field="refresh", code="bad_option"
        )
    if stdin_text is not None and "\x00" in stdin_text:
        raise UsageError("Standard input contains NUL bytes; pipe text.", code="bad_content")
    topics = parse_topics(refuse_secret_topics(topic))
    model = _check_model(project, model)
    # Gemini is given only redacted text, as a crawl's summaries: the prompt, the piped context and
    # every file (the files are hashed as they are on disk, for the cache's staleness checks).
    sent: dict[str, int] = {}
    prompt = redact_sent(sent, prompt)
    if stdin_text is not None:
        stdin_text = redact_sent(sent, stdin_text)
    sources = resolve_sources(project, split_list(files), split_list(include_dirs), stdin_text)
    texts = {path: redact_sent(sent, text) for path, text in read_file_texts(sources).items()}
    build_stdin(sources, texts)  # size check before anything is written
    out = _dispatch(project, prompt, sources, texts, model, topics, refresh, session, feature, resume_id)
    for kind, n in sent.items():  # what was masked, before sending and before storing
        out.setdefault("redacted", {})
        out["redacted"][kind] = out["redacted"].get(kind, 0) + n
    return out


def _dispatch(
    project: "Project",
    prompt: str,
    sources: Any,
    texts: dict[str, str],
    model: str | None,
    topics: list[str],
    refresh: bool,
    session: str | None,
    feature: str | None,
    resume_id: str | None,
) -> dict[str, Any]:
    if session or feature or resume_id:
        from contextware.offload.sessions import offload_session

        return offload_session(
            project,
            prompt,
            sources=sources,
            texts=texts,
            model=model,
            name=session,
            feature=feature,
            resume_id=resume_id,
            topics=topics,
        )
    from contextware.offload.cache import offload_once

    return offload_once(project, prompt, sources=sources, texts=texts, model=model, topics=topics, refresh=refresh)


def sessions_command(
    project: "Project", action: str, name: str | None = None, *, keep_gemini: bool = False
) -> dict[str, Any]:
    """``offload.py sessions list | show NAME | delete NAME``."""
    from contextware.offload.session_admin import session_delete, session_list, session_show

    if action not in SESSION_ACTIONS:
        raise UsageError(f"Unknown sessions action {action!r}: use list, show NAME or delete NAME.", code="bad_action")
    if action == "list":
        if name:
            raise UsageError("sessions list takes no name.", code="usage")
        return session_list(project)
    if not name:
        raise UsageError(f"sessions {action} needs the session's name.", code="usage")
    name = check_name(name, "session") or name
    if action == "show":
        return session_show(project, name)
    return session_delete(project, name, keep_gemini=keep_gemini)


__all__ = ["offload", "offload_where", "public_offload", "sessions_command"]
