"""Session digests by headless Gemini under a daily token budget (``memory.gemini_digest``): the REAL
Gemini CLI (0.61.0) against tests/support/fake_gemini_api.py, real LanceDB and the real model.
Each CLI start costs 1-3 s, so each test checks several things."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from contextware.core.text import iso, utcnow
from contextware.memory.records import list_records
from contextware.memory.team.memfile import render
from contextware.memory.team.share import import_memory
from contextware.memory.turns import gemini_digest, retention
from contextware.storage.project import Project
from tests.support.fake_gemini_api import FakeGeminiAPI, Reply

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TURNS = [
    ("user", "Which queue should invoices go through?"),
    ("agent", "We decided on a Redis stream for invoices; the consumer group is billing-workers."),
    ("user", f"The deploy token is {SECRET}, can you rotate the nightly export credentials?"),
    ("agent", "I rotated the S3 credentials; the nightly export failed before because they expired."),
    ("user", "Summarise what changed."),
    ("agent", "Done: Redis stream chosen, credentials rotated."),
]
DIGEST = {
    "goal": "Move invoices to a durable queue and fix the nightly export.",
    "summary": "Invoices go through a Redis stream (group billing-workers); the export's S3 credentials were rotated.",
    "result": "success",
}


@pytest.fixture
def gemini_env(gemini_process_env: dict[str, str], gemini_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", gemini_bin)


def _project(root: Path, **config) -> Project:
    data_dir = Project.open(root).data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps({"digest_summarizer": "gemini", **config}))
    project = Project.open(root)
    when = utcnow() - timedelta(days=60)
    rows = [
        {
            "id": f"log-{0x500 + i:012x}",
            "session_id": "billing-week",
            "role": role,
            "text": text,
            "created_at": iso(when + timedelta(minutes=i)),
        }
        for i, (role, text) in enumerate(TURNS)
    ]
    import_memory(project, render(rows), source="history.jsonl")
    return project


def _digest(project: Project) -> dict:
    return next(r for r in list_records(project, "episodes", 10)["records"] if r["source"] == "digest:billing-week")


def test_gemini_writes_the_digest_within_the_budget_and_sees_no_secret(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = _project(project_dir, digest_daily_tokens=50_000)
    fake_gemini_api.push(Reply(text=json.dumps(DIGEST), prompt_tokens=900, candidates_tokens=80))
    report = retention.retain(project, older_than=30, use_model=True)
    assert report["retained"][0]["by"] == "gemini"
    digest = _digest(project)
    assert digest["summary"] == DIGEST["summary"] and digest["goal"] == DIGEST["goal"]
    sent = "\n".join(json.dumps(r.body) for r in fake_gemini_api.requests)
    assert "Redis stream" in sent and SECRET not in sent  # the turns went, their secret did not
    used = gemini_digest.budget(project)
    assert used["calls"] == 1 and used["tokens"] == 980 and used["limit"] == 50_000
    assert retention.retention_stats(project)["digest_tokens_today"]["tokens"] == 980


def test_past_the_budget_no_call_is_made_and_the_local_digest_stands(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = _project(project_dir, digest_daily_tokens=200)  # below any transcript's estimate
    report = retention.retain(project, older_than=30, use_model=True)
    assert report["retained"][0]["by"] == "local" and fake_gemini_api.chat_requests() == []
    assert "Redis stream" in _digest(project)["summary"]  # the local, extractive digest
    assert gemini_digest.budget(project)["skipped"] == 1


def test_a_reply_that_is_not_the_json_asked_for_keeps_the_local_digest(
    project_dir: Path, gemini_env, fake_gemini_api: FakeGeminiAPI
):
    project = _project(project_dir)
    fake_gemini_api.push(Reply(text="Sure! Here is a summary: the team used Redis."))
    report = retention.retain(project, older_than=30, use_model=True)
    assert report["retained"][0]["by"] == "local" and len(fake_gemini_api.chat_requests()) == 1
    assert gemini_digest.budget(project)["calls"] == 1  # metered all the same
    assert "Decided" in _digest(project)["summary"]


def test_parse_reply_takes_only_the_fields_asked_for():
    assert gemini_digest.parse_reply("```json\n" + json.dumps(DIGEST) + "\n```")["result"] == "success"
    assert gemini_digest.parse_reply(json.dumps({**DIGEST, "result": "exploded"}))["result"] == "success"
    assert gemini_digest.parse_reply(json.dumps({"goal": "", "summary": "x"})) is None
    assert gemini_digest.parse_reply("[1, 2]") is None
    leaked = gemini_digest.parse_reply(json.dumps({**DIGEST, "summary": f"Token {SECRET} rotated."}))
    assert SECRET not in leaked["summary"]
