"""Damage that must not make things worse, planted for real in real LanceDB tables: a data file
replaced by a FIFO (every door hung inside Lance's open), a data file symlinked to /dev/zero (a
repair wrote 71 GB copying it), a manifest overwritten with NUL bytes (internal_error everywhere,
repair included).  Each is ``damaged_data`` at once, and ``repair`` moves the odd file aside
unopened, copies only regular files, bounded by their sizes, and rolls back past a NUL manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextware.core.errors import DamagedDataError, DiskFullError
from contextware.memory import maintenance, records
from contextware.memory.recall import ask
from contextware.storage.project import Project
from tests.support.hook_events import event
from tests.support.repo import SCRIPTS

FACTS = ["We deploy on Fridays after the freeze", "The cache lives in Redis", "Tests run with pytest -q"]


def _project(root: Path) -> Project:
    data = root / "contextware_data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "config.json").write_text(json.dumps({"compact_after_fragments": 100_000}))
    project = Project.open(root)
    for text in FACTS:
        records.save_fact(project, text)
    return project


def _table(project: Project) -> Path:
    return Path(project.db_uri) / "facts.lance"


def _first_data_file(project: Project) -> Path:
    return sorted((_table(project) / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)[0]


def _newest_manifest(project: Project) -> Path:
    from contextware.storage.salvage import _manifests

    return _manifests(_table(project))[0][1]


def _assert_damaged(call) -> str:
    with pytest.raises(DamagedDataError) as exc:
        call()
    assert exc.value.code == "damaged_data" and "memory.py repair" in exc.value.message
    return exc.value.message


@pytest.mark.slow
def test_a_fifo_in_place_of_a_data_file_is_damage_never_opened(tmp_path: Path):
    project = _project(tmp_path / "p")
    victim = _first_data_file(project)
    victim.unlink()
    os.mkfifo(victim)
    began = time.monotonic()
    message = _assert_damaged(lambda: records.list_records(Project.open(project.root), limit=10))
    assert "is a FIFO" in message and victim.name in message
    _assert_damaged(lambda: ask(Project.open(project.root), "when do we deploy"))
    assert time.monotonic() - began < 30  # without the check: blocked for ever in Lance's open

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["irregular_moved_aside"] == [f"data/{victim.name}"] and facts["lost"] == 1, report
    assert facts["kept"] == 2 and not victim.exists()
    moved = project.root / facts["moved_to"] / "data" / victim.name
    assert moved.is_fifo()  # kept aside, never deleted, never opened
    assert len(records.list_records(Project.open(project.root), limit=10)["records"]) == 2


@pytest.mark.slow
def test_the_prompt_hook_does_not_hang_on_a_fifo(tmp_path: Path):
    project = _project(tmp_path / "p")
    victim = _first_data_file(project)
    victim.unlink()
    os.mkfifo(victim)
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "hook.py")],
        input=event("BeforeAgent", project.root, prompt="when do we deploy"),
        capture_output=True,
        text=True,
        cwd=project.root,
        env={**os.environ, "CONTEXTWARE_SERVICE": "off"},
        timeout=60,
    )
    assert proc.returncode == 0 and time.monotonic() - began < 30


@pytest.mark.slow
def test_repair_never_follows_a_data_file_symlinked_to_dev_zero(tmp_path: Path):
    project = _project(tmp_path / "p")
    victim = _first_data_file(project)
    victim.unlink()
    victim.symlink_to("/dev/zero")
    (_table(project) / "stray").symlink_to("/dev/zero")
    size = sum(p.stat().st_size for p in _table(project).rglob("*") if p.is_file() and not p.is_symlink())
    assert "is a symlink" in _assert_damaged(lambda: records.list_records(Project.open(project.root), limit=10))

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert sorted(facts["irregular_moved_aside"]) == sorted([f"data/{victim.name}", "stray"]), facts
    assert facts["backup_bytes"] <= size, (facts["backup_bytes"], size)
    written = sum(
        p.stat().st_size for p in (project.data_dir / "damaged").rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert written <= size  # was 71 GB from /dev/zero until the disk filled
    assert len(records.list_records(Project.open(project.root), limit=10)["records"]) == 2


def test_copy_aside_copies_regular_files_only_and_checks_the_room_first(tmp_path: Path, monkeypatch):
    from contextware.storage import table_files

    folder = tmp_path / "t.lance"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "a.lance").write_bytes(b"x" * 1000)
    (folder / "data" / "zero.lance").symlink_to("/dev/zero")
    os.mkfifo(folder / "data" / "pipe.lance")
    (folder / "out").symlink_to("/")
    assert table_files.copy_aside(folder, tmp_path / "copy") == 1000
    assert sorted(p.name for p in (tmp_path / "copy").rglob("*")) == ["a.lance", "data"]

    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage._replace(free=10_000))
    with pytest.raises(DiskFullError, match="nothing was changed"):
        table_files.copy_aside(folder, tmp_path / "copy2")
    assert not list((tmp_path / "copy2").rglob("*.lance"))


@pytest.mark.slow
def test_a_manifest_of_nul_bytes_is_damaged_data_and_repair_rolls_back(tmp_path: Path, capsys):
    project = _project(tmp_path / "p")
    manifest = _newest_manifest(project)
    manifest.write_bytes(b"\0" * manifest.stat().st_size)
    from contextware.cli import run

    for argv in (["list"], ["stats"]):
        code = run("memory", [*argv, "--project-root", str(project.root)], prog="memory")
        out = json.loads(capsys.readouterr().out)
        assert code in (0, 1) and "internal_error" not in json.dumps(out), out
    _assert_damaged(lambda: records.list_records(Project.open(project.root), limit=10))
    _assert_damaged(lambda: ask(Project.open(project.root), "deploy"))

    report = maintenance.repair(Project.open(project.root))
    facts = report["tables"]["facts"]
    assert facts["status"] == "rolled_back" and facts["versions_dropped"] >= 1, facts
    texts = [r["text"] for r in records.list_records(Project.open(project.root), limit=10)["records"]]
    assert set(texts) <= set(FACTS) and len(texts) >= 2
