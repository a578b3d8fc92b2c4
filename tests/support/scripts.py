"""Run ``scripts/<name>.py`` as a subprocess the way an agent does, and read its one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.repo import SCRIPTS


class ScriptResult:
    def __init__(self, proc: subprocess.CompletedProcess) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def json(self) -> dict:
        lines = self.stdout.strip().splitlines()
        assert len(lines) == 1, (
            f"stdout must be one JSON document, got: {self.stdout!r} (stderr: {self.stderr[-2000:]})"
        )
        return json.loads(lines[0])


def run_script(
    name: str,
    *args: str,
    cwd: Path,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> ScriptResult:
    """Run ``scripts/<name>.py`` as a subprocess the way an agent does (from the project dir)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / f"{name}.py"), *args],
        cwd=cwd,
        env=full_env,
        input=input.encode() if isinstance(input, str) else input,
        capture_output=True,
        timeout=timeout,
    )
    return ScriptResult(
        subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    )
