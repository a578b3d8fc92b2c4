"""Re-redacting the offload files that older versions wrote (before the redaction layer, or with
fewer detectors): the answers, summaries, prompts and error notes of cache entries and sessions.

The files are the source of truth and the ``offloads`` table is built from them, so when a file
changed the table is rebuilt from the scrubbed files.  Idempotent: files written by this version are
already redacted, and a second run changes nothing and rebuilds nothing.  Called by
``memory.py repair`` (``memory.cleanup.scrub_secrets``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from contextware.core.json_types import JsonObject
from contextware.offload.files import (
    FULL_RESPONSE,
    METADATA,
    SESSION_STATE,
    SUMMARY,
    cache_root,
    entry_lock,
    is_temporary,
    read_json,
    read_text,
    session_dir,
    write_json,
    write_text,
)

if TYPE_CHECKING:
    from contextware.storage.project import Project

# The fields of metadata.json / session.json that hold text (the rest are ids, hashes, paths, counts).
CACHE_FIELDS = ("prompt", "summary_error")
SESSION_FIELDS = ("last_error", "rotate")
TURN_FIELDS = ("prompt", "summary")


def _redacted_fields(obj: JsonObject, fields: tuple[str, ...]) -> bool:
    from contextware.core.redact import redact_text

    changed = False
    for field in fields:
        value = obj.get(field)
        if isinstance(value, str) and (clean := redact_text(value)) != value:
            obj[field], changed = clean, True
    return changed


def _cache_meta(meta: JsonObject) -> bool:
    return _redacted_fields(meta, CACHE_FIELDS)


def _session_state(state: JsonObject) -> bool:
    changed = _redacted_fields(state, SESSION_FIELDS)
    turns = state.get("turns")
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict):
            changed = _redacted_fields(turn, TURN_FIELDS) or changed
    return changed


def _scrub_text(path: Path) -> int:
    from contextware.core.redact import redact_text

    text = read_text(path)
    if text is None or (clean := redact_text(text)) == text:
        return 0
    write_text(path, clean)
    return 1


def _scrub_json(path: Path, scrub: Callable[[JsonObject], bool]) -> int:
    data = read_json(path)
    if data is None or not scrub(data):
        return 0
    write_json(path, data)
    return 1


class Scrubbed(TypedDict):
    files: int  # files changed
    reindexed: int  # index rows rebuilt from them


def scrub_offload_files(project: "Project") -> Scrubbed:
    """``{"files": changed files, "reindexed": rows}``; each entry is scrubbed under its own lock, so
    a concurrent offload of the same key or session waits rather than interleaving."""
    from contextware.offload.session_admin import session_names

    changed = 0
    root = cache_root(project)
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if not entry.is_dir() or is_temporary(entry.name):
            continue
        with entry_lock(project, "key", entry.name):
            changed += _scrub_text(entry / FULL_RESPONSE) + _scrub_text(entry / SUMMARY)
            changed += _scrub_json(entry / METADATA, _cache_meta)
    for name in session_names(project):
        sdir = session_dir(project, name)
        with entry_lock(project, "session", name):
            for path in sorted(sdir.glob("*.md")):  # summary.md and one full_response-<time>.md per turn
                changed += _scrub_text(path)
            changed += _scrub_json(sdir / SESSION_STATE, _session_state)
    out: Scrubbed = {"files": changed, "reindexed": 0}
    if changed:
        from contextware.offload.sync import rebuild

        out["reindexed"] = rebuild(project)["indexed"]
    return out
