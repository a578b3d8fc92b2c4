"""Claude Desktop has one user-wide config and one ``contextware`` server for every project (issue 23
d): installing from a second project is refused, naming the project it serves, unless ``--replace``
says to repoint it; the same project again changes nothing, and other servers are never touched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextware.cli import run

THEIRS = {"github": {"command": "gh-mcp", "args": ["--stdio"]}}


@pytest.fixture
def desktop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": THEIRS}, indent=2))
    return config


def _install(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    argv = ["mcp", "--host", "claude-desktop", "--python", sys.executable, "--project-root", str(root), *extra]
    code = run("install", argv)
    return code, json.loads(capsys.readouterr().out)


def _served(config: Path) -> str:
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["github"] == THEIRS["github"]
    return servers["contextware"]["env"]["CONTEXTWARE_PROJECT_ROOT"]


def test_a_second_project_never_repoints_claude_desktops_server_silently(desktop: Path, tmp_path: Path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        (root / ".git").mkdir(parents=True)
    assert _install(first, capsys)[0] == 0 and _served(desktop) == str(first)
    before = desktop.read_bytes()

    code, out = _install(second, capsys)
    assert code == 2 and out["error"]["code"] == "serves_another_project", out
    message = out["error"]["message"]
    assert str(first) in message and "--replace" in message and "\n" not in message
    assert desktop.read_bytes() == before  # nothing changed

    code, out = _install(first, capsys)
    assert code == 0 and out["changed"] is False  # the same project again: nothing to do

    code, out = _install(second, capsys, "--replace")
    assert code == 0 and out["changed"] and _served(desktop) == str(second)
