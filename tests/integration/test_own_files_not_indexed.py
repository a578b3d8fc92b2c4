"""Issue 34 item 4: Contextware's own files (the team file, the installed skills and host settings,
the data dir) are never indexed as the project's code, and rows of them indexed by an earlier
version are removed by the next crawl."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contextware.codeindex import files
from contextware.codeindex.indexer import crawl
from contextware.memory import records
from contextware.memory.team.share import export_memory
from contextware.storage.project import Project
from tests.support.scripts import run_script

OWN = (".contextware/", ".gemini/", ".claude/", ".mcp.json", "contextware_data/")


def _indexed(project: Project) -> list[str]:
    tbl = Project.open(project.root).db.open_table("code_index")
    return sorted({r["file_path"] for r in tbl.search().select(["file_path"]).limit(10_000).to_list()})


def _own(paths: list[str]) -> list[str]:
    return [p for p in paths if p.startswith(OWN)]


@pytest.fixture
def installed(project: Project, tmp_path: Path) -> Project:
    root = project.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def deploy():\n    return 'make deploy'\n")
    env = {"HOME": str(tmp_path / "home")}
    for host in ("gemini", "claude"):
        out = run_script("install", host, "--project", cwd=root, env=env)
        assert out.returncode == 0, out.stdout
    records.save_fact(project, "Release notes go in CHANGELOG.md under Unreleased.", kind="convention")
    export_memory(project, root / ".contextware" / "memory.jsonl")
    (root / ".claude" / "settings.local.json").write_text('{"permissions": {}}\n')
    (root / ".contextware" / "notes.md").write_text("# anything under .contextware\n")
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert {".contextware/memory.jsonl", ".gemini/settings.json", ".mcp.json", ".claude/settings.json"} <= present
    assert any(p.startswith(".gemini/skills/contextware/") for p in present)
    assert any(p.startswith(".claude/skills/contextware/") for p in present)
    return project


def test_install_export_and_crawl_index_none_of_our_own_files(installed: Project):
    crawl(installed, summarizer="local")
    indexed = _indexed(installed)
    assert "app.py" in indexed and _own(indexed) == []


def test_rows_of_our_own_files_indexed_earlier_are_removed_by_the_next_crawl(
    installed: Project, monkeypatch: pytest.MonkeyPatch
):
    with monkeypatch.context() as m:  # what a version without the rule indexed
        m.setattr(files, "own_file", lambda rel, is_dir=False: False)
        crawl(installed, summarizer="local")
    planted = _own(_indexed(installed))
    assert ".contextware/memory.jsonl" in planted and ".mcp.json" in planted, planted
    crawl(installed, summarizer="local")
    indexed = _indexed(installed)
    assert "app.py" in indexed and _own(indexed) == []


def test_the_rule_names_only_our_files():
    assert files.own_file(".contextware", is_dir=True) and files.own_file("sub/.contextware", is_dir=True)
    assert files.own_file(".gemini/skills/contextware/SKILL.md") and files.own_file(".mcp.json")
    assert not files.own_file(".gemini/skills/other/SKILL.md") and not files.own_file("src/settings.json")
    assert not files.own_file("docs/.mcp.json") and not files.own_file("contextware/app.py")
