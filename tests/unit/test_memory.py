"""Saving, reading, fixing and deleting memories through the package API (real LanceDB, real model)."""

from __future__ import annotations

import os

import pytest

from contextware.core.errors import ModelMismatchError, NotFoundError, UsageError
from contextware.core.settings import Settings
from contextware.memory import edits, maintenance, records
from contextware.memory.recall import ask


def test_save_fact_then_recall_it(project):
    out = records.save_fact(
        project, "We use ruff format with line length 100; never black.", kind="convention", topics="lint,format"
    )
    assert out["collection"] == "facts" and out["id"].startswith("fact-") and out["written"] == 1
    got = ask(project, "which formatter and line length do we use?")
    assert got["results"][0]["id"] == out["id"]
    assert got["results"][0]["kind"] == "convention" and got["results"][0]["topics"] == ["lint", "format"]
    assert (project.data_dir / ".gitignore").read_text().strip().endswith("*")


def test_exact_duplicate_writes_nothing(project):
    first = records.save_fact(project, "Deploys go out through GitHub Actions only.")
    again = records.save_fact(project, "  deploys GO out through   github actions only. ")
    assert again["duplicate_of"] == first["id"] and again["written"] == 0
    assert records.list_records(project, "facts")["total"] == 1


def test_near_duplicate_is_saved_and_listed_as_similar(project):
    first = records.save_fact(project, "Run the unit tests with pytest -n auto before every push.")
    second = records.save_fact(project, "Before every push, run the unit tests using pytest -n auto.")
    assert second["id"] != first["id"] and second["written"] == 1
    assert [s["id"] for s in second["similar"]] == [first["id"]]
    assert 0.8 <= second["similar"][0]["score"] <= 1.0


