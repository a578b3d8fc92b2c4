"""Shared by the resident-service tests: run scripts with the service on, find the service of a
project, and make sure every service a test started is gone when it ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, ScriptResult

ON = {"CONTEXTWARE_SERVICE": "auto"}
OFF = {"CONTEXTWARE_SERVICE": "off"}


def run(name: str, *args: str, cwd: Path, env: dict[str, str] | None = None, input: str | None = None, prefix=()):
    proc = subprocess.run(
        [*prefix, sys.executable, str(SCRIPTS / f"{name}.py"), *args],
        cwd=cwd,
        env={**os.environ, **ON, **(env or {})},
        input=input.encode() if input is not None else None,
        capture_output=True,
        timeout=180,
    )
    return ScriptResult(
        subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    )


def status(cwd: Path) -> dict:
    return run("service", "status", cwd=cwd).json


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(predicate, timeout: float = 30.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s")


def log_text(project_dir: Path) -> str:
    path = project_dir / "contextware_data" / "service.log"
    return path.read_text() if path.exists() else ""


def pid_from_log(project_dir: Path, after: int = 0) -> int | None:
    for line in log_text(project_dir).splitlines()[after:]:
        if "listening on" in line:
            return int(line.split("[", 1)[1].split("]", 1)[0])
    return None


def rows(project_dir: Path, collection: str) -> list[dict]:
    out = run("memory", "list", "--collection", collection, "--limit", "100000", cwd=project_dir, env=OFF)
    assert out.returncode == 0, out.stdout
    return out.json["records"]


def as_plain_user() -> list[str]:
    """A prefix that runs a command as a user without root's power over file modes: root writes
    through any mode, so a read-only data dir needs a user namespace (as uid 1000, owning our files)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("unshare") or subprocess.run(["unshare", "--map-user=1000", "true"]).returncode != 0:
        pytest.skip("root, and no user namespace to drop file-mode privileges")
    return ["unshare", "--map-user=1000", "--map-group=1000"]


@pytest.fixture
def services(project_dir: Path):
    """Stops (then kills) every service started for the test's project, even when the test failed."""
    yield
    data_dir = project_dir / "contextware_data"
    if data_dir.is_dir():
        subprocess.run(
            [sys.executable, str(SCRIPTS / "service.py"), "stop"],
            cwd=project_dir,
            env={**os.environ, **ON},
            capture_output=True,
            timeout=60,
        )
    for line in log_text(project_dir).splitlines():
        if "listening on" in line:
            pid = int(line.split("[", 1)[1].split("]", 1)[0])
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    from contextware.service.protocol import endpoint

    shutil.rmtree(
        endpoint(data_dir.resolve(), os.environ.get("XDG_RUNTIME_DIR")).folder, ignore_errors=True
    )  # no runtime folder left in /tmp


def write_config(project_dir: Path, **values) -> None:
    data_dir = project_dir / "contextware_data"
    data_dir.mkdir(exist_ok=True)
    (data_dir / "config.json").write_text(json.dumps(values))
