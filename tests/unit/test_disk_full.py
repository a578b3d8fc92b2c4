"""A full disk, reproduced for real on a small tmpfs: every save that fails is ``disk_full`` (exit 1),
is not committed, and leaves the table readable; freeing space makes saves work again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from contextware.errors import ContextwareError, DiskFullError
from contextware.memory import kvstore, records
from contextware.settings import Settings
from contextware.storage.project import Project


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


def test_saves_on_a_full_disk_fail_as_disk_full_and_are_not_committed(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    records.save_fact(Project.open(root, Settings.from_env(os.environ)), "The first fact fits on the disk.")
    filler = _fill(small_fs, 60_000)
    saved: list[str] = []
    failures: list[ContextwareError] = []
    for i in range(100):
        try:
            saved.append(
                records.save_fact(
                    Project.open(root, Settings.from_env(os.environ)),
                    f"Fact {i}: service {i} listens on port {9000 + i}. " * 5,
                )["id"]
            )
        except ContextwareError as exc:
            failures.append(exc)
            if len(failures) == 3:
                break
    assert failures, "the disk never filled up"
    for exc in failures:
        assert isinstance(exc, DiskFullError) and exc.code == "disk_full" and exc.exit_code == 1, exc
        assert "disk is full" in exc.message and "nothing was saved" in exc.message
    listed = records.list_records(Project.open(root, Settings.from_env(os.environ)), limit=1000)
    # Exactly the saves reported done are in the table: none that was reported failed.
    assert listed["total"] == len(saved) + 1
    assert set(saved) <= {r["id"] for r in listed["records"]}

    filler.unlink()
    again = records.save_fact(Project.open(root, Settings.from_env(os.environ)), "Saved once space was freed.")
    assert again["written"] == 1
    assert (
        records.list_records(Project.open(root, Settings.from_env(os.environ)), limit=1000)["total"] == len(saved) + 2
    )


def test_a_store_save_on_a_full_disk_is_disk_full_and_keeps_the_old_value(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    kvstore.save(Project.open(root, Settings.from_env(os.environ)), "baselines", "GET /users", {"p95_ms": 120})
    _fill(small_fs, 20_000)
    with pytest.raises(DiskFullError):
        for i in range(50):
            kvstore.save(
                Project.open(root, Settings.from_env(os.environ)),
                "baselines",
                "GET /users",
                {"p95_ms": i, "pad": "x" * 20_000},
            )
    value = kvstore.load(Project.open(root, Settings.from_env(os.environ)), "baselines", "GET /users")["data"]
    assert value == {"p95_ms": 120} or value.get("pad") == "x" * 20_000  # an old or a whole new value


def test_the_first_save_on_a_full_disk_is_disk_full(small_fs: Path):
    root = small_fs / "proj"
    root.mkdir()
    Project.open(root, Settings.from_env(os.environ)).ensure_data_dir()
    _fill(small_fs, 0)
    with pytest.raises(DiskFullError):
        records.save_fact(Project.open(root, Settings.from_env(os.environ)), "Nothing fits on this disk.")
