"""Memory gets no worse with use (issue 22): captured turns that repeat a question never bury the
fact that answers it, old memory stays recallable, ``limit`` is honoured, repeats come back once,
and a filter that cannot apply is a usage error (real LanceDB, the real model)."""

from __future__ import annotations

import json

import pytest

from contextware.core.errors import FieldError
from contextware.memory import records
from contextware.memory.recall import ask
from contextware.memory.team.share import import_memory

FRIDAY = "Never deploy on Fridays: releases go out Monday to Thursday before 15:00, after the change review."
NOISE = [
    "The billing service stores amounts as integer cents.",
    "CI runs ruff, mypy and the fast tests on every push.",
    "Feature flags live in config/flags.yaml and are read at start-up.",
    "The staging database is refreshed from production every Sunday night.",
]


def _ids(out: dict) -> list[str]:
    return [r["id"] for r in out["results"]]


@pytest.mark.slow
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


@pytest.mark.slow
def test_old_conversation_is_still_recallable(project, tmp_path):
    lines = [
        {
            "id": f"log-{i:012x}",
            "session_id": "old-session",
            "role": "agent",
            "text": text,
            "created_at": f"2025-06-0{i + 1}T10:00:00Z",
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


@pytest.mark.slow
def test_limit_is_honoured_when_that_many_memories_clear_the_floor(project):
    for i in range(12):
        records.save_fact(
            project, f"Deploy step {i}: the deploy pipeline runs stage {i} of the release.", kind="convention"
        )
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


@pytest.mark.slow
def test_a_captured_answer_carries_the_question_it_answers(project):
    from contextware.hosts.hooks.handlers import run_hook
    from tests.support.hook_events import event

    question = "Which port does the payments API listen on in staging?"
    answer = "It listens on 8443 behind the internal load balancer; the health check is /healthz."
    (project.root / ".git").mkdir()  # a repository: turns are captured from its first one
    run_hook(event("AfterAgent", project.root, prompt=question, prompt_response=answer))
    out = ask(project, "what port is the payments api on in staging?", scope="logs", mode="exact")
    agent = next(r for r in out["results"] if r["role"] == "agent")
    assert agent["text"] == answer and agent["prompt"] == question  # one row holds the exchange
    assert out["results"][0]["id"] == agent["id"]  # the answer outranks the question's own echo
    user = next(r for r in out["results"] if r["role"] == "user")
    assert "prompt" not in user


@pytest.mark.slow
def test_a_session_of_several_turns_gets_one_digest_episode(project):
    from contextware.hosts.hooks.handlers import run_hook
    from tests.support.hook_events import event

    (project.root / ".git").mkdir()
    turns = [
        ("How do we run the integration tests?", "Run uv run pytest -m slow; I added a make target for it."),
        ("The S3 test fails with a connection error.", "The error was moto not running; I fixed the fixture."),
        ("Let's use Postgres 16 for the new service.", "Agreed: we will use Postgres 16 from now on."),
    ]
    for i, (q, a) in enumerate(turns):
        run_hook(event("AfterAgent", project.root, prompt=q, prompt_response=a))
        digests = [r for r in records.list_records(project, "episodes")["records"] if r["source"] == "digest:sess_1"]
        assert len(digests) == (1 if i >= 2 else 0)  # none for a short session, then one, rewritten
    digest = digests[0]
    assert digest["category"] == "session" and digest["result"] == "partial"  # things done, one failure
    assert (
        digest["summary"].startswith("Decided: ") and "Asked: How do we run the integration tests?" in digest["summary"]
    )
    assert "Postgres 16" in digest["summary"] and "connection error" in digest["summary"]
    out = ask(project, "what did we decide about the database for the new service?", scope="episodes", min_confidence=0)
    assert out["results"] and out["results"][0]["id"] == digest["id"]


def test_the_question_an_answer_carries_is_cleaned_and_redacted(project):
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    out = records.save_log(
        project, "Done.", session_id="s1", role="agent", prompt=f"\x1b[31muse the key {key}\x1b[0m please"
    )
    row = records.get(project, out["ids"][0])["record"]
    assert (
        row["prompt"].startswith("use the key [REDACTED") and "\x1b" not in row["prompt"] and key not in row["prompt"]
    )


@pytest.mark.slow
def test_a_newer_fact_that_restates_an_older_one_comes_first_without_a_link(project):
    """Saved without --supersedes (the agent did not know of the old fact), the replacing fact still
    ranks above the one it restates; the old one leaves the default list and stays, below it, with
    include_superseded (issue 30).  Unrelated facts keep their order."""
    old = records.save_fact(project, "Outgoing HTTP calls from the backend use requests with a 10 s timeout.")["id"]
    records.save_fact(project, "Deploys go through fly deploy from the main branch.")
    new = records.save_fact(
        project,
        "Outgoing HTTP calls from the backend use httpx (the shared client in ledgerly/http.py) with a 5 s "
        "connect and 30 s read timeout; requests was removed from the dependencies.",
    )["id"]
    for question in ("which library do we use for outgoing HTTP calls?", "what timeout do backend HTTP requests use?"):
        every = [r["id"] for r in ask(project, question, min_confidence=0.0, include_superseded=True)["results"]]
        assert every.index(new) < every.index(old), (question, every)
        got = [r["id"] for r in ask(project, question, min_confidence=0.0)["results"]]
        assert new in got and old not in got, (question, got)
    got = [r["id"] for r in ask(project, "how do we deploy?", min_confidence=0.0)["results"]]
    assert old not in got[:1] and new not in got[:1]


@pytest.mark.slow
def test_a_fact_is_not_crowded_out_by_many_turns_that_only_resemble_the_question(project):
    """160 captured turns about formatting ("Fix coding style.", "Reformat the build files") are each
    as close to the question as the fact that answers it; judged against their own noise they no
    longer push it out (the weights before did: shown below on the same store)."""
    from dataclasses import replace
    from datetime import timedelta

    from contextware.core.text import iso, utcnow
    from contextware.memory.recall import DEFAULT_PARAMS, parse_query, recall
    from contextware.memory.team.memfile import render

    fact = records.save_fact(
        project, "Python code is formatted with `ruff format` at line length 100. Never run black on the repo."
    )["id"]
    subjects = [
        "Fix coding style.", "more coding style fixes", "[docs] Some formatting fixes", "[test] Fix output format",
        "[coretext] Fix formatting", "Minor trace format fixup", "[varc] Change format slightly",
        "Fix style in the python scripts", "Reformat the build files", "[py] minor, remove unused import",
        "Run the formatter on src", "coding style: whitespace", "Fix indentation", "[meson] format meson.build",
        "style fixes before commit", "Revert formatting change",
    ]  # fmt: skip
    when = utcnow() - timedelta(days=300)
    turns = [
        {
            "id": f"log-{0x900 + i:012x}",
            "session_id": f"s{i // 8}",
            "role": "user",
            "text": f"{subjects[i % len(subjects)]} ({i})",
            "created_at": iso(when + timedelta(hours=i)),
        }
        for i in range(160)
    ]
    import_memory(project, render(turns), source="history.jsonl")
    query = parse_query("what code formatter should I run before committing?", limit=5, min_confidence=0)
    assert fact in [r["id"] for r in recall(project, query).results][:3]
    from contextware.memory.recall.params import RankerWeights

    # the turns scored by their cosine and full-text score alone, not against their own noise
    alone = RankerWeights(cosine=0.9, bm25=0.9)
    before = replace(DEFAULT_PARAMS, ranker=replace(DEFAULT_PARAMS.ranker, logs=alone, turn_baseline=0.0))
    assert fact not in [r["id"] for r in recall(project, query, before).results][:3]


@pytest.mark.slow
@pytest.mark.parametrize(
    "asked_again",
    [
        "again, what do we push built images to",
        "remind me where built images get pushed",
        "so what was the image registry",
    ],
)
def test_a_question_asked_again_without_a_question_mark_is_an_echo(project, asked_again):
    """Issue 30: "again, what do we push built images to" ranked first, confidence 0.92, above the
    fact that answers it (only "?" and a leading question word made a turn an echo)."""
    fact = records.save_fact(
        project, "CI pushes every built container image to ghcr.io/acme, tagged with the commit sha.", kind="convention"
    )["id"]
    for text in NOISE:
        records.save_fact(project, text, kind="decision")
    for i in range(3):
        records.save_log(project, asked_again, session_id=f"s{i}", role="user")
    out = ask(project, asked_again, limit=8, min_confidence=0.0)
    assert out["results"][0]["id"] == fact
    kinds = [r["collection"] for r in out["results"]]
    assert kinds == sorted(kinds, key=lambda c: c == "logs")  # the echo after every memory that may answer


@pytest.mark.slow
def test_a_long_turn_answers_by_its_best_part_leaving_room_for_other_turns(project):
    """A long agent answer is stored in parts (log_chunk_chars, 1,500 by default); each part is
    about the question, but the results show one of them and then other turns, not five parts."""
    steps = " ".join(
        f"In stage {i} the deploy pipeline builds the container image, pushes it to registry {i}, runs the "
        f"migrations against staging {i}, waits for the health checks of pod group {i} and then shifts "
        f"{i * 5} percent of the traffic to the new release while the error budget holds."
        for i in range(1, 13)
    )
    long_turn = records.save_log(project, steps, session_id="long", role="agent")
    assert long_turn["chunks"] >= 3
    other = records.save_log(
        project,
        "Deploys to production need a green staging run and the release manager's approval first.",
        session_id="short",
        role="agent",
    )["ids"][0]
    out = ask(project, "how does the deploy pipeline roll out a release?", scope="logs", limit=5, explain=True)
    ids = _ids(out)
    assert sum(i in long_turn["ids"] for i in ids) == 1
    assert other in ids
    held = [c for c in out["explanation"]["candidates"] if "another part of the same turn" in c["decided_by"]]
    assert len(held) == long_turn["chunks"] - 1
