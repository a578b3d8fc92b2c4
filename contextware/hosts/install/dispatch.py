"""Wiring Contextware into an agent host (``scripts/install.py``), and taking it out again.

- ``gemini --user`` (default): an extension folder ``<CONTEXTWARE_HOME>/gemini-extension/contextware/``
  (``gemini-extension.json`` with the MCP server and a context file, ``hooks/hooks.json``,
  ``skills/contextware/SKILL.md``), linked with ``gemini extensions link DIR --consent``.
- ``gemini --project``: the same hooks and MCP server merged into ``<root>/.gemini/settings.json``
  (everything else kept) and the skill copied to ``<root>/.gemini/skills/contextware/SKILL.md``.
- ``claude [--user|--project]``: hooks, MCP server and skill for Claude Code (``claude_code``).
- ``mcp --host cursor|vscode|claude-desktop|print``: the MCP server alone, in that host's own file
  (``mcp_hosts``).
- every ``--project`` install also registers the memory file's git merge driver (``git_merge``:
  ``.gitattributes`` and the repository's config), which the last project uninstall of a root removes.
- ``uninstall``: removes exactly what ``<CONTEXTWARE_HOME>/install-manifest.json`` records; a file we
  wrote and nobody changed since gets its original bytes back.

A project's files are committed, so they call ``contextware hook`` / ``contextware mcp`` from PATH
(with a warning when it is not on PATH here); user-level files of an installed package (no clone
around it) run its own Python (``-I -m contextware.hosts.hooks.entry`` / ``...mcp.front``); user-level files of a clone run ``<skill_dir>/.venv/bin/python <skill_dir>/scripts/...`` (hooks and the MCP
server) or ``uv run --no-sync --project <skill_dir> ...`` (commands) after one ``uv sync``, or with ``--python PATH`` (or ``CONTEXTWARE_HOOK_PYTHON``), or when uv is missing,
``PYTHON <skill_dir>/scripts/...``.  Running the same install twice changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from contextware.core.errors import UsageError
from contextware.core.settings import Settings, current_settings
from contextware.hosts.install.shared import InstallResult, MergeDriverReport
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
    replace: bool = False,
) -> InstallResult:
    """Install the hooks, MCP server and skill for ``agent`` at ``scope`` (idempotent); ``replace``:
    repoint Claude Desktop's one server from another project to this one; ``settings``:
    the caller's (``CONTEXTWARE_HOOK_PYTHON``, ``CONTEXTWARE_PROJECT_ROOT``), by default this process's.
    A project install also registers the memory file's git merge driver."""
    _check(agent, scope)
    settings = settings or current_settings()
    if scope == "user":  # a project's files are committed: portable unless --python is given
        python = python or settings.hook_python
        result = _install_host(
            agent, None, python=python, link=link, host=host, settings=settings, replace=replace, named=project_root
        )
        return _warn_if_twice(result, agent, resolve_project_root(project_root, settings))
    root = resolve_project_root(project_root, settings)
    result = _install_host(agent, root, python=python, link=link, host=host, settings=settings, replace=replace)
    if agent == "mcp" and (host or "print") == "print":
        return result
    return _with_merge_driver(_warn_if_twice(result, agent, root), root, install=True)


def _warn_if_twice(result: InstallResult, agent: str, root: Path) -> InstallResult:
    """``result`` with a warning when ``agent`` now has our hooks in both scopes for ``root``: the
    hooks answer each event once (``hooks.once``), but two installs are two to keep working, and
    ``doctor`` calls that unhealthy until one goes."""
    if agent == "mcp":
        return result
    from contextware.hosts.install import doctor, loop

    for problem in loop.duplicates(doctor.files_with_our_hooks(root), root):
        if problem["detail"].startswith(f"{agent} "):
            result["warnings"] = [*(result.get("warnings") or []), f"{problem['detail']} Fix: {problem['fix']}."]
    return result


def _install_host(
    agent: str,
    root: Path | None,
    *,
    python: str | None,
    link: bool,
    host: str | None,
    settings: Settings,
    replace: bool = False,
    named: str | None = None,
) -> InstallResult:
    """``named``: ``--project-root`` of a user-scope install (the project Claude Desktop's server serves)."""
    scope = "user" if root is None else "project"
    if agent == "claude":
        from contextware.hosts.install import claude_code

        return claude_code.install(scope, root, python=python)
    if agent == "mcp":
        from contextware.hosts.install import mcp_hosts

        root = root or resolve_project_root(named, settings)
        return mcp_hosts.install(host or "print", scope, root, python=python, replace=replace)
    from contextware.hosts.install import gemini_cli

    if root is None:
        return gemini_cli.install_user(python=python, link=link)
    return gemini_cli.install_project(root, python=python)


def _with_merge_driver(result: InstallResult, root: Path, *, install: bool) -> InstallResult:
    """``result`` with the git merge driver of the memory file registered (or, when no project install
    of ``root`` is left, removed): what that wrote or removed is under ``merge_driver``."""
    from contextware.hosts.install import git_merge
    from contextware.hosts.install.shared import manifest, manifest_path

    with manifest(write=install or manifest_path().exists()) as installs:
        if install:
            done, warnings = git_merge.install(installs, root)
            report: MergeDriverReport = {"driver": git_merge.driver_command(), "written": done, "warnings": warnings}
        else:
            done = git_merge.uninstall(installs, root)
            report = {"removed": done}
    result["changed"] = bool(result.get("changed") or done)
    result["merge_driver"] = report
    return result


def uninstall(
    agent: str = "gemini",
    scope: str = "user",
    *,
    project_root: str | None = None,
    host: str | None = None,
    settings: Settings | None = None,
) -> InstallResult:
    """Remove what ``install`` added at ``scope`` (idempotent); the last project install of a
    folder to go also takes its merge driver."""
    _check(agent, scope)
    settings = settings or current_settings()
    root = resolve_project_root(project_root, settings) if scope == "project" or agent == "mcp" else None
    result = _uninstall_host(agent, scope, root, host=host)
    if scope == "project" and root is not None:
        return _with_merge_driver(result, root, install=False)
    return result


def _uninstall_host(agent: str, scope: str, root: Path | None, *, host: str | None) -> InstallResult:
    if agent == "claude":
        from contextware.hosts.install import claude_code

        return claude_code.uninstall(scope, root if scope == "project" else None)
    if agent == "mcp":
        from contextware.hosts.install import mcp_hosts

        if not host:
            raise UsageError("uninstall mcp needs --host cursor|vscode|claude-desktop.", code="usage")
        assert root is not None  # an MCP host's files are found from the project
        return mcp_hosts.uninstall(host, scope, root)
    from contextware.hosts.install import gemini_cli

    if scope == "user" or root is None:
        return gemini_cli.uninstall_user()
    return gemini_cli.uninstall_project(root)


__all__ = ["install", "uninstall"]
