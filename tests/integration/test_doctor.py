"""`contextware doctor` from a clone: every check runs the real thing (hook and MCP server processes,
the service, the tables), and a project whose committed files call `contextware` is told how to
get it onto PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.repo import REPO
from tests.support.scripts import run_script

VENV_BIN = str(Path(sys.executable).parent)


def _doctor(cwd: Path, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "contextware.cli", "doctor"],
        cwd=cwd,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_doctor_checks_this_install_and_the_project_files_and_names_the_fix(project_dir: Path, tmp_path: Path):
    run_script("save_fact", "We deploy with fly deploy.", cwd=project_dir)
    healthy = _doctor(project_dir, "/usr/bin:/bin")
    assert healthy["healthy"] is True, healthy
    by_name = {c["name"]: c for c in healthy["checks"]}
    assert {"command", "hook", "mcp", "service", "data"} <= set(by_name)
    assert "1 rows" in by_name["data"]["detail"] and "scripts/hook.py" in by_name["hook"]["detail"]

    run_script("install", "claude", "--project", cwd=project_dir, env={"PATH": "/usr/bin:/bin"})
    off_path = _doctor(project_dir, "/usr/bin:/bin")
    problems = {c["name"]: c for c in off_path["checks"] if not c["ok"]}
    assert off_path["healthy"] is False and {"command", "hook", "mcp"} <= set(problems)
    assert problems["command"]["fix"] == f"`uv tool install {REPO}`"

    # The clone's own console command is on PATH only inside `uv run`: named as the problem it is.
    in_uv_run = _doctor(project_dir, f"{VENV_BIN}:/usr/bin:/bin")
    command = next(c for c in in_uv_run["checks"] if c["name"] == "command")
    if Path(VENV_BIN) == REPO / ".venv" / "bin":
        assert not command["ok"] and "only inside `uv run`" in command["detail"]
    assert all(c["ok"] for c in in_uv_run["checks"] if c["name"] in ("hook", "mcp", "data"))
