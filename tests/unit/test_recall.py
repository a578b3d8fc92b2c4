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


@pytest.mark.slow
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


@pytest.mark.slow
def test_explain_names_ranks_scores_and_the_side_of_the_gate(project):
    """``recall --explain``: the same answer, plus for every candidate its cosine and BM25 rank and
    score, fused score, confidence with signals and the number that decided it."""
    from contextware.memory import records
    from contextware.memory.recall import ask

    ids = [
        records.save(project, "fact", text)["id"]
        for text in ("We run the tests with pytest -n 2.", "Deploys go to Fly.io.", "Prefer ruff over black.")
    ]
    plain = ask(project, "how do we run the tests?")
    why = ask(project, "how do we run the tests?", explain=True)
    assert "explanation" not in plain
    assert {k: v for k, v in why.items() if k != "explanation"} == plain
    e = why["explanation"]
    assert e["verdict"].startswith("Answered: the best confidence") and e["total_candidates"] == 3
    first = e["candidates"][0]
    assert first["id"] == ids[0] == why["results"][0]["id"] and first["shown"] == 1
    assert first["bm25_rank"] == 1 and first["cosine_rank"] is not None and first["bm25"] > 0
    assert set(first["signals"]) == {"relevance", "agreement", "margin", "gap", "unknown", "unknown_name"}
    assert first["decided_by"] == f"shown at 1: fused score {first['score']:.3f}, confidence {first['confidence']:.3f}"
    limited = ask(project, "how do we run the tests?", explain=True, limit=1)["explanation"]["candidates"]
    assert [c["shown"] for c in limited] == [1, None, None]
    assert all(c["decided_by"].startswith("ranked ") and "past the limit of 1" in c["decided_by"] for c in limited[1:])
    nothing = ask(project, "what is the capital of Peru?", explain=True)
    assert nothing["results"] == [] and nothing["explanation"]["verdict"].startswith("Nothing answered")
    best_held = nothing["explanation"]["candidates"][0]
    assert best_held["shown"] is None and any(ch.isdigit() for ch in best_held["decided_by"])


def test_an_unlinked_newer_fact_that_restates_an_older_one_replaces_it_in_the_list(project, tmp_path):
    """Issue 30: saved later without naming the fact it replaces, a deprecation note ranked below
    the older fact or beside it; now it takes the older one's place, which leaves the default list
    and stays reachable with include_superseded.  Their cosine is low (~0.55): the flag they both
    name (``--production``) ties them."""
    from contextware.memory.team.memfile import render
    from contextware.memory.team.share import import_memory

    rows = [
        {
            "id": "fact-00000000000a",
            "kind": "convention",
            "text": "The deploy image installs with npm install --production.",
            "created_at": "2020-01-15T12:00:00Z",
        },
        {
            "id": "fact-00000000000b",
            "kind": "convention",
            "text": "npm 7 introduced --omit=dev; --production is deprecated and only kept as an alias.",
            "created_at": "2020-10-13T12:00:00Z",
        },
        {
            "id": "fact-00000000000c",
            "kind": "note",
            "text": "npm ci installs exactly the lockfile and wipes node_modules first.",
            "created_at": "2024-07-01T12:00:00Z",
        },
        {
            "id": "fact-00000000000d",
            "kind": "note",
            "text": "pytest 7.0 deprecated pytest.warns(None); use warnings.catch_warnings.",
            "created_at": "2022-02-03T12:00:00Z",
        },
    ]
    import_memory(project, render(rows), source=str(tmp_path / "m.jsonl"))
    question = "how do we leave out devDependencies in the deploy image?"
    ids = [r["id"] for r in ask(project, question, scope="facts", min_confidence=0.0)["results"]]
    assert ids[0] == "fact-00000000000b" and "fact-00000000000a" not in ids
    assert "fact-00000000000d" in ids  # a deprecation note about something else stays
    every = [
        r["id"] for r in ask(project, question, scope="facts", min_confidence=0.0, include_superseded=True)["results"]
    ]
    assert every.index("fact-00000000000b") < every.index("fact-00000000000a")


def test_the_newer_fact_in_an_older_ones_place_keeps_its_confidence_and_reaches_the_hook(project, tmp_path):
    """A newer fact that takes a restated older one's place answers what the older answered: it
    carries the older one's confidence (it showed near zero, under the gate, though it answers), and
    the prompt hook injects it, not the outdated fact the hook's margin and share used to keep."""
    from contextware.memory.recall.prompt import for_prompt
    from contextware.memory.team.memfile import render
    from contextware.memory.team.share import import_memory

    texts = (
        ("docker-compose up starts the local services stack: database, cache and the API.", "2019-05-02"),
        (
            "Compose V1 (docker-compose) reached end of life in July 2023; run the V2 plugin as docker compose up -d.",
            "2023-08-01",
        ),
        ("Inside a container localhost is the container; use host.docker.internal for the host.", "2021-03-01"),
        ("docker system prune -a reclaims the space of unused images and stopped containers.", "2022-01-10"),
    )
    rows = [
        {"id": f"fact-0000000001{i}a", "kind": "convention", "text": text, "created_at": f"{day}T12:00:00Z"}
        for i, (text, day) in enumerate(texts)
    ]
    older, newer = rows[0]["id"], rows[1]["id"]
    import_memory(project, render(rows), source=str(tmp_path / "m.jsonl"))
    question = "which command starts the local services stack?"
    every = ask(project, question, scope="facts", min_confidence=0.0, include_superseded=True)["results"]
    conf = {r["id"]: r["confidence"] for r in every}
    assert [r["id"] for r in every].index(newer) < [r["id"] for r in every].index(older)
    shown = ask(project, question, scope="facts", min_confidence=0.0)["results"]
    assert shown[0]["id"] == newer and older not in [r["id"] for r in shown]
    assert shown[0]["confidence"] == conf[older] == max(conf.values())
    why = ask(project, question, scope="facts", min_confidence=0.0, explain=True)["explanation"]["candidates"][0]
    assert why["id"] == newer and f"taken from the older fact {older}" in why["decided_by"]
    injected = [r["id"] for r in for_prompt(project, question, gate=0.0).results]
    assert newer in injected and older not in injected
