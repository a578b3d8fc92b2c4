"""``install.py mcp --host ...``: the MCP server alone in Cursor's, VS Code's and Claude Desktop's own
config files (formats from their documentation), recorded so that uninstall removes exactly it; the
server the config names really starts and answers (a JSON-RPC initialize over stdio)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repo import REPO
from tests.support.scripts import run_script

THEIRS = {"github": {"command": "gh-mcp", "args": ["--stdio"]}}


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(
    "host, rel, key, extra",
    [
        ("cursor", ".cursor/mcp.json", "mcpServers", {}),
        ("vscode", ".vscode/mcp.json", "servers", {"type": "stdio"}),
    ],
)
def test_project_config_is_the_hosts_own_format_and_uninstall_restores_it(
    project_dir: Path, host: str, rel: str, key: str, extra: dict
):
    path = project_dir / rel
    path.parent.mkdir()
    path.write_text(json.dumps({key: THEIRS}, indent=2) + "\n")
    before = _tree(project_dir)

    out = run_script("install", "mcp", "--host", host, "--project", cwd=project_dir).json
    assert out["ok"] and out["changed"] and out["written"] == [rel], out
    servers = json.loads(path.read_text())[key]
    assert servers["github"] == THEIRS["github"]
    assert servers["contextware"] == {
        **extra,
        "command": "contextware",
        "args": ["mcp"],
        "env": {"CONTEXTWARE_PROJECT_ROOT": "${workspaceFolder}"},  # the host fills its workspace in
    }
    assert run_script("install", "mcp", "--host", host, "--project", cwd=project_dir).json["changed"] is False

    gone = run_script("install", "uninstall", "mcp", "--host", host, "--project", cwd=project_dir).json
    assert gone["changed"] and _tree(project_dir) == before


def test_claude_desktop_and_cursor_user_configs_start_a_working_server(project_dir: Path, tmp_path: Path):
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    desktop = run_script(
        "install", "mcp", "--host", "claude-desktop", "--python", sys.executable, cwd=project_dir, env=env
    )
    assert desktop.returncode == 0, desktop.stdout
    config_file = home / ".config" / "Claude" / "claude_desktop_config.json"
    assert desktop.json["config_file"] == str(config_file)
    server = json.loads(config_file.read_text())["mcpServers"]["contextware"]
    assert server == {
        "command": sys.executable,
        "args": [str(REPO / "scripts" / "mcp_server.py")],
        "env": {"CONTEXTWARE_PROJECT_ROOT": str(project_dir.resolve())},  # Claude Desktop has no project
    }
    # Start the server exactly as the host would, from its home folder, and initialize it.
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    proc = subprocess.run(
        [server["command"], *server["args"]],
        input=json.dumps(request) + "\n",
        cwd=home,
        env={**env, **server["env"], "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    answer = json.loads(proc.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"], proc.stderr[-2000:]

    cursor = run_script("install", "mcp", "--host", "cursor", "--python", sys.executable, cwd=project_dir, env=env)
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["contextware"]["command"] == (
        sys.executable
    ), cursor.stdout
    refused = run_script("install", "mcp", "--host", "claude-desktop", "--project", cwd=project_dir, env=env)
    assert refused.returncode == 2 and refused.json["error"]["code"] == "bad_scope"
    for host in ("claude-desktop", "cursor"):
        gone = run_script("install", "uninstall", "mcp", "--host", host, cwd=project_dir, env=env).json
        assert gone["changed"] and gone["removed"], gone
    assert not (home / ".cursor" / "mcp.json").exists() and not config_file.exists()


def test_print_writes_nothing_and_shows_the_generic_snippet(project_dir: Path):
    out = run_script("install", "mcp", "--host", "print", "--project", "--format", "text", cwd=project_dir)
    root = str(project_dir)
    entry = {"command": "contextware", "args": ["mcp"], "cwd": root, "env": {"CONTEXTWARE_PROJECT_ROOT": root}}
    assert json.loads(out.stdout) == {"mcpServers": {"contextware": entry}}
    assert list(project_dir.iterdir()) == []


def test_print_names_the_project_so_the_entry_works_from_any_folder(project_dir: Path, tmp_path: Path):
    """A host starts the server from its own folder: the printed entry still serves this project."""
    out = run_script("install", "mcp", "--host", "print", "--project", cwd=project_dir).json
    entry = out["config"]["mcpServers"]["contextware"]
    assert entry["cwd"] == str(project_dir) and entry["env"]["CONTEXTWARE_PROJECT_ROOT"] == str(project_dir)
    assert "mcpServers" in out["next"] and str(project_dir) in out["next"]
