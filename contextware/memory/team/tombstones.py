"""Tombstones: what a deletion leaves behind so that it travels to the other clones of a project.

Deleting a fact or an episode records ``{"id", "created_at", "deleted_at", "deleted_by"}`` in
``<data dir>/tombstones.json`` (one object by id, written atomically under the ``tombstones`` write
lock, before the row is deleted: a process killed in between leaves a tombstone that still wins).
``export`` writes each tombstone as a line, ``import`` applies and keeps the ones it reads.  A
tombstone older than ``tombstone_days`` (config, default 90) is dropped: a clone that has not
exchanged memory for longer may bring the memory back.

:func:`entry_key` is the one rule that decides between two versions of an id (a memory or a
tombstone), here so that the file module and this store agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

from contextware.core.redact import redact
from contextware.core.text import iso, iso_of, strip_terminal_controls, utcnow

if TYPE_CHECKING:
    from contextware.storage.project import Project

FILE_NAME = "tombstones.json"
# A teammate's clock may run this far ahead; a later time is refused on import (``memfile``) and a
# stored tombstone dated later is ignored, so no date from the future outranks the edits to come.
CLOCK_SKEW = timedelta(days=1)
LOCK_NAME = "tombstones"


class Tombstone(TypedDict):
    """What a deletion leaves: the id, when the memory was made and deleted, and by whom."""

    id: str
    created_at: str | None
    deleted_at: str
    deleted_by: str | None


EntryT = TypeVar("EntryT", bound=Mapping[str, object])  # a memory or a tombstone, as the memory file holds it


def is_tombstone(entry: Mapping[str, object]) -> bool:
    return "deleted_at" in entry


def entry_key(entry: Mapping[str, object]) -> tuple[str, int, str]:
    """What decides between two versions of one id: the later change wins (ISO 8601 UTC to the
    second); at the same second a tombstone beats a memory; then the greater line (any fixed rule,
    so that both sides of a merge agree)."""
    when = str(entry.get("deleted_at") or entry.get("updated_at") or entry.get("created_at") or "")
    return when, int(is_tombstone(entry)), json.dumps(entry, sort_keys=True, ensure_ascii=False)


def changed_after(previous: object) -> datetime:
    """When a new version of a row changed last at ``previous`` is dated: now, but at least one
    second after ``previous`` (the file keeps seconds).  A change that follows another is then
    later by :func:`entry_key`, also within one second: dated ``now`` it tied with the version it
    replaced, the tie went to the greater line, and two clones could settle on different versions."""
    now = utcnow()
    if not isinstance(previous, datetime):  # none yet (or not a time): dated now
        return now
    previous = previous if previous.tzinfo else previous.replace(tzinfo=now.tzinfo)
    if previous > now + CLOCK_SKEW:  # a version dated in the future is never followed into it
        return now
    return max(now, previous.replace(microsecond=0) + timedelta(seconds=1))


def later(a: EntryT | None, b: EntryT | None) -> EntryT | None:
    """The winner of two versions of one id (either may be None)."""
    if a is None or b is None:
        return a or b
    return a if entry_key(a) >= entry_key(b) else b


def expiry_days(project: "Project") -> float:
    try:
        return project.config.tombstone_days
    except (TypeError, ValueError):
        return 90.0


def _fresh(entries: dict[str, Tombstone], days: float) -> dict[str, Tombstone]:
    if days <= 0:
        return entries
    cutoff = iso(utcnow() - timedelta(days=days)) or ""
    return {k: v for k, v in entries.items() if (v.get("deleted_at") or "") >= cutoff}


def _read(project: "Project") -> dict[str, Tombstone]:
    try:
        data = json.loads((project.data_dir / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    stones = data.get("tombstones") if isinstance(data, dict) else None
    if not isinstance(stones, dict):
        return {}
    ahead = iso(utcnow() + CLOCK_SKEW) or ""
    return {  # the file is ours: an object with a deletion time is taken as a Tombstone
        k: cast(Tombstone, v)
        for k, v in stones.items()
        if isinstance(v, dict) and isinstance(v.get("deleted_at"), str) and v["deleted_at"] <= ahead
    }


def load(project: "Project") -> dict[str, Tombstone]:
    """The project's unexpired tombstones by id."""
    return _fresh(_read(project), expiry_days(project))


def record(project: "Project", entries: Sequence[Tombstone]) -> int:
    """Keep ``entries`` (the later version of each id), drop expired ones; returns how many changed."""
    from contextware.core.system import write_atomic

    if not entries:
        return 0
    project.ensure_data_dir()
    with project.db.write_lock(LOCK_NAME):
        current = _read(project)
        changed = 0
        for entry in entries:
            if later(current.get(entry["id"]), entry) is entry and current.get(entry["id"]) != entry:
                current[entry["id"]] = entry
                changed += 1
        kept = _fresh(current, expiry_days(project))
        if changed or len(kept) != len(current):
            text = json.dumps({"version": 1, "tombstones": dict(sorted(kept.items()))}, indent=1, ensure_ascii=False)
            write_atomic(project.data_dir / FILE_NAME, text + "\n")
    return changed


def who(project: "Project") -> str | None:
    """Who deletes: git's ``user.name`` in the project, else ``$USER``; redacted, one short line."""
    import subprocess

    name = None
    try:
        out = subprocess.run(
            ["git", "config", "user.name"], cwd=project.root, capture_output=True, text=True, timeout=5, check=False
        )
        name = out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        name = None
    name = name or project.settings.user
    if not name:
        return None
    clean = strip_terminal_controls(" ".join(name.split()))[:80]
    return redact(clean)[0] or None


def tombstone_for(project: "Project", row: Mapping[str, object]) -> Tombstone:
    """The tombstone of a stored row deleted now (never before the row's last change: a tie goes to
    the tombstone)."""
    now = utcnow()
    changed = row.get("updated_at")
    if isinstance(changed, datetime):
        now = max(now, changed if changed.tzinfo else changed.replace(tzinfo=now.tzinfo))
    return {
        "id": str(row["id"]),
        "created_at": iso_of(row.get("created_at")),
        "deleted_at": iso(now) or "",
        "deleted_by": who(project),
    }
