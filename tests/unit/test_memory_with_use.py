"""Memory gets no worse with use (issue 22): captured turns that repeat a question never bury the
fact that answers it, old memory stays recallable, ``limit`` is honoured, repeats come back once,
and a filter that cannot apply is a usage error (real LanceDB, the real model)."""

from __future__ import annotations

import json

import pytest

from contextware.errors import FieldError
from contextware.memory import records
from contextware.memory.exchange import import_memory
from contextware.memory.recall import ask

FRIDAY = "Never deploy on Fridays: releases go out Monday to Thursday before 15:00, after the change review."
NOISE = [
    "The billing service stores amounts as integer cents.",
    "CI runs ruff, mypy and the fast tests on every push.",
    "Feature flags live in config/flags.yaml and are read at start-up.",
    "The staging database is refreshed from production every Sunday night.",
]


def _ids(out: dict) -> list[str]:
    return [r["id"] for r in out["results"]]


def test_a_question_asked_again_and_again_does_not_bury_the_fact_that_answers_it(project):
    fact = records.save_fact(project, FRIDAY, kind="constraint")["id"]
    for text in NOISE:
        records.save_fact(project, text, kind="decision")
    asked = ["can we deploy on friday?", "Can we deploy on Friday?", "can we deploy on friday afternoon?"]
    for i, q in enumerate(asked * 2):  # asked five-plus times over several sessions
        records.save_log(project, q, session_id=f"s{i}", role="user")
    out = ask(project, "can we deploy on friday?", limit=8)
    assert fact in _ids(out)[:3]
    assert out["results"][0]["id"] == fact  # the curated answer first, the echoes after it
    logs = [r for r in out["results"] if r["collection"] == "logs"]
    texts = [r["text"].lower() for r in logs]
    assert len(texts) == len(set(texts))  # each question once ...
    assert any(r.get("repeats", 0) >= 1 for r in logs)  # ... counting how often it was asked


def test_old_conversation_is_still_recallable(project, tmp_path):
    lines = [
        {
            "id": f"log-{i:012x}",
            "session_id": "old-session",
            "role": "agent",
            "text": text,
            "created_at": "2025-06-0%dT10:00:00Z" % (i + 1),
        }
        for i, text in enumerate(
            [
                "We moved the nightly export to S3 bucket acme-exports, written by the export-runner job.",
                "The flaky checkout test was a race in the payment mock; we pinned the mock's clock.",
                "Redis 7 replaced Memcached as the session cache in the spring.",
            ]
        )
    ]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_memory(project, path.read_text(), source=str(path))
    out = ask(project, "where does the nightly export write its files?")
    assert out["answerable"] is True
    assert out["results"][0]["id"] == "log-000000000000"
    assert out["results"][0]["created_at"].startswith("2025-06-01")  # its age is shown, not held against it


def test_limit_is_honoured_when_that_many_memories_clear_the_floor(project):
    for i in range(12):
        records.save_fact(project, f"Deploy step {i}: the deploy pipeline runs stage {i} of the release.", kind="convention")
    out = ask(project, "what are the steps of the deploy pipeline?", limit=10, min_confidence=0.0)
    assert len(out["results"]) == 10


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"scope": "logs", "topic": "deploy"}, "topic"),
        ({"scope": "logs", "session": "payments"}, "session"),
        ({"scope": "facts", "result": "failure"}, "result"),
        ({"scope": "episodes", "kind": "constraint"}, "kind"),
        ({"scope": "all", "kind": "constraint", "result": "failure"}, "scope"),
    ],
)
def test_a_filter_that_cannot_apply_is_a_usage_error(project, inputs, field):
    with pytest.raises(FieldError) as err:
        ask(project, "how do we deploy?", **inputs)
    assert err.value.code == "filter_not_applicable" and err.value.field == field
    assert err.value.exit_code == 2
