"""A full disk, reproduced for real on a small tmpfs: every save that fails is ``disk_full`` (exit 1),
is not committed, and leaves the table readable; freeing space makes saves work again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from contextware.core.errors import ContextwareError, DiskFullError
from contextware.memory import records
from contextware.storage.project import Project
from contextware.store import kvstore


@pytest.fixture
def small_fs(tmp_path: Path):
    """A 4 MiB tmpfs (needs root and a kernel that allows the mount; skipped otherwise)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"the OS refused to mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, leave: int) -> Path:
    st = os.statvfs(mnt)
    filler = mnt / "filler"
    filler.write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return filler


@pytest.mark.slow
def test_saves_on_a_full_disk_fail_as_disk_full_and_are_not_committed(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    records.save_fact(Project.open(root), "The first fact fits on the disk.")
    filler = _fill(small_fs, 60_000)
    saved: list[str] = []
    failures: list[ContextwareError] = []
    for i in range(100):
        try:
            saved.append(
                records.save_fact(Project.open(root), f"Fact {i}: service {i} listens on port {9000 + i}. " * 5)["id"]
            )
        except ContextwareError as exc:
            failures.append(exc)
            if len(failures) == 3:
                break
    assert failures, "the disk never filled up"
    for exc in failures:
        assert isinstance(exc, DiskFullError) and exc.code == "disk_full" and exc.exit_code == 1, exc
        assert "disk is full" in exc.message and "nothing was saved" in exc.message
    listed = records.list_records(Project.open(root), limit=1000)
    # Exactly the saves reported done are in the table: none that was reported failed.
    assert listed["total"] == len(saved) + 1
    assert set(saved) <= {r["id"] for r in listed["records"]}

    filler.unlink()
    again = records.save_fact(Project.open(root), "Saved once space was freed.")
    assert again["written"] == 1
    assert records.list_records(Project.open(root), limit=1000)["total"] == len(saved) + 2


def test_a_store_save_on_a_full_disk_is_disk_full_and_keeps_the_old_value(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    kvstore.save(Project.open(root), "baselines", "GET /users", {"p95_ms": 120})
    _fill(small_fs, 20_000)
    with pytest.raises(DiskFullError):
        for i in range(50):
            kvstore.save(Project.open(root), "baselines", "GET /users", {"p95_ms": i, "pad": "x" * 20_000})
    value = kvstore.load(Project.open(root), "baselines", "GET /users")["data"]
    assert value == {"p95_ms": 120} or value.get("pad") == "x" * 20_000  # an old or a whole new value


def test_the_first_save_on_a_full_disk_is_disk_full(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    Project.open(root).ensure_data_dir()
    _fill(small_fs, 0)
    with pytest.raises(DiskFullError):
        records.save_fact(Project.open(root), "Nothing fits on this disk.")


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_an_export_onto_a_full_disk_is_disk_full_and_keeps_the_previous_file(
    small_fs: Path, project: Project, capsys: pytest.CaptureFixture[str]
):
    import json

    from contextware.cli import run

    out = small_fs / "memory.jsonl"
    records.save_fact(project, "The first fact is exported while the disk has room.")
    assert run("export", ["--output", str(out), "--project-root", str(project.root)]) == 0
    before = out.read_bytes()
    for i in range(40):
        records.save_fact(Project.open(project.root), f"Fact {i}: service {i} listens on port {9000 + i}. " * 20)
    _fill(small_fs, 4_000)
    capsys.readouterr()
    assert run("export", ["--output", str(out), "--project-root", str(project.root)]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "disk_full" and "\n" not in error["message"], error
    assert out.read_bytes() == before  # the previous export, whole
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler", "memory.jsonl"]  # no temporary file left
