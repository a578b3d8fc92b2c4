"""context.py: the one-call briefing, its priorities and its token budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl
from contextware.memory import kvstore, records
from contextware.memory.briefing import session_context
from contextware.storage.project import Project


@pytest.fixture
def briefed(project: Project) -> Project:
    root = project.root
    (root / "pkg").mkdir()
    (root / "pkg" / "ledger.py").write_text(
        '"""The ledger: posting and balancing entries."""\n\ndef post(entry):\n    pass\n'
    )
    for name in ("api", "reports", "billing"):
        (root / "pkg" / f"{name}.py").write_text(
            f'"""The {name} module."""\nfrom pkg import ledger\n\nledger.post(1)\n'
        )
    crawl(project, summarizer="local")
    records.save_fact(project, "Never write to the production database from a migration test.", kind="constraint")
    records.save_fact(project, "Prefer plain SQL over the ORM for reports.", kind="preference")
    records.save_fact(project, "The ledger uses integer cents.", kind="note")
    old = records.save_fact(project, "Deploy on Fridays.", kind="constraint")
    records.save_fact(project, "Never deploy on Fridays.", kind="constraint", supersedes=old["id"])
    for i in range(12):
        records.save_episode(
            project,
            f"Attempt {i} failed because the fixture leaked state; isolate it per test.",
            goal=f"Fix flaky test {i}",
            result="failure",
            category="test",
        )
    records.save_episode(project, "Worked first time.", goal="Bump version", result="success", category="build")
    records.save_log(project, "hello", session_id="s1", role="user")
    records.save_log(project, "again", session_id="s2", role="user")
    kvstore.save(project, "baselines", "p95", {"ms": 120})
    return Project.open(root)


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
