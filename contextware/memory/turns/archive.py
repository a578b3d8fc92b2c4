"""The archive of captured turns that retention folded into their session's digest: one file per
session, ``<data dir>/archive/logs/<session>-<hash>.jsonl``, in the memory-file format (so
``contextware import`` brings the turns back).  Read by the digest of a session resumed after it was
folded, written by ``retention``."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from contextware.core.errors import UsageError
from contextware.core.system import write_atomic
from contextware.core.text import parse_iso
from contextware.memory.team.memfile import merge2, read_entries, render, written_form

if TYPE_CHECKING:
    from pathlib import Path

    from contextware.storage.project import Project

ARCHIVE_DIR = "archive/logs"


def archive_path(project: "Project", session_id: str) -> "Path":
    """One file per session: a readable part of its id and a hash of all of it (ids may hold anything)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", session_id).strip("-.")[:40] or "session"
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:12]
    return project.data_dir / ARCHIVE_DIR / f"{slug}-{digest}.jsonl"


def archived_turns(project: "Project", session_id: str) -> list[dict[str, Any]]:
    """The first chunks of a session's archived turns (``role``, ``text``, ``created_at``)."""
    path = archive_path(project, session_id)
    if not path.is_file():
        return []
    try:
        entries = read_entries(path.read_text(encoding="utf-8")).values()
    except (OSError, UnicodeDecodeError, UsageError):
        return []  # a damaged archive: the digest is built from what is stored
    return [
        {"role": e.get("role"), "text": e.get("text"), "created_at": parse_iso(e.get("created_at"))}
        for e in entries
        if not e.get("chunk_index") and e.get("session_id") == session_id
    ]


def write_archive(path: "Path", rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` to the session's archive, merged with what an earlier run archived there."""
    entries = {r["id"]: written_form("logs", r) for r in rows}
    if path.is_file():
        entries = merge2(read_entries(path.read_text(encoding="utf-8")), entries)
    write_atomic(path, render(entries.values()))
