"""Claude Code (dispatched by ``dispatch``): hooks, the MCP server and the skill, for
one project or for the user; their exact removal; and the plugin folder shipped in the repository.

- ``--project`` (committed files, so portable: ``contextware hook`` / ``contextware mcp`` from PATH):
  hooks merged into ``<root>/.claude/settings.json``, the MCP server into ``<root>/.mcp.json``, the
  skill in ``<root>/.claude/skills/contextware/SKILL.md``.
- ``--user`` (this machine's runner): hooks in ``~/.claude/settings.json``, the MCP server in
  ``~/.claude.json`` (``mcpServers``, what ``claude mcp add --scope user`` writes; written directly so
  no ``claude`` binary is needed), the skill in ``~/.claude/skills/contextware/``.  ``CLAUDE_CONFIG_DIR``
  moves both, as it does for Claude Code.
- The plugin (``plugins/claude/contextware/`` with the marketplace ``.claude-plugin/marketplace.json``
  at the repository's root) carries the same hooks, MCP server and skill in portable form; a test
  checks it matches :func:`plugin_files`.

Events: SessionStart (briefing), UserPromptSubmit (relevant memory, Gemini's BeforeAgent), Stop
(the turn saved; the prompt is read from the transcript), PreCompact (unsaved turns).  Hook
timeouts are in seconds here (Gemini's are in milliseconds).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextware import __version__
from contextware.core.system import relative_posix
from contextware.hosts.install import settings_merge
from contextware.hosts.install.installed_files import json_edit, record_and_write, text_edit, undo
from contextware.hosts.install.shared import (
    NAME,
    PORTABLE_COMMAND,
    InstallResult,
    Runner,
    choose_runner,
    install_result,
    manifest,
    manifest_path,
    mcp_server,
    skill_dir,
    skill_text,
    sync_environment,
)

HOOK_EVENTS = {"SessionStart": 30, "UserPromptSubmit": 20, "Stop": 30, "PreCompact": 60}  # seconds
USER_KEY = "claude:user"
PLUGIN_DIR = Path("plugins") / "claude" / NAME  # in the repository
PLUGIN_HOST = "claude-plugin"


def hook_definitions(runner: Runner, host: str = "claude") -> dict[str, dict[str, Any]]:
    command = runner.hook_command("hook.py", "--host", host)
    return {
        event: {
            "matcher": "",
            "hooks": [
                {"type": "command", "command": command, "timeout": timeout, "name": settings_merge.hook_name(event)}
            ],
        }
        for event, timeout in HOOK_EVENTS.items()
    }


def config_dir() -> Path:
    """Claude Code's user folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() if raw else Path.home() / ".claude"


def user_state_file() -> Path:
    """Where Claude Code keeps user-scope MCP servers: ``~/.claude.json`` (inside CLAUDE_CONFIG_DIR when set)."""
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() / ".claude.json" if raw else Path.home() / ".claude.json"


def _project_paths(root: Path) -> dict[str, Path]:
    return {
        "settings": root / ".claude" / "settings.json",
        "mcp": root / ".mcp.json",
        "skill": root / ".claude" / "skills" / NAME / "SKILL.md",
    }


def _user_paths() -> dict[str, Path]:
    return {
        "settings": config_dir() / "settings.json",
        "mcp": user_state_file(),
        "skill": config_dir() / "skills" / NAME / "SKILL.md",
    }


def _edits(paths: dict[str, Path], runner: Runner, mcp: dict[str, Any]) -> list[Any]:
    return [
        json_edit("settings", paths["settings"], hooks=hook_definitions(runner)),
        json_edit("mcp", paths["mcp"], mcp=mcp),
        text_edit("skill", paths["skill"], skill_text(runner)),
    ]


def install(scope: str, root: Path | None, *, python: str | None) -> InstallResult:
    """Install for ``scope`` ("project": ``root``'s committed files; "user": this user's). Idempotent."""
    project = scope == "project"
    runner, warnings = choose_runner(python, project=project)
    if project:
        assert root is not None
        paths, key, show = _project_paths(root), f"claude:project:{root}", lambda p: relative_posix(p, root)
        mcp = mcp_server(runner)
    else:
        paths, key, show = _user_paths(), USER_KEY, str
        mcp = {"type": "stdio", **mcp_server(runner), "env": {}}  # the shape `claude mcp add -s user` writes
    edits = _edits(paths, runner, mcp)
    sync_environment(runner)
    with manifest(write=True) as installs:
        fields = {"scope": scope, "project_root": str(root) if root else None, "runner": runner.kind}
        written = record_and_write(installs, key, edits, fields, show)
    if project:
        warnings.append(
            "Claude Code asks once, in an interactive session, to approve the project's .mcp.json servers "
            "(`claude -p` runs load them without asking)."
        )
    return install_result(
        "claude",
        "install",
        scope,
        written=written,
        project_root=str(root) if root else None,
        runner=runner.kind,
        hook_command=runner.hook_command("hook.py", "--host", "claude"),
        mcp_server=mcp_server(runner),
        warnings=warnings,
        next=f"Start claude in {root}." if root else "Start claude in any project.",
    )


def uninstall(scope: str, root: Path | None) -> InstallResult:
    """Remove exactly what :func:`install` added at ``scope`` (idempotent)."""
    if scope == "project":
        assert root is not None
        paths, key, show = _project_paths(root), f"claude:project:{root}", lambda p: relative_posix(p, root)
    else:
        paths, key, show = _user_paths(), USER_KEY, str
    defaults = {
        "settings": (paths["settings"], "json", None),
        "mcp": (paths["mcp"], "json", None),
        "skill": (paths["skill"], "text", None),
    }
    with manifest(write=manifest_path().exists()) as installs:
        out, warnings = undo(installs, key, defaults, show, (paths["skill"].parent,))
    return install_result(
        "claude", "uninstall", scope, **out, project_root=str(root) if root else None, warnings=warnings
    )


# -- the plugin ------------------------------------------------------------------------------------
def plugin_files() -> dict[str, str]:
    """The plugin folder's files (relative path -> text): portable commands only, so the folder can be
    committed and installed on any machine that has ``contextware`` on PATH."""
    runner = Runner("command", PORTABLE_COMMAND)
    hooks = hook_definitions(runner, PLUGIN_HOST)
    manifest_doc = {
        "name": NAME,
        "version": __version__,
        "description": "Persistent, searchable memory of the current project (facts, decisions, lessons, code "
        "index): briefed at session start, recalled into every prompt, each turn saved. Needs the `contextware` "
        "command on PATH.",
        "author": {"name": "Contextware"},
        "keywords": ["memory", "context", "mcp"],
    }

    def dump(doc: Mapping[str, object]) -> str:
        return json.dumps(doc, indent=2) + "\n"

    return {
        ".claude-plugin/plugin.json": dump(manifest_doc),
        "hooks/hooks.json": dump({"hooks": {event: [definition] for event, definition in hooks.items()}}),
        ".mcp.json": dump({"mcpServers": {NAME: mcp_server(runner)}}),
        f"skills/{NAME}/SKILL.md": skill_text(runner),
    }


def marketplace_file() -> str:
    """``.claude-plugin/marketplace.json`` at the repository's root, listing the plugin."""
    doc = {
        "name": NAME,
        "owner": {"name": "Contextware"},
        "description": "Contextware: a local, searchable memory of your project for Claude Code.",
        "plugins": [
            {
                "name": NAME,
                "source": f"./{PLUGIN_DIR.as_posix()}",
                "description": "Project memory for Claude Code: hooks, MCP server and skill.",
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def write_plugin(repo: Path | None = None) -> list[str]:
    """(Re)write the plugin folder and the marketplace file in the repository; returns what changed."""
    from contextware.hosts.install.shared import put_text

    repo = repo or skill_dir()
    files = {(PLUGIN_DIR / rel).as_posix(): text for rel, text in plugin_files().items()}
    files[".claude-plugin/marketplace.json"] = marketplace_file()
    return [rel for rel, text in files.items() if put_text(repo / rel, text, [])]


__all__ = ["install", "marketplace_file", "plugin_files", "uninstall", "write_plugin"]
