"""The MCP server alone, for hosts without our hooks (``install mcp --host ...``): each host's own file
and format, recorded in the manifest so ``uninstall mcp --host ...`` removes exactly our entry.

| host | project scope (committed: ``contextware mcp`` from PATH) | user scope (this machine's runner) |
|---|---|---|
| cursor | ``.cursor/mcp.json`` ``{"mcpServers": {...}}`` | ``~/.cursor/mcp.json`` |
| vscode | ``.vscode/mcp.json`` ``{"servers": {... "type": "stdio"}}`` | the user profile's ``mcp.json`` |
| claude-desktop | (none: it has no projects) | ``claude_desktop_config.json`` in its OS folder |
| print | prints the ``{"mcpServers": ...}`` snippet for any other host; writes nothing |

Cursor and VS Code fill ``${workspaceFolder}`` in, so the server is told its project through
``CONTEXTWARE_PROJECT_ROOT`` whatever folder they start it in; Claude Desktop gets this project's
absolute root (its file is the user's own, never committed).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from contextware.core.errors import ContextwareError, UsageError
from contextware.core.system import relative_posix
from contextware.hosts.install.installed_files import json_edit, record_and_write, undo
from contextware.hosts.install.shared import (
    NAME,
    InstallResult,
    choose_runner,
    install_result,
    manifest,
    manifest_path,
    mcp_server,
    missing_paths,
    sync_environment,
)

HOSTS = ("cursor", "vscode", "claude-desktop", "print")
WORKSPACE = "${workspaceFolder}"


def _app_config_dir() -> Path:
    """The OS's per-user application folder (Application Support, %APPDATA%, $XDG_CONFIG_HOME)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def config_file(host: str, scope: str, root: Path) -> tuple[Path, str]:
    """(file, key of the servers object) for ``host`` at ``scope``."""
    if host == "cursor":
        return (root if scope == "project" else Path.home()) / ".cursor" / "mcp.json", "mcpServers"
    if host == "vscode":
        where = root / ".vscode" if scope == "project" else _app_config_dir() / "Code" / "User"
        return where / "mcp.json", "servers"
    if host == "claude-desktop":
        return _app_config_dir() / "Claude" / "claude_desktop_config.json", "mcpServers"
    raise UsageError(f"Unknown MCP host {host!r}: use one of {', '.join(HOSTS)}.", code="bad_host")


def server_entry(host: str, server: dict[str, Any], root: Path) -> dict[str, Any]:
    if host == "claude-desktop":
        return {**server, "env": {"CONTEXTWARE_PROJECT_ROOT": str(root)}}
    entry = {**server, "env": {"CONTEXTWARE_PROJECT_ROOT": WORKSPACE}}
    return {"type": "stdio", **entry} if host == "vscode" else entry


def _check(host: str, scope: str) -> None:
    if host not in HOSTS:
        raise UsageError(f"Unknown MCP host {host!r}: use one of {', '.join(HOSTS)}.", code="bad_host")
    if host == "claude-desktop" and scope == "project":
        raise UsageError(
            "Claude Desktop has no project settings: install it with --user (it then serves this project).",
            code="bad_scope",
        )


def _served_elsewhere(path: Path, key_name: str, root: Path) -> str | None:
    """The project our server in Claude Desktop's one user file serves, when it is not ``root``."""
    from contextware.hosts.install import settings_merge

    current = settings_merge.read_text(path)
    servers = settings_merge.parse_settings(path, current).get(key_name)
    ours = servers.get(NAME) if isinstance(servers, dict) else None
    if not isinstance(ours, dict) or not settings_merge.is_our_mcp_server(ours):
        return None
    env = ours.get("env")
    served = env.get("CONTEXTWARE_PROJECT_ROOT") if isinstance(env, dict) else None
    return served if isinstance(served, str) and served and served != str(root) else None


def install(host: str, scope: str, root: Path, *, python: str | None, replace: bool = False) -> InstallResult:
    _check(host, scope)
    if host == "claude-desktop" and not replace:  # one server for every project: never repointed silently
        path, key_name = config_file(host, scope, root)
        other = _served_elsewhere(path, key_name, root)
        if other is not None:
            raise UsageError(
                f"Claude Desktop's contextware server already serves {other} (it has one for all projects); "
                f"run again with --replace to serve {root} instead (the memory of {other} is kept).",
                code="serves_another_project",
            )
    runner, warnings = choose_runner(python, project=scope == "project")
    server = mcp_server(runner)
    if host == "print":
        argv = [server["command"], *server["args"]]
        if missing_paths(argv) and not runner.portable:
            sync_environment(runner)  # a clone's environment not made yet: the printed paths must exist
        missing = missing_paths(argv)
        if missing and not runner.portable:
            raise ContextwareError(
                f"{missing[0]} does not exist, so the MCP server could not start from this snippet; "
                "run `uv sync` in the Contextware clone (or install it with `uv tool install`) and try again.",
                code="not_installed",
            )
        # The project named twice (a host starts servers from its own folder): the entry works from anywhere.
        entry = {**server, "cwd": str(root), "env": {"CONTEXTWARE_PROJECT_ROOT": str(root)}}
        return install_result(
            "mcp",
            "print",
            scope,
            host=host,
            project_root=str(root),
            config={"mcpServers": {NAME: entry}},
            next=(
                f"Put the {NAME!r} entry under your host's MCP servers (its mcpServers or servers map, in the "
                f"host's own MCP config file); it serves the memory of {root} from any folder the host starts in."
            ),
            runner=runner.kind,
            warnings=warnings,
        )
    path, key_name = config_file(host, scope, root)
    edit = json_edit("config", path, mcp=server_entry(host, server, root), mcp_key=key_name)
    sync_environment(runner)
    with manifest(write=True) as installs:
        fields = {"scope": scope, "host": host, "project_root": str(root), "runner": runner.kind}
        written = record_and_write(installs, _key(host, scope, root), [edit], fields, _show(scope, root))
    return install_result(
        "mcp",
        "install",
        scope,
        host=host,
        written=written,
        config_file=str(path),
        project_root=str(root),
        runner=runner.kind,
        mcp_server=server,
        warnings=warnings,
        next=f"Restart {host} to load the contextware MCP server.",
    )


def uninstall(host: str, scope: str, root: Path) -> InstallResult:
    _check(host, scope)
    if host == "print":
        return install_result("mcp", "uninstall", scope, host=host, warnings=["print writes nothing to remove."])
    path, key_name = config_file(host, scope, root)
    with manifest(write=manifest_path().exists()) as installs:
        out, warnings = undo(
            installs, _key(host, scope, root), {"config": (path, "json", key_name)}, _show(scope, root)
        )
    return install_result("mcp", "uninstall", scope, host=host, **out, config_file=str(path), warnings=warnings)


def _key(host: str, scope: str, root: Path) -> str:
    return f"mcp:{host}:project:{root}" if scope == "project" else f"mcp:{host}:user"


def _show(scope: str, root: Path):
    return (lambda p: relative_posix(p, root)) if scope == "project" else str


__all__ = ["HOSTS", "install", "uninstall"]
