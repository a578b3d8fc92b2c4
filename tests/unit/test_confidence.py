"""Recall's confidence and its gate: every result carries a confidence in [0, 1]; a question whose
answer is not in memory is answered ``answerable: false`` with no results; the prompt hook injects
nothing then (real LanceDB, real model)."""

from __future__ import annotations

import json

import pytest

from contextware.core.errors import UsageError
from contextware.hosts.hooks.handlers import RELEVANT_HEADING, run_hook
from contextware.memory import records
from contextware.memory.recall import Hit, ask
from contextware.memory.recall.confidence import content_words, named_things, signals
from contextware.storage.candidate import Candidate
from contextware.storage.project import Project
from tests.support.hook_events import context_of, event

FACTS = [
    ("constraint", "Postgres 16 is the only database. Money is stored as integer cents in BIGINT columns."),
    ("convention", "Python code is formatted with ruff format at line length 100; never run black."),
    ("environment", "Celery uses Redis as its broker; Redis database 0 is the application cache."),
    ("constraint", "No production deploys on Fridays after 14:00, nor during month-end close."),
    ("decision", "Stripe is our only payment provider, using Payment Intents."),
    ("convention", "Run backend tests with uv run pytest -q -m 'not slow'."),
    ("environment", "Production runs on AWS ECS Fargate in eu-west-1, infrastructure in Terraform."),
    ("decision", "The web app authenticates with HttpOnly session cookies; JWTs were rejected."),
    ("convention", "Commit messages follow Conventional Commits with the Jira key at the end."),
    ("environment", "The frontend is React 18 with TypeScript and Vite; pnpm is the package manager."),
]
UNANSWERABLE = "which fonts does the marketing website use?"
ANSWERABLE = "can I ship to production on a Friday afternoon?"


GATE = 0.5  # this small memory's gate: what the defaults are worth is measured by bench/recall_quality.py


@pytest.fixture
def ledger(project: Project) -> Project:
    for kind, text in FACTS:
        records.save_fact(project, text, kind=kind)
    records.save_log(project, "We talked about deploy windows on Fridays.", session_id="s1", role="user")
    (project.data_dir / "config.json").write_text(
        json.dumps({"recall_min_confidence": GATE, "hook_min_confidence": GATE})
    )
    return Project.open(project.root)


@pytest.mark.slow
def test_every_result_carries_a_confidence_between_0_and_1(ledger: Project):
    out = ask(ledger, ANSWERABLE, min_confidence=0.0, limit=10)
    assert out["answerable"] is True and out["min_confidence"] == 0.0
    assert out["results"] and all(0.0 <= r["confidence"] <= 1.0 for r in out["results"])
    assert "Fridays" in out["results"][0]["text"]
    best = out["results"][0]["confidence"]
    assert best == max(r["confidence"] for r in out["results"])  # the answer is the surest
    logs = ask(ledger, ANSWERABLE, scope="logs", min_confidence=0.0)["results"]
    assert logs and 0.0 <= logs[0]["confidence"] <= 1.0


@pytest.mark.slow
def test_an_unanswerable_question_is_answered_answerable_false(ledger: Project):
    out = ask(ledger, UNANSWERABLE)
    assert out["answerable"] is False and out["results"] == [] and out["min_confidence"] == GATE
    # the gate off: the nearest memories come back, each with its (low) confidence
    ungated = ask(ledger, UNANSWERABLE, min_confidence=0)
    assert ungated["answerable"] is True and ungated["results"]
    assert max(r["confidence"] for r in ungated["results"]) < GATE
    # an answerable question passes the same gate
    assert ask(ledger, ANSWERABLE)["answerable"] is True


