"""Retention of captured conversation: an old session's turns folded into its digest, archived.

A session whose last turn is older than ``log_retention_days`` (config; 0, the default, keeps every
turn) and long enough to have a digest (``digest.MIN_TURNS`` requests) is *retained*: its digest
episode is brought up to date from all its turns, the turns are written to
``<data dir>/archive/logs/<session>.jsonl`` in the memory-file format (``contextware import`` brings
them back), and only then deleted from the logs table.  ``archive/retention.json`` records, per
session, the digest and the archive its turns went to: the provenance.  Facts, episodes, short
sessions and turns without a session are never touched.  A process killed midway leaves the archive
written and the turns still stored; the next run finishes the job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from contextware.core.errors import FieldError
from contextware.core.system import write_atomic
from contextware.core.text import iso, parse_iso, sql_str, utcnow
from contextware.memory.results import RetainReport, RetentionStats
from contextware.memory.team.memfile import FIELDS
from contextware.memory.turns.archive import ARCHIVE_DIR, archive_path, write_archive
from contextware.memory.turns.digest import MIN_TURNS, refresh_digest

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

LEDGER = "archive/retention.json"
AUTO_EVERY = timedelta(days=1)  # the hooks apply the configured policy at most this often
DELETE_BATCH = 500  # ids per delete statement


@dataclass(frozen=True)
class OldSession:
    """A session the policy retains: how many requests and rows it has, and its last turn."""

    session_id: str
    requests: int
    rows: int
    last: datetime


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=utcnow().tzinfo)


def old_sessions(project: "Project", cutoff: datetime) -> list[OldSession]:
    """Sessions whose newest turn is older than ``cutoff`` and that are long enough for a digest."""
    table = project.db.open_table("logs")
    if table is None:
        return []
    columns = ["session_id", "role", "chunk_index", "created_at"]
    rows = project.db.read(lambda: table.search().select(columns).limit(None).to_arrow().to_pylist())
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        sid = row.get("session_id")
        if sid and sid != "unknown" and row.get("created_at") is not None:
            by_session.setdefault(sid, []).append(row)
    out = []
    for sid, turns in sorted(by_session.items()):
        last = max(_aware(t["created_at"]) for t in turns)
        requests = sum(1 for t in turns if t.get("role") == "user" and not t.get("chunk_index"))
        if last < cutoff and requests >= MIN_TURNS:
            out.append(OldSession(sid, requests, len(turns), last))
    return out


def _session_rows(project: "Project", session_id: str) -> list[dict[str, Any]]:
    table = project.db.open_table("logs")
    if table is None:
        return []
    columns = [c for c in FIELDS["logs"] if c in table.schema.names]
    where = f"session_id = {sql_str(session_id)}"
    return project.db.read(lambda: table.search().where(where).select(columns).limit(None).to_arrow().to_pylist())


def _delete(project: "Project", ids: list[str]) -> None:
    def write(tbl: "Table") -> None:
        for start in range(0, len(ids), DELETE_BATCH):
            tbl.delete(f"id IN ({', '.join(sql_str(i) for i in ids[start : start + DELETE_BATCH])})")

    project.db.write("logs", write)


def _read_ledger(project: "Project") -> dict[str, Any]:
    try:
        data = json.loads((project.data_dir / LEDGER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "sessions": {}}
    if not isinstance(data, dict) or not isinstance(data.get("sessions"), dict):
        return {"version": 1, "sessions": {}}
    return data


def _write_ledger(project: "Project", ledger: dict[str, Any]) -> None:
    write_atomic(project.data_dir / LEDGER, json.dumps(ledger, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


MAX_OLDER_THAN_DAYS = 36_500  # a century


def retain(project: "Project", *, older_than: float, dry_run: bool = False, use_model: bool = False) -> RetainReport:
    """Retain the sessions whose last turn is over ``older_than`` days old; ``dry_run`` lists them
    and changes nothing; ``use_model``: digests by Gemini where configured (``gemini_digest``)."""
    if not 0 < older_than <= MAX_OLDER_THAN_DAYS:  # NaN, inf and 1e308 too (a timedelta overflows)
        raise FieldError(
            f"{{field}} must be a number of days above 0 and at most {MAX_OLDER_THAN_DAYS:,}.", field="older_than"
        )
    cutoff = utcnow() - timedelta(days=older_than)
    sessions = old_sessions(project, cutoff)
    report: RetainReport = {
        "older_than_days": older_than,
        "cutoff": iso(cutoff),
        "dry_run": dry_run,
        "sessions": len(sessions),
        "turns": sum(s.rows for s in sessions),
    }
    if dry_run:
        report["retained"] = [
            {"session_id": s.session_id, "requests": s.requests, "rows": s.rows, "last": iso(s.last)} for s in sessions
        ]
        return report
    ledger = _read_ledger(project)
    done = []
    for session in sessions:
        digest = refresh_digest(project, session.session_id, use_model=use_model)  # before any turn goes
        rows = _session_rows(project, session.session_id)
        if digest is None or not rows:
            continue
        path = archive_path(project, session.session_id)
        write_archive(path, rows)
        _delete(project, [r["id"] for r in rows])
        times = sorted(iso(r["created_at"]) or "" for r in rows)
        ledger["sessions"][session.session_id] = {
            "digest": digest["id"],
            "archive": project.relpath(path),
            "rows": len(rows) + int(ledger["sessions"].get(session.session_id, {}).get("rows", 0)),
            "first": times[0],
            "last": times[-1],
            "retained_at": iso(utcnow()),
        }
        _write_ledger(project, ledger)
        done.append({"session_id": session.session_id, "digest": digest["id"], "by": digest["by"], "rows": len(rows)})
    ledger["last_run"] = iso(utcnow())
    _write_ledger(project, ledger)
    report["retained"] = done
    report["archive"] = project.relpath(project.data_dir / ARCHIVE_DIR)
    return report


def configured_days(project: "Project") -> float:
    """``log_retention_days`` (checked when the config is read: a number, at least 0)."""
    return project.config.log_retention_days


def retain_if_due(project: "Project") -> RetainReport | None:
    """The configured policy, at most once a day (the capture hooks call this after answering)."""
    days = configured_days(project)
    if days <= 0:
        return None
    last = parse_iso(_read_ledger(project).get("last_run"))
    if last is not None and utcnow() - _aware(last) < AUTO_EVERY:
        return None
    return retain(project, older_than=days)


def retention_stats(project: "Project") -> RetentionStats:
    """What ``memory stats`` shows: the policy, and what it has archived so far."""
    from contextware.memory.turns.gemini_digest import budget

    ledger = _read_ledger(project)
    sessions = ledger.get("sessions", {})
    return {
        "digest_summarizer": project.config.digest_summarizer,
        "digest_tokens_today": budget(project),
        "log_retention_days": configured_days(project),
        "archived_sessions": len(sessions),
        "archived_rows": sum(int(s.get("rows", 0)) for s in sessions.values() if isinstance(s, dict)),
        "last_run": ledger.get("last_run"),
    }
