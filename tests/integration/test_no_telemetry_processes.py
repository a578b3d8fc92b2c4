"""The embedding runtime sends nothing and writes nothing outside the project and CONTEXTWARE_HOME.

onnxruntime 1.31 on Linux runs Microsoft's 1DS telemetry client from native threads: loading a model
writes ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and queues events for a collector.  The
tests' network guard sees only Python sockets, so these tests watch the process from outside: the
files it leaves in a fresh HOME, and every ``connect`` it makes under ``strace -f``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import SCRIPTS


def _files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _run(tmp_path: Path, script: str, *args: str, wrapper: list[str] | None = None) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"},
        "HOME": str(home),
        "CONTEXTWARE_HOME": str(home / "cw"),
        "CONTEXTWARE_SERVICE": "off",
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    cmd = [*(wrapper or []), sys.executable, str(SCRIPTS / f"{script}.py"), *args]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    return home, project


def test_loading_the_model_leaves_no_file_outside_the_project_and_contextware_home(tmp_path: Path):
    home, project = _run(tmp_path, "save_fact", "Deploys go through the release pipeline.")
    _run(tmp_path, "recall", "--query", "how do we deploy?")
    outside = {f for f in _files_under(home) if not f.startswith("cw/")}
    assert not outside, f"files written outside the project and CONTEXTWARE_HOME: {sorted(outside)}"
    assert (project / "contextware_data").is_dir()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)")
def test_no_process_attempts_a_network_connection(tmp_path: Path):
    """Every connect() and addressed send of the save and of every thread and child it starts, with
    the real model loaded: none may name an internet address (a DNS lookup connects a UDP socket)."""
    trace = tmp_path / "connect.trace"
    wrapper = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace)]
    _run(tmp_path, "save_fact", "The staging database is restored every Monday.", wrapper=wrapper)
    network = [line for line in trace.read_text().splitlines() if re.search(r"AF_INET6?\b", line)]
    assert not network, "network calls: " + "\n".join(network[:10])
