"""Wiring Contextware into an agent host (``scripts/install.py``), and taking it out again.

- ``gemini --user`` (default): an extension folder ``<CONTEXTWARE_HOME>/gemini-extension/contextware/``
  (``gemini-extension.json`` with the MCP server and a context file, ``hooks/hooks.json``,
  ``skills/contextware/SKILL.md``), linked with ``gemini extensions link DIR --consent``.
- ``gemini --project``: the same hooks and MCP server merged into ``<root>/.gemini/settings.json``
  (everything else kept) and the skill copied to ``<root>/.gemini/skills/contextware/SKILL.md``.
- ``claude [--user|--project]``: hooks, MCP server and skill for Claude Code (``claude_code``).
- ``mcp --host cursor|vscode|claude-desktop|print``: the MCP server alone, in that host's own file
  (``mcp_hosts``).
- ``uninstall``: removes exactly what ``<CONTEXTWARE_HOME>/install-manifest.json`` records; a file we
  wrote and nobody changed since gets its original bytes back.

A project's files are committed, so they call ``contextware hook`` / ``contextware mcp`` from PATH
(with a warning when it is not on PATH here); user-level files of an installed package (no clone
around it) run its own Python (``-I -m contextware.hosts.hooks.entry`` / ``...mcp.front``); user-level files of a clone run ``<skill_dir>/.venv/bin/python <skill_dir>/scripts/...`` (hooks and the MCP
server) or ``uv run --no-sync --project <skill_dir> ...`` (commands) after one ``uv sync``, or with ``--python PATH`` (or ``CONTEXTWARE_HOOK_PYTHON``), or when uv is missing,
``PYTHON <skill_dir>/scripts/...``.  Running the same install twice changes nothing.
"""

from __future__ import annotations

from contextware.errors import UsageError
from contextware.settings import Settings, current_settings
from contextware.storage.layout import resolve_project_root

AGENTS = ("gemini", "claude", "mcp")


def _check(agent: str, scope: str) -> None:
    if agent not in AGENTS:
        raise UsageError(f"Unknown agent {agent!r}: use one of {', '.join(AGENTS)}.", code="bad_agent")
    if scope not in ("user", "project"):
        raise UsageError(f"Unknown scope {scope!r}: use user or project.", code="bad_scope")


def install(
    agent: str = "gemini",
    scope: str = "user",
    *,
    project_root: str | None = None,
    python: str | None = None,
    link: bool = True,
    host: str | None = None,
    settings: Settings | None = None,
) -> dict:
    """Install the hooks, MCP server and skill for ``agent`` at ``scope`` (idempotent); ``settings``:
    the caller's (``CONTEXTWARE_HOOK_PYTHON``, ``CONTEXTWARE_PROJECT_ROOT``), by default this process's."""
    _check(agent, scope)
    settings = settings or current_settings()
    if scope == "user":  # a project's files are committed: portable unless --python is given
        python = python or settings.hook_python
    if agent == "claude":
        from contextware.hosts.install import claude_code

        root = resolve_project_root(project_root, settings) if scope == "project" else None
        return claude_code.install(scope, root, python=python)
    if agent == "mcp":
        from contextware.hosts.install import mcp_hosts

        return mcp_hosts.install(host or "print", scope, resolve_project_root(project_root, settings), python=python)
    from contextware.hosts.install import gemini_cli

    if scope == "user":
        return gemini_cli.install_user(python=python, link=link)
    return gemini_cli.install_project(resolve_project_root(project_root, settings), python=python)


def uninstall(
    agent: str = "gemini",
    scope: str = "user",
    *,
    project_root: str | None = None,
    host: str | None = None,
    settings: Settings | None = None,
) -> dict:
    """Remove what ``install`` added at ``scope`` (idempotent)."""
    _check(agent, scope)
    settings = settings or current_settings()
    if agent == "claude":
        from contextware.hosts.install import claude_code

        return claude_code.uninstall(
            scope, resolve_project_root(project_root, settings) if scope == "project" else None
        )
    if agent == "mcp":
        from contextware.hosts.install import mcp_hosts

        if not host:
            raise UsageError("uninstall mcp needs --host cursor|vscode|claude-desktop.", code="usage")
        return mcp_hosts.uninstall(host, scope, resolve_project_root(project_root, settings))
    from contextware.hosts.install import gemini_cli

    if scope == "user":
        return gemini_cli.uninstall_user()
    return gemini_cli.uninstall_project(resolve_project_root(project_root, settings))


__all__ = ["install", "uninstall"]
