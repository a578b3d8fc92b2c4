"""Shared fixtures, and the fixtures of tests/support/ registered as plugins.  Every test runs
offline: a guard refuses and records any connection to a non-loopback address, in this process and
in every Python subprocess (tests/support/netguard), and the run fails if one was attempted.
Helpers are imported from tests/support/, never from here."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.support")  # before the first import of a helper: readable asserts

from tests.support.repo import NETGUARD_DIR  # noqa: E402
from tests.support.scripts import ScriptResult, run_script  # noqa: E402

sys.path.insert(0, str(NETGUARD_DIR))
import sitecustomize as _netguard  # noqa: E402,F401  - installs the audit hook in this process

# The helpers that hold fixtures (tests/support/__init__.py lists every helper module).
pytest_plugins = [
    "tests.support.gemini_fixtures",
    "tests.support.claude_fixtures",
    "tests.support.offload_helpers",
    "tests.support.service_helpers",
    "tests.support.briefing",
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
    and is ``slow``.  In tests/unit a test that takes over half a second (a browser, a crawl, many
    saves, a table snapshot) is marked ``slow`` by hand, unless it guards a main path that the quick
    check must keep (the prompt hook, the briefing after a turn, recall's filters, supersession, the
    layers).  ``-m "not slow"`` is the fast subset, under a minute on two workers; CI runs everything."""
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

    return Project.open(project_dir)


@pytest.fixture
def script(project_dir: Path):
    def _run(name: str, *args: str, **kw: Any) -> ScriptResult:
        kw.setdefault("cwd", project_dir)
        return run_script(name, *args, **kw)

    return _run
