"""A long-lived process (the resident service answering SessionStart hooks) reuses the briefing's
fact and episode sections while their tables are unchanged, and never shows a stale one: every
save, supersession, deletion or threshold change is in the next briefing."""

from __future__ import annotations

import json

import pytest

from contextware.memory import edits, records
from contextware.memory.briefing import session_context
from contextware.storage.project import Project, forget_open_projects


def _brief(project: Project) -> dict:
    return session_context(Project.open(project.root), 4000)


@pytest.mark.slow
def test_the_next_briefing_sees_every_change_and_reuses_nothing_stale(project: Project, monkeypatch):
    # As the service runs (keep_projects_open): one Project, one connection, across briefings;
    # monkeypatch puts back "no cache" afterwards, so later tests open their projects afresh.
    monkeypatch.setattr("contextware.storage.project._open_projects", {})
    try:
        project = Project.open(project.root)
        old = records.save_fact(project, "Deploy on Fridays.", kind="constraint")
        records.save_episode(
            project, "Timed out on the locked table.", goal="Run the invoice migration", result="failure", category="db"
        )
        first = _brief(project)
        assert [f["text"] for f in first["constraints"]] == ["Deploy on Fridays."]
        first["constraints"][0]["text"] = "changed by a caller"  # what a caller does with its copy stays its own
        again = _brief(project)
        assert [f["text"] for f in again["constraints"]] == ["Deploy on Fridays."]
        assert json.dumps(again["failures"]) == json.dumps(_brief(project)["failures"])

        records.save_fact(project, "Never deploy on Fridays.", kind="constraint", supersedes=old["id"])
        assert [f["text"] for f in _brief(project)["constraints"]] == ["Never deploy on Fridays."]
        records.save_episode(
            project,
            "Ran it at night with a lock timeout; it passed.",
            goal="Run the invoice migration",
            result="success",
            category="db",
        )
        resolved = _brief(project)
        assert "failures" not in resolved and resolved["recent_episodes"][0]["goal"] == "Run the invoice migration"

        fact = records.save_fact(project, "Tests run with pytest -q.", kind="convention")
        assert [f["text"] for f in _brief(project)["conventions"]] == ["Tests run with pytest -q."]
        edits.delete(project, fact["id"])
        assert "conventions" not in _brief(project)

        records.save_fact(project, "Reports use plain SQL.", kind="decision")
        records.save_fact(project, "Reports use plain SQL queries.", kind="decision")
        assert len(_brief(project)["decisions"]) == 1  # near-duplicates collapse at the default threshold
        (project.data_dir / "config.json").write_text('{"similar_threshold": 0.9999}')
        assert len(_brief(project)["decisions"]) == 2  # a new threshold: computed again
    finally:
        forget_open_projects()
