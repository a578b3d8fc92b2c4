"""context.py as a process: an empty project, a bad budget and the JSON briefing."""

from __future__ import annotations

from pathlib import Path

from contextware.memory.briefing import session_context
from contextware.storage.project import Project


def test_empty_project_and_bad_budget(project: Project, script):
    ctx = session_context(project)
    assert set(ctx) == {"project", "budget_tokens", "tokens", "truncated"}
    assert not (project.data_dir / "lancedb").exists()  # briefing writes nothing
    out = script("context", "--budget-tokens", "5")
    assert out.returncode == 2 and out.json["error"]["code"] == "bad_budget"
    text = script("context", "--format", "text")
    assert text.returncode == 0 and text.stdout.startswith("<contextware-memory>\n")  # fenced as reference data
    assert "\n# Project memory:" in text.stdout


def test_context_script_json(briefed: Project, script):
    out = script("context", "--budget-tokens", "300", cwd=Path(briefed.root))
    data = out.json
    assert data["ok"] is True and data["tokens"] <= 300 and data["constraints"]
