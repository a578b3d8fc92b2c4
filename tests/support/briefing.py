"""Fixture (registered in tests/conftest.py): ``briefed``, a project with something in every
section of the session briefing (tests/unit/test_context.py, tests/integration/test_context_processes.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl
from contextware.memory import records
from contextware.storage.project import Project
from contextware.store import kvstore

_TEMPLATE: list[Path] = []  # built once per test process, then copied (it takes ~2 s to build)


@pytest.fixture
def briefed(project: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A project with every section of the briefing: code (pkg/ledger.py imported by three modules),
    constraints (one superseded), a preference, a note, twelve alike failures, a success, two
    sessions and a store namespace.  Each test gets its own copy of one built project (files and
    data, their times kept), so a test that writes changes only its copy."""
    if not _TEMPLATE:
        template = tmp_path_factory.mktemp("briefed") / "proj"
        template.mkdir()
        _build(Project.open(template))
        _TEMPLATE.append(template)
    shutil.copytree(_TEMPLATE[0], project.root, dirs_exist_ok=True)
    return Project.open(project.root)


def _build(project: Project) -> None:
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
