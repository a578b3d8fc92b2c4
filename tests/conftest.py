"""Shared fixtures.  Every test runs offline: a guard refuses and records any connection to a
non-loopback address, in this process and in every Python subprocess (tests/netguard), and the run
fails if one was attempted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contextware.settings import Settings

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
NETGUARD_DIR = Path(__file__).parent / "netguard"

sys.path.insert(0, str(NETGUARD_DIR))
import sitecustomize as _netguard  # noqa: E402,F401  - installs the audit hook in this process

pytest_plugins = [
    f"tests.{name}"
    for name in ("gemini_fixtures", "claude_fixtures")
    if (Path(__file__).parent / f"{name}.py").exists()
]


def pytest_configure(config: pytest.Config) -> None:
    log = Path(config.rootpath) / ".pytest_cache" / "netguard.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    os.environ["CONTEXTWARE_NETGUARD_LOG"] = str(log)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(NETGUARD_DIR), os.environ.get("PYTHONPATH")]))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["LANCEDB_LOG"] = "error"
    # Let the processes the tests start cache their bytecode: with PYTHONDONTWRITEBYTECODE set (some
    # machines set it for everything) each script compiled ~350 modules again, 0.3-0.5 s of CPU a call.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False  # and this process, for the test modules pytest rewrites


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration starts processes (our scripts, the real Gemini CLI, servers)
    and is ``slow``; in tests/unit the long ones are marked by hand.  ``-m "not slow"`` is the fast subset."""
    integration = Path(__file__).parent / "integration"
    for item in items:
        if integration in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    log = Path(os.environ.get("CONTEXTWARE_NETGUARD_LOG", ""))
    if log.is_file() and log.read_text().strip():
        sys.stderr.write("\nNon-loopback network access was attempted during the tests:\n" + log.read_text())
        session.exitstatus = 1


GEMINI_AUTH_VARS = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's own memory, registry or settings, nor their Gemini login (the
    `auto` summariser would otherwise call the real API)."""
    for name in list(os.environ):
        if (name.startswith("CONTEXTWARE_") and name != "CONTEXTWARE_NETGUARD_LOG") or name in GEMINI_AUTH_VARS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("CONTEXTWARE_HOME", str(tmp_path_factory.mktemp("home")))
    # Every caller works in-process unless a test asks for the resident service (and stops it).
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "off")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path_factory.mktemp("gemini_home")))


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def project(project_dir: Path) -> Any:
    from contextware.storage.project import Project

    return Project.open(project_dir, Settings.from_env(os.environ))


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


@pytest.fixture
def script(project_dir: Path):
    def _run(name: str, *args: str, **kw: Any) -> ScriptResult:
        kw.setdefault("cwd", project_dir)
        return run_script(name, *args, **kw)

    return _run
