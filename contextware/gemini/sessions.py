"""Gemini CLI's own sessions of a project: listing them (``--list-sessions``) and deleting one.

Session ids we choose must match ``SESSION_ID_RE``.  The CLI's retention cleanup can delete a resumed
session whose id's first 8 characters are all alphanumeric: ids with ``-`` or ``_`` there are safe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from contextware.core.errors import GeminiError
from contextware.gemini.availability import resolve_binary
from contextware.gemini.output import failure, sentence, stderr_error, strip_ansi
from contextware.gemini.process import run_process

SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_SESSION_LINE_RE = re.compile(r"^\s*(\d+)\.\s+(.*?)\s+\(([^()]*)\)\s+\[([^\]\s]+)\]\s*$")


@dataclass
class GeminiSession:
    index: int
    title: str
    age: str
    session_id: str


def list_sessions(
    cwd: str | Path | None = None,
    binary: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
) -> list[GeminiSession]:
    """The Gemini CLI sessions recorded for the project at ``cwd`` (oldest first)."""
    env = {**os.environ, **(extra_env or {})}  # the child's environment
    rc, out, err = run_process(
        [resolve_binary(binary), "--skip-trust", "--list-sessions"], stdin_text=None, cwd=cwd, env=env, timeout=timeout
    )
    if rc != 0:
        raise failure(rc, err)
    sessions = []
    for line in strip_ansi(out).splitlines():
        if m := _SESSION_LINE_RE.match(line):
            sessions.append(GeminiSession(int(m[1]), m[2], m[3], m[4]))
    return sessions


def delete_session(
    id_or_index: str | int,
    cwd: str | Path | None = None,
    binary: str | None = None,
    timeout: float = 60,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """Delete one session; the CLI always exits 0, so success is read from its output."""
    env = {**os.environ, **(extra_env or {})}  # the child's environment
    rc, out, err = run_process(
        [resolve_binary(binary), "--skip-trust", "--delete-session", str(id_or_index)],
        stdin_text=None,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )
    if rc != 0:
        raise failure(rc, err)
    if "Deleted session" in out:
        return
    message, _ = stderr_error(err)
    lowered = message.lower()
    code = (
        "unknown_session"
        if ("invalid session identifier" in lowered or "no sessions found" in lowered)
        else "delete_failed"
    )
    raise GeminiError(sentence(f"Gemini CLI could not delete session {id_or_index}", message), code=code)