@pytest.mark.slow
def test_the_gate_comes_from_config_and_bad_values_are_refused(ledger: Project):
    (ledger.data_dir / "config.json").write_text(json.dumps({"recall_min_confidence": 0.999}))
    strict = Project.open(ledger.root)
    assert ask(strict, ANSWERABLE)["answerable"] is False
    assert ask(strict, ANSWERABLE, min_confidence=0.5)["answerable"] is True  # the call's value wins
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(UsageError) as err:
            ask(strict, ANSWERABLE, min_confidence=bad)
        assert err.value.code == "bad_min_confidence"
    (ledger.data_dir / "config.json").write_text(json.dumps({"recall_min_confidence": "x"}))
    with pytest.raises(UsageError, match=r"recall_min_confidence in .*config\.json"):
        ask(Project.open(ledger.root), ANSWERABLE)


@pytest.mark.slow
def test_the_prompt_hook_injects_nothing_when_nothing_is_sure_enough(ledger: Project):
    first = context_of(run_hook(event("BeforeAgent", ledger.root, prompt=UNANSWERABLE)), "BeforeAgent")
    assert "## Constraints" in first and RELEVANT_HEADING not in first  # a Gemini session's first: the briefing
    later = event("BeforeAgent", ledger.root, prompt=UNANSWERABLE, timestamp="2026-11-21T07:05:00.000Z")
    assert run_hook(later) == ""
    ctx = context_of(run_hook(event("BeforeAgent", ledger.root, prompt=ANSWERABLE)), "BeforeAgent")
    assert "No production deploys on Fridays" in ctx


def _hit(text: str, score: float, relevance: float, bm25: float = 0.0) -> Hit:
    return Hit(
        Candidate(
            row={"id": text, "text": text}, collection="facts", similarity=relevance, relevance=relevance, bm25=bm25
        ),
        score,
    )


def test_signals():
    assert content_words("How do we deploy the API to production?") == ["deploy", "api", "production"]
    hits = [_hit("Deploys go through the release pipeline.", 0.9, 0.6, 5.0), _hit("Redis is the cache.", 0.3, 0.2)]
    first, second = signals(hits, "how do we deploy?")
    assert first.margin == pytest.approx(0.6) and second.margin == pytest.approx(-0.6)
    assert first.agreement == 1.0 and second.agreement == 0.25  # 2nd by vector, absent from BM25
    assert first.unknown == 0.0 and first.unknown_name == 0.0


def test_gap_measures_how_far_a_hit_stands_out_of_the_runners_up():
    def hits(scores: list[float]) -> list[Hit]:
        return [_hit(f"row {i}", s, s) for i, s in enumerate(scores)]

    sharp = signals(hits([0.9, 0.3, 0.3, 0.3, 0.3, 0.3, 0.0]), "anything")
    flat = signals(hits([0.5, 0.49, 0.48, 0.47, 0.46, 0.45]), "anything")
    assert sharp[0].gap == pytest.approx(0.6)  # the mean of the 2nd to 6th best, not the 7th
    assert flat[0].gap == pytest.approx(0.03)
    assert sharp[1].gap == pytest.approx(0.0) and sharp[6].gap < 0
    assert signals(hits([0.4]), "anything")[0].gap == pytest.approx(0.4)  # no runners-up


def test_a_question_naming_something_no_memory_mentions_is_flagged():
    assert named_things("do we expose a GraphQL API anywhere?") == ["graphql", "api"]
    assert named_things("Which S3 bucket holds receipts, and is RDS encrypted?") == ["s3", "rds"]
    assert named_things("what's the command to start Storybook?") == ["storybook"]
    assert named_things("how do I run the tests on my machine?") == []  # the first word is no name
    rows = [
        _hit("The public API is REST over FastAPI, served behind an ALB.", 0.5, 0.5),
        _hit("Containers run on Docker; images are built in CI.", 0.4, 0.4),
    ]
    assert signals(rows, "do we expose a GraphQL API anywhere?")[0].unknown_name == 1.0
    assert signals(rows, "is the FastAPI app behind the ALB?")[0].unknown_name == 0.0
    # a thesaurus relative is not the thing itself: Docker says nothing about Kubernetes
    assert signals(rows, "which version of Kubernetes do we run?")[0].unknown_name == 1.0
