"""pytest plugin: run the REAL Claude Code CLI offline against ``tests/support/fake_anthropic_api.py``.

Fixtures:
- ``fake_anthropic_api``: a started :class:`FakeAnthropicAPI` (stopped after the test);
- ``claude_env``: an environment for the CLI (throwaway HOME, API key, base URL of the fake,
  telemetry, auto-update and non-essential traffic off) with this environment's ``contextware``
  command first on PATH, as a user who installed the tool has it;
- ``claude_bin``: the installed real CLI: ``$CONTEXTWARE_TEST_CLAUDE_BIN``, else the cache folder
  of ``.ci/install_npm_cli.sh`` (see ``host_cli_fixtures``); skipped when neither exists, failed when
  ``CI`` is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_anthropic_api import FakeAnthropicAPI
from tests.support.host_cli_fixtures import PinnedCli, serve

CLAUDE_CODE = PinnedCli(
    "Claude Code", "@anthropic-ai/claude-code", "2.1.328", "claude-code", "claude", "CONTEXTWARE_TEST_CLAUDE_BIN"
)
CLAUDE_CODE_VERSION = CLAUDE_CODE.version


def installed_claude_bin() -> str | None:
    return CLAUDE_CODE.installed()


def make_claude_env(home: Path, base_url: str) -> dict[str, str]:
    """A HOME for Claude Code whose PATH has ``contextware`` in ``~/.local/bin`` (where ``uv tool install``
    puts it; here a link to this environment's command), as a user's shell would."""
    tool_bin = home / ".local" / "bin"
    tool_bin.mkdir(parents=True, exist_ok=True)
    command = tool_bin / "contextware"
    if not command.exists():
        command.symlink_to(Path(sys.executable).parent / "contextware")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_COLOR": "1",
            "PATH": os.pathsep.join([str(tool_bin), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
    )
    return env


def run_claude(
    claude_bin: str, prompt: str, cwd: Path, env: dict[str, str], *extra: str, timeout: float = 180
) -> subprocess.CompletedProcess:
    """``claude -p PROMPT --output-format json`` with stdin closed."""
    return subprocess.run(
        [claude_bin, "-p", prompt, "--output-format", "json", *extra],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def fake_anthropic_api():
    yield from serve(FakeAnthropicAPI)


@pytest.fixture
def claude_env(fake_anthropic_api: FakeAnthropicAPI, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "claude_home"
    home.mkdir()
    return make_claude_env(home, fake_anthropic_api.base_url)


@pytest.fixture(scope="session")
def claude_bin() -> str:
    return CLAUDE_CODE.require()
