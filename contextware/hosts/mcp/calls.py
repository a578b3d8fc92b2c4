"""How one MCP tool call runs: on the project of the call, opened once and kept warm, with its result
or error wrapped in the Contextware envelope (see ``server`` for the whole picture)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from mcp.types import CallToolResult, TextContent

from contextware.core.errors import ContextwareError, ErrorBody, UsageError, first_line, internal_error
from contextware.core.settings import Settings, current_settings

if TYPE_CHECKING:
    from contextware.storage.project import Project

log = logging.getLogger("contextware.mcp")


class _Redacted(logging.Filter):
    """What the server logs on stderr (the host keeps it) is redacted like its answers: a traceback
    quotes the exception's text, which can hold a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        import traceback

        from contextware.core.redact import redact_text

        record.msg, record.args = redact_text(record.getMessage()), None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact_text("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        return True


log.addFilter(_Redacted())

# -- projects ---------------------------------------------------------------------------------------
_projects: dict[tuple[str, str, str], "Project"] = {}
_call_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()
_warm_lock = threading.Lock()
_warm = {"lancedb": False, "model": False}

# The settings of the tool call being answered, set around it by ``server.call_tool`` (the MCP
# front's own, or those of the resident service's caller) or by the SDK server (its own); unset,
# this process's (``current_settings``).
call_settings: ContextVar[Settings] = ContextVar("contextware_call_settings")


def current_project() -> "Project":
    """The project of this call, opened once per (root, data dir, database)."""
    from contextware.storage.layout import resolve_data_dir, resolve_db_uri, resolve_project_root
    from contextware.storage.project import Project

    settings = call_settings.get(None) or current_settings()
    root = resolve_project_root(None, settings)
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):  # no home directory at all
        home = None
    if not settings.project_root and root in (home, root.parent):
        raise UsageError(
            f"The MCP server runs in {root}, which is not a project: start it from the project's folder or set "
            "CONTEXTWARE_PROJECT_ROOT in the client's server configuration.",
            code="no_project",
        )
    data_dir = resolve_data_dir(root, settings)
    key = (str(root), str(data_dir), resolve_db_uri(data_dir, settings))
    with _registry_lock:
        project = _projects.get(key)
        if project is None:
            project = _projects[key] = Project.open(root, settings)
            _call_locks.setdefault(str(root), threading.Lock())
        project.settings = settings  # this call's (a kept project serves callers one after another)
    project.__dict__.pop("config", None)  # a long-lived server honours edits of config.json
    _ = project.config  # read now: a bad config.json is the same error from every tool
    return project


def _warm_up(project: "Project", embeds: bool) -> None:
    """Import the heavy libraries once, in one thread (numpy's C extension must not be initialised
    from two threads at once); the model loads in a thread alongside ``import lancedb``, as in the CLI."""
    if _warm["lancedb"] and (_warm["model"] or not embeds):
        return
    with _warm_lock:
        if embeds and not _warm["model"]:
            from contextware.storage.embeddings import preload_in_background

            preload_in_background(project.embedder)
            _warm["model"] = True
        if not _warm["lancedb"]:
            import numpy  # noqa: F401

            from contextware.storage.lancedb_import import import_lancedb

            import_lancedb()
            _warm["lancedb"] = True


def _envelope_result(result: Mapping[str, object], text: str | None = None) -> CallToolResult:
    envelope = json.loads(json.dumps({"ok": True, **result}, ensure_ascii=False, default=str))
    body = json.dumps(envelope, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text if text is not None else body)], structured_content=envelope
    )


def error_result(error: ErrorBody) -> CallToolResult:
    from contextware.core.redact import redact_error

    envelope = {"ok": False, "error": redact_error(error)}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(envelope, ensure_ascii=False, default=str))],
        structured_content=envelope,
        is_error=True,
    )


def _forget(project: "Project") -> None:
    """Drop the project's connection, here and in ``Project.open``'s cache (kept by the resident
    service, which runs these calls too)."""
    from contextware.storage.project import forget_open_projects

    with _registry_lock:
        for key, cached in list(_projects.items()):
            if cached is project:
                del _projects[key]
    forget_open_projects()


def call(
    work: Callable[["Project"], Mapping[str, object]],
    *,
    embeds: bool = False,
    serialise: bool = True,
    retry: bool = True,
    text: Callable[[Mapping[str, object]], str] | None = None,
) -> CallToolResult:
    """Run one tool call on the current project and wrap its result or error in the envelope.

    A storage failure or an unexpected error drops the cached project: its connection may hold
    handles to tables that were deleted or rebuilt meanwhile (``rm -rf contextware_data``,
    ``memory.py repair``), which a one-shot command never meets.  The call is then tried once more
    on a fresh connection (``retry``; every tool but ``offload`` is safe to repeat)."""
    from contextware.core.errors import StorageError

    for attempt in (1, 2):
        project = None
        try:
            project = current_project()
            _warm_up(project, embeds)
            if serialise:
                with _call_locks[str(project.root)]:
                    result = work(project)
            else:
                result = work(project)
            return _envelope_result(result, text(result) if text else None)
        except ContextwareError as exc:
            if not isinstance(exc, StorageError) or project is None:
                return error_result(exc.to_dict())
            _forget(project)
            if not retry or attempt == 2:
                return error_result(exc.to_dict())
            log.warning("Storage error (%s); retrying on a fresh connection.", exc.message)
        except Exception as exc:
            if project is not None:
                _forget(project)
            if not retry or attempt == 2 or project is None:
                log.exception("Unexpected error in a Contextware tool")
                return error_result(internal_error(exc))
            log.warning("Unexpected %s (%s); retrying on a fresh connection.", type(exc).__name__, first_line(exc))
    raise AssertionError("unreachable")


def under_root(project: "Project", paths: Sequence[str], *, existing_only: bool = False) -> list[str]:
    """Relative paths are relative to the project root (the server's cwd may be elsewhere).  With
    ``existing_only`` a path missing there is passed on as given, so the error names it as given."""
    out = []
    for raw in paths:
        p = Path(os.path.expanduser(raw))
        if not p.is_absolute() and (not existing_only or (project.root / p).exists()):
            p = project.root / p
        out.append(str(p) if p.is_absolute() else raw)
    return out
