"""Private by default (issue 23, item 6): what our processes write under the data dir and under
CONTEXTWARE_HOME is readable by its user alone (files 0600, folders 0700), even when the user's
umask is the usual 022; ``memory repair`` tightens what an older version made 0644 in 0755 folders.
Real subprocesses: saves, the store and its access log, hooks through the resident service and a
failing hook's log, an offload through a fake ``gemini``."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hook_events import event
from tests.support.repo import SCRIPTS
from tests.support.service_helpers import OFF, ON, run


@pytest.fixture
def usual_umask():
    """Our subprocesses inherit the umask of a usual shell (022), whatever this process had."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _open_to_others(*roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in [root, *root.rglob("*")]:
            st = path.lstat()
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
                found.append(f"{path} {oct(stat.S_IMODE(st.st_mode))}")
    return found


def _hook(stdin: str, cwd: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "hook.py")],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **ON},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_nothing_we_write_is_readable_by_another_user(project_dir: Path, usual_umask, services, fake_gemini):
    (project_dir / "src").mkdir()
    (project_dir / "src" / "app.py").write_text("def handler(event):\n    return event\n")
    assert run("save_fact", "The API listens on port 8080.", cwd=project_dir, env=OFF).returncode == 0
    assert run("store", "save", "--namespace", "n", "--key", "k", "--data", '{"a": 1}', cwd=project_dir).returncode == 0
    assert run("store", "load", "--namespace", "n", "--key", "k", cwd=project_dir).returncode == 0
    _hook(event("SessionStart", project_dir, source="startup"), project_dir)
    _hook(event("AfterAgent", project_dir, prompt="how is it served?", prompt_response="On port 8080."), project_dir)
    offload = run(
        "offload", "--prompt", "What does handler do?", "--files", "src/app.py", cwd=project_dir, env=OFF, input=""
    )
    assert offload.returncode == 0, offload.stdout
    assert run("crawl_project", cwd=project_dir, env=OFF).returncode == 0
    assert run("service", "stop", cwd=project_dir).returncode == 0
    data_dir = project_dir / "contextware_data"
    config = data_dir / "config.json"
    config.write_text("{not json")  # a failing hook: logged to hooks.log
    config.chmod(0o600)
    _hook(event("BeforeAgent", project_dir, prompt="how do we deploy?"), project_dir)
    config.unlink()

    home = Path(os.environ["CONTEXTWARE_HOME"])
    names = {p.name for p in data_dir.rglob("*")}
    assert {"hooks.log", "kv-access.log", "service.log", "offloads", "locks"} <= names, sorted(names)
    assert (home / "projects.json").is_file()
    assert _open_to_others(data_dir, home) == []


def test_memory_repair_tightens_what_an_older_version_left_open(project_dir: Path, usual_umask):
    assert run("save_fact", "The API listens on port 8080.", cwd=project_dir, env=OFF).returncode == 0
    data_dir = project_dir / "contextware_data"
    home = Path(os.environ["CONTEXTWARE_HOME"])
    for path in [data_dir, *data_dir.rglob("*"), home, *home.rglob("*")]:  # as an older version made them
        path.chmod(0o755 if path.is_dir() else 0o644)
    (data_dir / "hooks.log").write_text("old line\n")
    (data_dir / "hooks.log").chmod(0o644)
    assert _open_to_others(data_dir, home)
    repaired = run("memory", "repair", cwd=project_dir, env=OFF)
    assert repaired.returncode == 0, repaired.stdout
    assert repaired.json["permissions_tightened"] > 3
    assert _open_to_others(data_dir, home) == []
    # and the memory still works
    assert run("recall", "--query", "which port", cwd=project_dir, env=OFF).json["ok"] is True
