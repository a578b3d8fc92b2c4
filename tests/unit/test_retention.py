"""Retention (``memory.retention``): an old session's turns folded into its digest and archived, and
nothing else touched (real LanceDB, the real model, turns imported with real past dates)."""

from __future__ import annotations

import json
import stat
from datetime import timedelta

import pytest

from contextware.core.errors import FieldError
from contextware.core.text import iso, utcnow
from contextware.memory.recall import ask
from contextware.memory.records import list_records, save_fact
from contextware.memory.team.memfile import render
from contextware.memory.team.share import import_memory
from contextware.memory.turns import archive, retention

OLD = [
    ("user", "Which database should the billing service use?"),
    ("agent", "We decided to use Postgres 16 for the billing service, with one schema per tenant."),
    ("user", "Can the invoices be queued somewhere durable?"),
    ("agent", "I added a Redis stream for invoices and fixed the consumer group name."),
    ("user", "Why does the nightly export fail?"),
    ("agent", "The export failed because the S3 credentials expired; I rotated them."),
    ("user", "Thanks, summarise what we changed."),
    ("agent", "Done: Postgres 16 chosen, Redis stream added, credentials rotated."),
]


def _turns(session: str, days_ago: float, turns: list[tuple[str, str]], start: int) -> list[dict]:
    when = utcnow() - timedelta(days=days_ago)
    return [
        {
            "id": f"log-{start + i:012x}",
            "session_id": session,
            "role": role,
            "text": text,
            "created_at": iso(when + timedelta(minutes=i)),
        }
        for i, (role, text) in enumerate(turns)
    ]


@pytest.fixture
def history(project):
    rows = [
        *_turns("old-session", 120, OLD, 0x100),
        *_turns("short-old", 120, OLD[:4], 0x200),  # two requests: too short for a digest, kept
        *_turns("recent", 2, OLD, 0x300),
    ]
    import_memory(project, render(rows), source="history.jsonl")
    fact = save_fact(project, "The billing service runs on Postgres 16.", kind="decision")["id"]
    return project, fact


def _sessions(project) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in list_records(project, "logs", 1000)["records"]:
        out[r["session_id"]] = out.get(r["session_id"], 0) + 1
    return out


@pytest.mark.slow
def test_a_dry_run_lists_the_old_session_and_changes_nothing(history):
    project, _ = history
    before = _sessions(project)
    report = retention.retain(project, older_than=30, dry_run=True)
    assert [s["session_id"] for s in report["retained"]] == ["old-session"] and report["turns"] == 8
    assert _sessions(project) == before and not (project.data_dir / archive.ARCHIVE_DIR).exists()


@pytest.mark.slow
def test_old_turns_go_to_the_archive_and_the_digest_answers(history):
    project, fact = history
    report = retention.retain(project, older_than=30)
    assert [s["session_id"] for s in report["retained"]] == ["old-session"]
    assert _sessions(project) == {"short-old": 4, "recent": 8}  # only the old, long session went
    path = archive.archive_path(project, "old-session")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    archived = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert sorted(r["text"] for r in archived) == sorted(t for _, t in OLD)
    ledger = json.loads((project.data_dir / retention.LEDGER).read_text())["sessions"]["old-session"]
    digest = ledger["digest"]
    assert ledger["archive"].endswith(path.name) and ledger["rows"] == 8
    episodes = {r["id"]: r for r in list_records(project, "episodes", 100)["records"]}
    assert episodes[digest]["source"] == "digest:old-session" and "Postgres 16" in episodes[digest]["summary"]
    assert fact in {r["id"] for r in list_records(project, "facts", 100)["records"]}  # facts never touched
    got = [r["id"] for r in ask(project, "why did the nightly export fail?", min_confidence=0.0)["results"]]
    assert digest in got[:3]
    stats = retention.retention_stats(project)
    assert stats["archived_sessions"] == 1 and stats["archived_rows"] == 8


@pytest.mark.slow
def test_a_second_run_changes_nothing_and_the_archive_imports_back(history):
    project, _ = history
    retention.retain(project, older_than=30)
    path = archive.archive_path(project, "old-session")
    first = path.read_bytes()
    again = retention.retain(project, older_than=30)
    assert again["retained"] == [] and path.read_bytes() == first
    back = import_memory(project, path.read_text(), source=str(path))
    assert back["added"] == 8 and _sessions(project)["old-session"] == 8


@pytest.mark.slow
def test_a_run_that_died_after_archiving_is_finished_by_the_next(history):
    """Killed between the archive and the delete: the turns are in both; the next run deletes them
    and the archive keeps one copy of each."""
    project, _ = history
    rows = retention._session_rows(project, "old-session")
    archive.write_archive(archive.archive_path(project, "old-session"), rows)
    retention.retain(project, older_than=30)
    archived = archive.archive_path(project, "old-session").read_text().splitlines()[1:]
    assert len(archived) == 8 and "old-session" not in _sessions(project)


@pytest.mark.slow
def test_the_configured_policy_runs_at_most_once_a_day(history):
    project, _ = history
    assert retention.retain_if_due(project) is None  # no policy configured: nothing happens
    project.configure(log_retention_days=30.0)
    assert [s["session_id"] for s in retention.retain_if_due(project)["retained"]] == ["old-session"]
    assert retention.retain_if_due(project) is None  # ran today


@pytest.mark.slow
def test_zero_or_negative_days_are_refused(history):
    project, _ = history
    with pytest.raises(FieldError, match="older_than must be a number of days above 0"):
        retention.retain(project, older_than=0)


@pytest.mark.slow
def test_the_command_needs_a_policy_or_a_flag(project_dir, script):
    out = script("memory", "retain")
    assert out.returncode == 2 and "--older-than must be a number of days above 0" in out.json["error"]["message"]
    out = script("memory", "retain", "--older-than", "30", "--dry-run")
    assert out.returncode == 0 and out.json["sessions"] == 0


@pytest.mark.slow
def test_a_session_resumed_after_retention_keeps_its_beginning_in_the_digest(history):
    from contextware.memory.records import get, save_log
    from contextware.memory.turns.digest import refresh_digest

    project, _ = history
    digest = retention.retain(project, older_than=30)["retained"][0]["digest"]
    for text in ("Back again: can we add retries?", "Add a retry to the export job.", "Also log the failures."):
        save_log(project, text, session_id="old-session", role="user")
    assert refresh_digest(project, "old-session")["id"] == digest
    summary = get(project, digest)["record"]["summary"]
    assert "Postgres 16" in summary  # decided in the archived turns
    assert "Session of 7 requests" in get(project, digest)["record"]["goal"]
