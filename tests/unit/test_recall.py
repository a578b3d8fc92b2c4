"""Recall's filters, modes, floor and ordering (real storage and model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from contextware.memory import records
from contextware.memory.recall import DEFAULT_PARAMS, Hit, ask
from contextware.memory.recall.fusion import order
from contextware.storage.candidate import Candidate

SUMMARY_CHARS = DEFAULT_PARAMS.summary_chars


@pytest.fixture
def filled(project):
    ids = {
        "lint": records.save_fact(project, "Run ruff check before every commit.", kind="convention", topics="lint")[
            "id"
        ],
        "db": records.save_fact(project, "Postgres 16 is the only supported database.", kind="constraint", topics="db")[
            "id"
        ],
        "deploy_ok": records.save_episode(
            project,
            "Deploying with fly deploy worked after raising the memory limit.",
            goal="Deploy the API",
            result="success",
            category="deploy",
            topics="deploy",
        )["id"],
        "deploy_bad": records.save_episode(
            project,
            "Deploy failed: the release migration timed out on a locked table.",
            goal="Deploy the API",
            result="failure",
            category="deploy",
            topics="deploy",
        )["id"],
    }
    return project, ids


def _ids(out: dict) -> list[str]:
    return [r["id"] for r in out["results"]]


def test_filters_narrow_the_search(filled):
    project, ids = filled
    assert _ids(ask(project, "how did deploying the api go?", result="failure")) == [ids["deploy_bad"]]
    assert set(_ids(ask(project, "how did deploying the api go?", category="deploy"))) == {
        ids["deploy_ok"],
        ids["deploy_bad"],
    }
    assert _ids(ask(project, "what must I run before committing, and which database?", kind="constraint")) == [
        ids["db"]
    ]
    assert _ids(ask(project, "what must I run before committing, and which database?", topic="lint")) == [ids["lint"]]
    episodes = ask(project, "deploy", scope="episodes")["results"]
    assert {ids["deploy_ok"], ids["deploy_bad"]} <= {r["id"] for r in episodes}
    assert all(r["collection"] == "episodes" for r in episodes)
    assert _ids(ask(project, "which database?", since="1d"))[0] == ids["db"]
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d")
    assert ask(project, "which database?", since=tomorrow)["results"] == []


def test_an_off_topic_question_returns_nothing(filled):
    project, _ = filled
    assert ask(project, "what is a good recipe for banana bread?")["results"] == []


def test_summary_mode_shortens_long_texts_and_exact_mode_does_not(project):
    body = "The nightly export job writes CSV files to the reports bucket. " * 20
    out = records.save_log(project, body, session_id="s1", role="agent")
    assert out["chunks"] == 1
    short = ask(project, "where does the nightly export write its files?", scope="logs")["results"][0]["text"]
    full = ask(project, "where does the nightly export write its files?", scope="logs", mode="exact")["results"][0][
        "text"
    ]
    assert len(short) <= SUMMARY_CHARS + 1 and short.endswith("…")
    assert full == body.strip()


def _hit(rid: str, score: float, age_days: int, supersedes: str | None = None) -> Hit:
    created = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=100 - age_days)
    row = {"id": rid, "created_at": created, "supersedes": supersedes}
    return Hit(Candidate(row=row, collection="facts", similarity=None, relevance=None), score)


def test_recency_breaks_ties_and_a_superseding_fact_comes_first():
    tie = DEFAULT_PARAMS.fusion.tie
    ordered = order([_hit("old", 0.700, 30), _hit("new", 0.701, 1), _hit("best", 0.9, 50)], tie)
    assert [h.row["id"] for h in ordered] == ["best", "new", "old"]
    ordered = order(
        [_hit("replaced", 0.9, 40), _hit("other", 0.8, 5), _hit("current", 0.6, 1, supersedes="replaced")], tie
    )
    assert [h.row["id"] for h in ordered] == ["current", "replaced", "other"]