def test_secrets_are_redacted_before_storage(project):
    text = (
        "Staging DB is postgres://app:hunter2secret@db.internal:5432/app and the CI token is "
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB; AWS key AKIAABCDEFGHIJKLMNOP."
    )
    out = records.save_fact(project, text, kind="environment")
    assert out["redacted"] == {"url_password": 1, "github_token": 1, "aws_access_key": 1}
    stored = records.get(project, out["id"])["record"]["text"]
    for secret in ("hunter2secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "AKIAABCDEFGHIJKLMNOP"):
        assert secret not in stored
    assert "postgres://app:[REDACTED:url_password]@db.internal" in stored


def test_supersede_hides_old_fact_and_keeps_it_for_audit(project):
    old = records.save_fact(project, "We format Python code with black.", kind="decision", topics="format")
    new = records.save_fact(
        project,
        "We format Python code with ruff format, not black.",
        kind="decision",
        topics="format",
        supersedes=old["id"],
    )
    assert new["superseded"] == old["id"]
    old_row = records.get(project, old["id"])["record"]
    assert old_row["status"] == "superseded" and old_row["superseded_by"] == new["id"]
    ids = [r["id"] for r in ask(project, "which tool formats python code?")["results"]]
    assert ids == [new["id"]]
    both = [r["id"] for r in ask(project, "which tool formats python code? black?", include_superseded=True)["results"]]
    assert both.index(new["id"]) < both.index(old["id"])


def test_supersede_errors_write_nothing(project):
    a = records.save_fact(project, "Use Node 18.")
    b = records.save_fact(project, "Use Node 20.", supersedes=a["id"])
    with pytest.raises(UsageError, match="already superseded"):
        records.save_fact(project, "Use Node 22.", supersedes=a["id"])
    with pytest.raises(NotFoundError):
        records.save_fact(project, "Use Node 22.", supersedes="fact-000000000000")
    with pytest.raises(UsageError, match="fact id"):
        records.save_fact(project, "Use Node 22.", supersedes="episode-000000000000")
    assert records.list_records(project, "facts")["total"] == 2
    assert records.get(project, b["id"])["record"]["status"] == "active"


def test_deleting_the_superseding_fact_reactivates_the_old_one(project):
    a = records.save_fact(project, "Staging runs on Heroku.")
    b = records.save_fact(project, "Staging runs on Fly.io.", supersedes=a["id"])
    out = edits.delete(project, b["id"])
    assert out["reactivated"] == a["id"]
    assert records.get(project, a["id"])["record"]["status"] == "active"
    with pytest.raises(NotFoundError):
        records.get(project, b["id"])


@pytest.mark.slow
def test_episode_and_log(project):
    ep = records.save_episode(
        project,
        "pytest-xdist deadlocked on the shared Postgres fixture; --dist loadfile fixed it.",
        goal="Run the test suite in parallel",
        result="partial",
        category="test",
        topics="pytest",
    )
    assert ep["collection"] == "episodes"
    row = records.get(project, ep["id"])["record"]
    assert (row["goal"], row["result"], row["category"]) == ("Run the test suite in parallel", "partial", "test")
    long_text = " ".join(f"Sentence number {i} about the migration plan." for i in range(200))
    log = records.save_log(project, long_text, session_id="sess-1", role="user")
    assert log["chunks"] > 1 and len(log["ids"]) == log["chunks"]
    rows = records.list_records(project, "logs", limit=100)["records"]
    assert sorted(r["chunk_index"] for r in rows) == list(range(log["chunks"]))
    assert " ".join(r["text"] for r in sorted(rows, key=lambda r: r["chunk_index"])) == long_text
    assert records.save_log(project, long_text, session_id="sess-1", role="user")["duplicate_of"] == log["ids"][0]


def test_update_reembeds_and_changes_fields(project):
    out = records.save_fact(project, "The API listens on port 8000.", kind="environment")
    edits.update(project, out["id"], text="The API listens on port 9090 behind nginx.", topics="network")
    row = records.get(project, out["id"])["record"]
    assert row["text"].startswith("The API listens on port 9090") and row["topics"] == ["network"]
    assert ask(project, "what port does the api use? 9090")["results"][0]["id"] == out["id"]
    with pytest.raises(UsageError, match="cannot be changed"):
        edits.update(project, out["id"], goal="x")
    with pytest.raises(UsageError, match="Nothing to update"):
        edits.update(project, out["id"])


@pytest.mark.slow
def test_degraded_save_then_reembed(project, monkeypatch):
    monkeypatch.setenv("CONTEXTWARE_DISABLE_EMBEDDINGS", "1")
    from contextware.storage import embeddings

    project.settings = Settings.from_env(os.environ)  # what a new command would read
    embeddings._CACHE.clear()
    out = records.save_fact(project, "Feature flags live in LaunchDarkly.")
    assert "disabled" in out["degraded"] and out["written"] == 1
    got = ask(project, "where do feature flags live?")
    assert got["degraded"] and got["results"][0]["id"] == out["id"]
    assert maintenance.stats(project)["tables"]["facts"]["missing_vectors"] == 1
    monkeypatch.delenv("CONTEXTWARE_DISABLE_EMBEDDINGS")
    project.settings = Settings.from_env(os.environ)
    embeddings._CACHE.clear()
    project._embedder = None
    assert maintenance.reembed(project)["tables"]["facts"]["reembedded"] == 1
    assert maintenance.stats(project)["tables"]["facts"]["missing_vectors"] == 0
    assert ask(project, "which service manages our feature toggles?")["results"][0]["id"] == out["id"]


@pytest.mark.slow
def test_model_mismatch_is_a_clear_error_naming_reembed(project, monkeypatch):
    records.save_fact(project, "The default branch is main.")
    from contextware.storage import embeddings

    monkeypatch.setenv("CONTEXTWARE_EMBED_MODEL", "BAAI/bge-small-en-v1.5")
    project.settings = Settings.from_env(os.environ)
    embeddings._CACHE.clear()
    project._embedder = None
    with pytest.raises(ModelMismatchError, match="reembed"):
        ask(project, "default branch?")
    with pytest.raises(ModelMismatchError, match="reembed"):
        records.save_fact(project, "Releases are tagged vX.Y.Z.")
    embeddings._CACHE.clear()


@pytest.mark.slow
def test_stats_and_compact(project):
    for i in range(5):
        records.save_fact(project, f"Service {i} owns the billing queue number {i}.")
    s = maintenance.stats(project)
    assert s["tables"]["facts"]["rows"] == 5 and s["tables"]["facts"]["model"] == project.embedder.model_id
    assert s["disk_bytes"] > 0 and s["last_write"].endswith("Z")
    out = maintenance.compact(project)
    facts = next(t for t in out["tables"] if t["table"] == "facts")
    assert facts["fragments_after"] == 1
