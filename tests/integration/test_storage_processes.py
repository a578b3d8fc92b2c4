"""The LanceDB layer under real concurrency: processes saving at once, concurrent duplicates, and a
long-lived connection that must see other processes' writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from contextware.memory import records
from contextware.memory.recall import recall
from contextware.settings import Settings
from contextware.storage.project import Project
from tests.unit.test_storage import WRITER


def _spawn_writers(root: Path, workers: int, count: int, same: bool) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(w), str(count), "same" if same else "distinct"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(workers)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-3000:]


def _ids(project: Project, table: str = "facts") -> list[str]:
    return project.db.open_table(table).to_arrow().column("id").to_pylist()


def test_eight_processes_saving_25_facts_each_leave_exactly_200_rows(project_dir):
    _spawn_writers(project_dir, workers=8, count=25, same=False)
    project = Project.open(project_dir, Settings.from_env(os.environ))
    ids = _ids(project)
    assert len(ids) == 200 and len(set(ids)) == 200
    texts = set(project.db.open_table("facts").to_arrow().column("text").to_pylist())
    assert texts == {f"Worker {w} fact {i}: service {w}-{i} owns queue q{w}{i}." for w in range(8) for i in range(25)}


def test_concurrent_exact_duplicates_are_saved_once(project_dir):
    _spawn_writers(project_dir, workers=4, count=4, same=True)
    texts = (
        Project.open(project_dir, Settings.from_env(os.environ))
        .db.open_table("facts")
        .to_arrow()
        .column("text")
        .to_pylist()
    )
    assert sorted(texts) == sorted(f"Shared rule {i}: never push to main." for i in range(4))


def test_a_long_lived_connection_sees_other_processes_writes(project):
    records.save_fact(project, "First fact, written in this process.")
    assert len(_ids(project)) == 1
    _spawn_writers(project.root, workers=1, count=3, same=False)
    assert len(_ids(project)) == 4  # same Database object, no reopen
    hits = recall(project, "which service owns queue q02?", limit=5)["results"]
    assert "Worker 0 fact 2: service 0-2 owns queue q02." in [h["text"] for h in hits]
