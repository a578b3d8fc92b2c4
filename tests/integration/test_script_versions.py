"""Every script answers `--version` (and at once: no heavy import, no stdin read, nothing written)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contextware import __version__
from tests.support.repo import SCRIPTS


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_every_script_prints_its_version(script, project_dir):
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / script), "--version"],
        cwd=project_dir,
        stdin=subprocess.PIPE,  # a hook must not wait for an event on stdin
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().endswith(__version__) and out.stdout.startswith("contextware"), out.stdout
    assert list(project_dir.iterdir()) == []
