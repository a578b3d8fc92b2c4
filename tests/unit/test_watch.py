"""index_file on a vanished folder removes its rows only.  watch.py as a process:
tests/integration/test_watch_processes.py."""

from __future__ import annotations

import os
from pathlib import Path

from contextware.codeindex.indexer import crawl
from contextware.settings import Settings
from contextware.storage.project import Project


def indexed(root: Path) -> dict[str, list[str]]:
    table = Project.open(root, Settings.from_env(os.environ)).db.open_table("code_index")
    return {r["id"]: r["symbols"] for r in table.search().select(["id", "symbols"]).limit(None).to_list()}


def test_index_file_on_a_vanished_folder_removes_its_rows_only(project_dir: Path):
    from contextware.codeindex.indexer import index_files

    (project_dir / "pkg").mkdir()
    (project_dir / "pkg" / "a.py").write_text("A = 1\n")
    (project_dir / "pkgs.py").write_text("B = 2\n")  # shares the prefix, not the folder
    project = Project.open(project_dir, Settings.from_env(os.environ))
    crawl(project, summarizer="local")
    (project_dir / "pkg" / "a.py").unlink()
    (project_dir / "pkg").rmdir()
    report = index_files(project, [project_dir / "pkg", project_dir / "nothing_here"], summarizer="local")
    assert report["removed_files"] == ["pkg/a.py"]
    assert [s for s in report["skipped_files"] if s["reason"] == "missing"] == [
        {"path": "nothing_here", "reason": "missing"}
    ]
    assert set(indexed(project_dir)) == {"pkgs.py"}
