"""The PATH check of every install uses the PATH the host will have: ``uv run`` and an activated
environment put the environment's own ``bin/`` first, where ``contextware`` is found, but a host
started from another shell has no such PATH and would run hooks that do not exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.scripts import run_script


@pytest.mark.parametrize("host", ["gemini", "claude"])
def test_install_from_the_venv_warns_when_only_the_venv_bin_has_contextware(tmp_path: Path, host: str):
    root = tmp_path / "proj"
    root.mkdir()
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "contextware").exists()
    env = {"PATH": str(venv_bin), "CONTEXTWARE_PROJECT_ROOT": str(root)}
    res = run_script("install", host, "--project", cwd=root, env=env)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
    warnings = json.loads(res.stdout)["warnings"]
    assert any("`contextware` is not on PATH" in w for w in warnings), warnings
