"""pytest plugin: run the REAL Gemini CLI offline against ``tests/support/fake_gemini_api.py``.

Fixtures:
- ``fake_gemini_api``: a started :class:`FakeGeminiAPI` (stopped after the test);
- ``gemini_cli_env``: an environment dict for the CLI (throwaway HOME and TMPDIR, API key, base URL
  of the fake, telemetry / usage statistics / update checks off);
- ``gemini_bin``: the installed real CLI (``.ci/install_npm_cli.sh``, see ``host_cli_fixtures``);
  skipped when missing, failed when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support.fake_gemini_api import FakeGeminiAPI
from tests.support.host_cli_fixtures import PinnedCli, serve

GEMINI_CLI = PinnedCli(
    "Gemini CLI", "@google/gemini-cli", "0.61.0", "gemini-cli", "gemini", "CONTEXTWARE_TEST_GEMINI_BIN"
)
GEMINI_CLI_VERSION = GEMINI_CLI.version

# Everything that keeps the CLI from calling out: usage statistics go to play.googleapis.com
# (Clearcut) unless privacy.usageStatisticsEnabled is false; telemetry and update checks are off too.
GEMINI_TEST_SETTINGS: dict = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False, "logPrompts": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def installed_gemini_bin() -> str | None:
    return GEMINI_CLI.installed()


def write_gemini_home(home: Path, settings: dict | None = None) -> Path:
    """Create ``home/.gemini/settings.json``; returns the home folder."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    data = GEMINI_TEST_SETTINGS if settings is None else settings
    (home / ".gemini" / "settings.json").write_text(json.dumps(data, indent=2))
    return home


def update_gemini_settings(env: Mapping[str, str], changes: dict) -> dict:
    """Deep-merge ``changes`` into the settings.json of ``env``'s HOME; returns the new settings.

    ``update_gemini_settings(env, {"general": {"maxAttempts": 1}})`` makes the CLI fail at once on
    a 429 or an empty reply instead of retrying (for minutes on a 429, ~7 s on an empty reply).
    """
    path = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings = json.loads(path.read_text()) if path.exists() else {}

    def merge(into: dict, new: dict) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    merge(settings, changes)
    write_gemini_home(Path(env["HOME"]), settings)
    return settings


def make_gemini_env(
    home: Path, base_url: str, *, tmpdir: Path | None = None, api_key: str | None = "test-key", relaunch: bool = False
) -> dict[str, str]:
    """Environment for the real CLI against the fake API.

    ``relaunch=False`` sets GEMINI_CLI_NO_RELAUNCH=true: the ``gemini`` launcher then runs the CLI in
    its own process instead of spawning a second node (same exit codes and output; ~0.75 s less CPU
    per start).  Tests of signal handling and process groups should pass ``relaunch=True`` (or drop
    the variable) to get the real launcher.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GEMINI_", "GOOGLE_")) and k not in ("CONTEXTWARE_GEMINI_BIN",)
    }
    env.update(
        {
            "HOME": str(home),
            "GEMINI_CLI_HOME": str(home),
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_TELEMETRY_ENABLED": "false",
            "NO_BROWSER": "true",
            "NO_COLOR": "1",
        }
    )
    if not relaunch:
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
    if api_key is not None:
        env["GEMINI_API_KEY"] = api_key
    if tmpdir is not None:  # the CLI writes gemini-client-error-*.json reports to the temp folder
        tmpdir.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
    return env


@pytest.fixture
def fake_gemini_api():
    yield from serve(FakeGeminiAPI)


@pytest.fixture
def gemini_cli_env(fake_gemini_api: FakeGeminiAPI, tmp_path: Path) -> dict[str, str]:
    home = write_gemini_home(tmp_path / "gemini_home")
    return make_gemini_env(home, fake_gemini_api.base_url, tmpdir=tmp_path / "gemini_tmp")


@pytest.fixture(scope="session")
def gemini_bin() -> str:
    return GEMINI_CLI.require()


@pytest.fixture
def gemini_process_env(gemini_cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test process's environment becomes the fake API's (for code that spawns the CLI with
    the inherited environment, such as the summariser)."""
    for name in list(os.environ):
        if name.startswith(("GEMINI_", "GOOGLE_")) and name not in gemini_cli_env:
            monkeypatch.delenv(name)
    for name, value in gemini_cli_env.items():
        monkeypatch.setenv(name, value)
    return gemini_cli_env


def gemini_turn(
    gemini_bin: str, root: Path, env: Mapping[str, str], prompt: str, *, resume: bool = False
) -> subprocess.CompletedProcess[str]:
    """One headless Gemini CLI turn (``-p``, JSON output) in ``root``, resuming the latest session
    with ``resume``; it must succeed."""
    args = [gemini_bin, "--skip-trust", "-m", "gemini-2.5-flash", "-o", "json", "-p", prompt]
    if resume:
        args[1:1] = ["--resume", "latest"]
    proc = subprocess.run(
        args, cwd=root, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc
