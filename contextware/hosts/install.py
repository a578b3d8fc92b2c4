"""Wiring Contextware into Gemini CLI (``scripts/install.py``), and taking it out again.

- ``gemini --user`` (default): an extension folder ``<CONTEXTWARE_HOME>/gemini-extension/contextware/``
  (``gemini-extension.json`` with the MCP server and a context file, ``hooks/hooks.json``,
  ``skills/contextware/SKILL.md``), linked with ``gemini extensions link DIR --consent``.
- ``gemini --project``: the same hooks and MCP server merged into ``<root>/.gemini/settings.json``
  (everything else kept) and the skill copied to ``<root>/.gemini/skills/contextware/SKILL.md``.
- ``uninstall``: removes exactly what ``<CONTEXTWARE_HOME>/install-manifest.json`` records; a file we
  wrote and nobody changed since gets its original bytes back.

Hooks and the MCP server run ``uv run --no-sync --project <skill_dir> <skill_dir>/scripts/...`` after
one ``uv sync``; with ``--python PATH`` (or ``CONTEXTWARE_HOOK_PYTHON``), or when uv is missing, they
run ``PYTHON <skill_dir>/scripts/...`` instead.  Running the same install twice changes nothing.
"""

from __future__ import annotations

from contextware.errors import UsageError
from contextware.storage.layout import resolve_project_root


def _check(agent: str, scope: str) -> None:
    if agent != "gemini":
        raise UsageError(f"Unknown agent {agent!r}: only gemini is supported.", code="bad_agent")
    if scope not in ("user", "project"):
        raise UsageError(f"Unknown scope {scope!r}: use user or project.", code="bad_scope")


def install(
    agent: str = "gemini",
    scope: str = "user",
    *,
    project_root: str | None = None,
    python: str | None = None,
    link: bool = True,
) -> dict:
    """Install the hooks, MCP server and skill for ``agent`` at ``scope`` (idempotent)."""
    from contextware.hosts import gemini_cli

    _check(agent, scope)
    if scope == "user":
        return gemini_cli.install_user(python=python, link=link)
    return gemini_cli.install_project(resolve_project_root(project_root), python=python)


def uninstall(agent: str = "gemini", scope: str = "user", *, project_root: str | None = None) -> dict:
    """Remove what ``install`` added at ``scope`` (idempotent)."""
    from contextware.hosts import gemini_cli

    _check(agent, scope)
    if scope == "user":
        return gemini_cli.uninstall_user()
    return gemini_cli.uninstall_project(resolve_project_root(project_root))


__all__ = ["install", "uninstall"]
