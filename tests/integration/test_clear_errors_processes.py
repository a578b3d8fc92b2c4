"""Inputs that ended in ``internal_error`` (or a traceback with no JSON), each reproduced for real with
the scripts, through the resident service and in process: non-UTF-8 bytes in argv, the working
directory or a ``CONTEXTWARE_*`` variable; config.json in UTF-16; NaN, Infinity, 1e308 and 10**30 in
numeric settings; ``retain --older-than 1e308|inf``; a 5,000-character project root; a data dir that
is a symlink loop; ``repair`` of a read-only project; ``--project-root /``.  Each is one JSON error
with a clear sentence, exit 2 for bad input (1 for the read-only disk), and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import SCRIPTS
from tests.support.service_helpers import as_plain_user

LATIN1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # what Python makes of a non-UTF-8 byte


def _run(name: str, *args: str, cwd: Path, env: dict[str, str] | None = None, prefix=()) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [*prefix, sys.executable, str(SCRIPTS / f"{name}.py"), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        timeout=180,
    )
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    return proc.returncode, json.loads(proc.stdout), stderr


def _refused(result: tuple[int, dict, str], code: str | None = None, exit_code: int = 2) -> str:
    rc, out, _ = result
    assert rc == exit_code and out["ok"] is False, out
    assert out["error"]["code"] != "internal_error", out
    if code is not None:
        assert out["error"]["code"] == code, out
    return out["error"]["message"]


@pytest.fixture
def seeded(project_dir: Path) -> Path:
    rc, out, _ = _run("save_fact", "We deploy on Fridays", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"})
    assert rc == 0, out
    return project_dir


@pytest.mark.parametrize("service", ["auto", "off"])
def test_non_utf8_argv_cwd_and_variables(seeded: Path, services, service: str):
    env = {"CONTEXTWARE_SERVICE": service}
    _refused(_run("recall", "--query", LATIN1, cwd=seeded, env=env))
    _refused(_run("save_fact", f"note {LATIN1}", cwd=seeded, env=env))
    odd = Path(os.fsdecode(bytes(seeded) + b"/d\xe9"))
    odd.mkdir()
    assert "not UTF-8" in _refused(_run("save_fact", "from an odd folder", cwd=odd, env=env), "bad_encoding")
    assert not (odd / "contextware_data").exists()  # refused before anything was created
    assert "not UTF-8" in _refused(_run("recall", "--query", "x", "--project-root", str(odd), cwd=seeded, env=env))
    bad_dir = {**env, "CONTEXTWARE_DATA_DIR": os.fsdecode(bytes(seeded) + b"/data\xe9")}
    assert "CONTEXTWARE_DATA_DIR" in _refused(_run("save_fact", "x y", cwd=seeded, env=bad_dir), "bad_encoding")


def test_config_json_in_utf16_is_a_clear_error(seeded: Path):
    (seeded / "contextware_data" / "config.json").write_bytes('{"service_idle_minutes": 5}'.encode("utf-16"))
    message = _refused(_run("recall", "--query", "x", cwd=seeded), "damaged_config")
    assert "not UTF-8" in message


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e308", "1000000000000000000000000000000"])
@pytest.mark.parametrize("key", ["log_retention_days", "tombstone_days", "gemini_timeout_s", "store_max_bytes"])
def test_numbers_that_overflow_are_refused_by_config_check(seeded: Path, key: str, value: str):
    (seeded / "contextware_data" / "config.json").write_text(f'{{"{key}": {value}}}')
    message = _refused(_run("memory", "stats", cwd=seeded, env={"CONTEXTWARE_SERVICE": "off"}), "bad_config")
    assert key in message and ("at most" in message or "whole number" in message)


def test_config_check_refuses_nan_too(seeded: Path):
    (seeded / "contextware_data" / "config.json").write_text('{"log_retention_days": NaN}')
    proc = subprocess.run(
        [sys.executable, "-m", "contextware.cli", "config", "check"], cwd=seeded, capture_output=True, timeout=120
    )
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "bad_config"


@pytest.mark.parametrize("days", ["1e308", "inf", "nan", "-1"])
def test_retain_older_than_out_of_range(seeded: Path, days: str):
    _refused(_run("memory", "retain", "--older-than", days, cwd=seeded), "bad_older_than")


def test_a_5000_character_project_root(seeded: Path):
    long_root = seeded / "/".join(["a" * 200] * 25)
    message = _refused(_run("recall", "--query", "x", "--project-root", str(long_root), cwd=seeded), "bad_project_root")
    assert len(message) < 400  # the path is shortened, not repeated whole


def test_a_data_dir_that_is_a_symlink_loop(project_dir: Path):
    (project_dir / "contextware_data").symlink_to("contextware_data")
    _refused(_run("save_fact", "x y", cwd=project_dir, env={"CONTEXTWARE_SERVICE": "off"}))
    loop = {"CONTEXTWARE_DATA_DIR": str(project_dir / "contextware_data")}
    _refused(_run("memory", "stats", cwd=project_dir, env=loop), "bad_data_dir")


def test_the_file_system_root_is_no_project(tmp_path: Path):
    assert not Path("/contextware_data").exists()
    for args in (["--project-root", "/"], []):
        message = _refused(_run("save_fact", "x y", *args, cwd=Path("/") if not args else tmp_path), "bad_project_root")
        assert "root of the file system" in message
    assert not Path("/contextware_data").exists()


def test_repair_of_a_read_only_project_says_so(seeded: Path):
    prefix = as_plain_user()
    data = seeded / "contextware_data"
    modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}
    for path in sorted(modes, key=lambda p: -len(p.parts)):
        path.chmod(modes[path] & ~0o222)
    try:
        message = _refused(_run("memory", "repair", cwd=seeded, prefix=prefix), "storage_error", exit_code=1)
        assert "read-only" in message
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
