"""Where offloads live on disk, and how they are written: the files are the source of truth.

Layout under the data dir::

    offloads/cache/<key>/metadata.json        one-shot answers (one folder per cache key)
    offloads/cache/<key>/full_response.md
    offloads/cache/<key>/summary.md
    offloads/sessions/<name>/session.json     named and feature sessions
    offloads/sessions/<name>/summary.md       cumulative summary of what was learned
    offloads/sessions/<name>/full_response-<ISO8601>.md   one file per turn

Every file is written to a temporary file in the same folder and renamed over the target, and a
cache entry is assembled in a temporary folder that is renamed into place, so a reader never sees a
half-written entry.  Writers of one cache key or one session are serialised by a file lock.
This module also holds the options every Gemini call of an offload shares.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import FieldError, StorageError, disk_full, is_disk_full

if TYPE_CHECKING:
    from contextware.storage.project import Project

OFFLOADS_DIR = "offloads"
CACHE_DIR = "cache"
SESSIONS_DIR = "sessions"
METADATA = "metadata.json"
FULL_RESPONSE = "full_response.md"
SUMMARY = "summary.md"
SESSION_STATE = "session.json"
TURN_PREFIX = "full_response-"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TMP_PREFIX = ".tmp-"
LOCK_MARGIN_S = 120.0  # a lock is held for a whole Gemini call: wait that long, plus this


# -- layout --------------------------------------------------------------------------------------
def offloads_dir(project: "Project") -> Path:
    return project.data_dir / OFFLOADS_DIR


def cache_root(project: "Project") -> Path:
    return offloads_dir(project) / CACHE_DIR


def sessions_root(project: "Project") -> Path:
    return offloads_dir(project) / SESSIONS_DIR


def session_dir(project: "Project", name: str) -> Path:
    return sessions_root(project) / name


def data_relative(project: "Project", path: Path) -> str:
    """``path`` relative to the data dir (what rows store as ``response_file``)."""
    return path.relative_to(project.data_dir).as_posix()


def display_path(project: "Project", data_rel: str) -> str:
    """A data-dir-relative path as shown to users: project-relative POSIX when the data dir is inside
    the project (``contextware_data/offloads/...``), absolute otherwise."""
    return project.relpath(project.data_dir / data_rel)


def check_name(value: str | None, field: str) -> str | None:
    """A session or feature name (``field`` names the input, worded by each front end)."""
    if value is None:
        return None
    v = value.strip()
    if not _NAME.match(v):
        raise FieldError(
            f"{{field}} {value!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
            field=field,
        )
    return v


def turn_file_name(when: datetime) -> str:
    """``full_response-20260102T030405.123456Z.md`` (ISO 8601 basic format: no ':' in file names)."""
    return f"{TURN_PREFIX}{when.strftime('%Y%m%dT%H%M%S.%fZ')}.md"


def turn_file_time(name: str) -> datetime | None:
    from datetime import timezone

    stem = name[len(TURN_PREFIX) : -3] if name.startswith(TURN_PREFIX) and name.endswith(".md") else ""
    try:
        return datetime.strptime(stem, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


# -- atomic writes -------------------------------------------------------------------------------
def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, fsync, rename)."""
    from contextware.core.system import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(exc, f"the write of {path}") from None
        raise StorageError(f"Cannot write {path}: {exc.strerror or exc}.", code="not_writable") from None


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when the file is missing or damaged."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write_entry_dir(final: Path, files: dict[str, str]) -> None:
    """Create (or replace) the folder ``final`` holding ``files`` (name -> text) as one step: the
    files are written in a temporary sibling folder that is renamed into place.  Call with the
    entry's lock held."""
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f"{_TMP_PREFIX}{final.name}.{os.getpid()}.{secrets.token_hex(4)}"
    old = None
    try:
        tmp.mkdir()
        for name, text in files.items():
            with open(tmp / name, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        if final.exists():
            old = parent / f"{_TMP_PREFIX}old-{final.name}.{secrets.token_hex(4)}"
            os.replace(final, old)
        os.replace(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not final.exists():
            os.replace(old, final)
        if is_disk_full(exc):
            raise disk_full(exc, f"the write of {final}") from None
        raise StorageError(f"Cannot write {final}: {exc.strerror or exc}.", code="not_writable") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove_dir(path: Path) -> None:
    """Remove a folder so that it disappears at once (renamed aside, then deleted)."""
    if not path.exists():
        return
    aside = path.parent / f"{_TMP_PREFIX}del-{path.name}.{secrets.token_hex(4)}"
    try:
        os.replace(path, aside)
    except OSError as exc:
        raise StorageError(f"Cannot remove {path}: {exc.strerror or exc}.", code="not_writable") from None
    shutil.rmtree(aside, ignore_errors=True)


def is_temporary(name: str) -> bool:
    return name.startswith(_TMP_PREFIX) or name.startswith(".")


# -- locks ---------------------------------------------------------------------------------------
@contextmanager
def entry_lock(project: "Project", kind: str, name: str) -> Iterator[None]:
    """Serialise offloads of one cache key or one session across processes.  Held during the Gemini
    call, so a second offload of the same key waits and then finds the answer cached."""
    from filelock import FileLock, Timeout

    project.ensure_data_dir()
    lock_dir = project.lock_dir
    lock_dir.mkdir(parents=True, exist_ok=True)
    timeout = project.config.offload_timeout_s + LOCK_MARGIN_S
    lock = FileLock(str(lock_dir / f"offload-{kind}-{name}.lock"), timeout=timeout)
    try:
        with lock:
            yield
    except Timeout:
        raise StorageError(
            f"Timed out after {timeout:.0f} s waiting for another offload of the same {kind}.", code="lock_timeout"
        ) from None


# -- Gemini --------------------------------------------------------------------------------------
def gemini_options(project: "Project", *, research: bool = True) -> dict[str, Any]:
    """Keyword arguments for ``gemini.run_gemini`` shared by every offload call: timeout (a research
    call's, else a summary call's), the project-wide rate limit and its state folder."""
    cfg = project.config
    return {
        "timeout": cfg.offload_timeout_s if research else cfg.gemini_timeout_s,
        "state_dir": project.data_dir / "gemini",
        "rate_limit_per_minute": cfg.gemini_requests_per_minute,
        "rate_limit_backoff": cfg.gemini_rate_limit_backoff_s,
    }


def new_gemini_session_id(name: str) -> str:
    """``cw_<name>_<8 hex>``: our own id for a new Gemini session.  Its first 8 characters hold a
    ``_`` and no ``-``: Gemini CLI's retention cleanup can delete sessions whose first 8 characters are
    all alphanumeric, and ``--delete-session`` fails for ids with ``-`` there (both seen with Gemini CLI 0.61.0)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:40] or "session"
    return f"cw_{slug}_{secrets.token_hex(4)}"


def gemini_id_prefix(name: str) -> str:
    """The prefix of every id ``new_gemini_session_id(name)`` makes."""
    return new_gemini_session_id(name).rsplit("_", 1)[0] + "_"


def redact_texts(counts: dict[str, int], *texts: str) -> list[str]:
    """Mask obvious secrets (``redact.redact``) in texts about to be stored, adding to ``counts``."""
    from contextware.core.redact import redact

    out = []
    for text in texts:
        clean, found = redact(text)
        for kind, n in found.items():
            counts[kind] = counts.get(kind, 0) + n
        out.append(clean)
    return out
