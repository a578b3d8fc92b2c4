"""`uv tool install .` and `uvx --from .` from a clone give a working `contextware` command (offline,
from uv's cache: .ci/run fills it once with `uv tool install .`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support.repo import REPO

UV = shutil.which("uv")
WARM_UP = "run `uv tool install .` once with network access to fill uv's cache"


def _run(cmd: list[str], env: dict[str, str], cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(UV is None, reason="uv is not on PATH")
def test_uv_tool_install_from_a_clone_gives_a_working_command(tmp_path):
    env = {**os.environ, "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    env.pop("VIRTUAL_ENV", None)
    installed = _run([UV, "tool", "install", "--offline", str(REPO)], env)
    assert installed.returncode == 0, f"{installed.stderr[-2000:]}\n({WARM_UP})"
    command = str(tmp_path / "bin" / "contextware")

    version = _run([command, "--version"], env)
    assert version.returncode == 0 and version.stdout.startswith("contextware ")
    project = tmp_path / "proj"
    project.mkdir()
    saved = _run([command, "save", "We deploy with fly deploy.", "--kind", "decision"], env, cwd=project)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    found = _run([command, "recall", "how do we deploy?"], env, cwd=project)
    assert json.loads(found.stdout)["results"][0]["id"] == json.loads(saved.stdout)["id"]
    served = _run([command, "mcp", "--help"], env)
    assert served.returncode == 0 and "contextware mcp" in served.stdout

    once = _run([UV, "tool", "run", "--offline", "--from", str(REPO), "contextware", "--help"], env)
    assert once.returncode == 0 and "commands:" in once.stdout, once.stderr[-2000:]
