"""`contextware doctor` from a clone: every check runs the real thing (hook and MCP server processes,
the service, the tables), and a project whose committed files call `contextware` is told how to
get it onto PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from contextware.storage.project import Project
from tests.support.bit_rot import flip_stored
from tests.support.repo import REPO
from tests.support.scripts import run_script

VENV_BIN = str(Path(sys.executable).parent)


def _doctor(cwd: Path, path: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "contextware.cli", "doctor"],
        cwd=cwd,
        env={**os.environ, "PATH": path, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(out.stdout)
    assert out.returncode == (0 if report["healthy"] else 1), out.stdout + out.stderr
    assert report["ok"] is report["healthy"] and (report["healthy"] or report["error"]["code"] == "unhealthy")
    return report


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
    assert not command["ok"] and "only inside `uv run`" in command["detail"]
    # The hooks the project commits call `contextware` from the PATH the host will have: off it.
    portable = [
        c for c in in_uv_run["checks"] if c["name"] in ("hook", "mcp") and c["command"].startswith("contextware ")
    ]
    assert portable and all(not c["ok"] and "not on PATH" in c["detail"] for c in portable)
    assert all(c["ok"] for c in in_uv_run["checks"] if c["name"] == "data")


def test_doctor_runs_the_loop_of_each_installed_host_and_fails_on_a_damaged_row(project_dir: Path, tmp_path: Path):
    """Both hosts installed in the project: doctor feeds their real hook commands a session start, a
    prompt and a turn end, says what the model would receive and leaves memory as it was; a damaged
    row (the hooks fail open, so only hooks.log knows) makes it exit 1 naming the loop."""
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home"), "HOME": str(tmp_path / "home")}
    run_script("save_fact", "We deploy with fly deploy.", "--kind", "constraint", cwd=project_dir)
    for host in ("claude", "gemini"):
        run_script("install", host, "--project", "--python", sys.executable, cwd=project_dir, env=env)
    healthy = _doctor(project_dir, "/usr/bin:/bin", env)
    assert healthy["healthy"] is True, healthy
    loops = [c for c in healthy["checks"] if c["name"] == "loop"]
    assert len(loops) == 2 and all(c["briefing_chars"] > 0 for c in loops), loops
    assert any("claude (project" in c["detail"] for c in loops) and any("gemini (project" in c["detail"] for c in loops)
    listed = run_script("memory", "list", "--collection", "logs", cwd=project_dir).json
    assert listed["records"] == [], "the sample turns were removed"

    flip_stored(Project.open(project_dir), "facts", b"fly deploy", 0)
    sick = _doctor(project_dir, "/usr/bin:/bin", env)
    problems = {c["name"]: c for c in sick["checks"] if not c["ok"]}
    assert "loop" in problems and sick["error"]["message"].startswith(f"{sick['problems']} problem(s)"), sick
    assert "damaged" in problems["loop"]["detail"] and "hooks.log" in problems["loop"]["detail"]


def test_doctor_flags_one_host_installed_in_both_scopes(project_dir: Path, tmp_path: Path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home"), "HOME": str(tmp_path / "home")}
    for scope in ("--project", "--user"):
        run_script("install", "claude", scope, "--python", sys.executable, cwd=project_dir, env=env)
    report = _doctor(project_dir, "/usr/bin:/bin", env)
    duplicate = [c for c in report["checks"] if c["name"] == "duplicate"]
    assert report["healthy"] is False and len(duplicate) == 1 and "claude" in duplicate[0]["detail"], report
