"""``install.py``: wire Contextware's hooks, MCP server and skill into Gemini CLI, Claude Code or any
MCP host, or take them out."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser

if TYPE_CHECKING:
    from contextware.hosts.install.shared import InstallResult

DESCRIPTION = """Install Contextware into an agent host, or remove it again.

  gemini [--user]     write a Gemini CLI extension (hooks, MCP server, skill, context file) to
                      $CONTEXTWARE_HOME/gemini-extension/contextware/ and link it with
                      `gemini extensions link` (--no-link: only write the folder)
  gemini --project    merge the hooks and the MCP server into <project_root>/.gemini/settings.json
                      (other settings and hooks kept) and copy the skill to
                      <project_root>/.gemini/skills/contextware/SKILL.md
  claude [--user]     Claude Code for every project: hooks in ~/.claude/settings.json, the MCP
                      server in ~/.claude.json, the skill in ~/.claude/skills/contextware/
  claude --project    this project: .claude/settings.json, .mcp.json, .claude/skills/contextware/
  mcp --host HOST [--user|--project]
                      only the MCP server, in HOST's own file: cursor (.cursor/mcp.json,
                      ~/.cursor/mcp.json), vscode (.vscode/mcp.json, the user profile's mcp.json),
                      claude-desktop (claude_desktop_config.json, --user only), or print (print
                      the snippet for any other host, with this project's root as its cwd
                      and CONTEXTWARE_PROJECT_ROOT, and where to put it; writes nothing)
  uninstall [gemini|claude|mcp] [--host HOST] [--user|--project]
                      remove exactly what install added (recorded in
                      $CONTEXTWARE_HOME/install-manifest.json); untouched files get their original
                      bytes back; the agent defaults to gemini

Files a project commits (--project) call `contextware hook` and `contextware mcp` from PATH, so
they work on every machine with Contextware installed (`uv tool install <skill_dir>`); when the
command is not on PATH here, "warnings" says so with the command that fixes it. User-level files,
run from a clone, start `<skill_dir>/.venv/bin/python <skill_dir>/scripts/...` after one `uv sync`;
run from an installed package (`uv tool install`), that install's own Python
(`python -I -m contextware.hosts.hooks.entry`, `... contextware.hosts.mcp.front`; the skill's
commands call its `contextware` by full path). With --python PATH (or $CONTEXTWARE_HOOK_PYTHON), or when uv is missing, that Python
runs them (--python with --project writes that path into the project's files, with a warning).
`contextware doctor` checks what got installed.
Running install again changes nothing ("changed": false). The Gemini CLI binary is $CONTEXTWARE_GEMINI_BIN
or `gemini` on PATH. Project hooks run only in folders Gemini CLI trusts."""


def _scope(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--user",
        dest="scope",
        action="store_const",
        const="user",
        help="for every project of this user (default; Gemini CLI: a linked extension)",
    )
    g.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help="for this project only, in files the project commits (.gemini/, .claude/, .mcp.json, ...)",
    )


def _python(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--python",
        metavar="PATH",
        default=None,
        help="run hooks and the MCP server with this Python (it must import contextware) instead of "
        "uv run or, for --project, the contextware command; default $CONTEXTWARE_HOOK_PYTHON (user scope)",
    )


def _host(p: argparse.ArgumentParser, required: bool) -> None:
    from contextware.hosts.install.mcp_hosts import HOSTS

    p.add_argument(
        "--host", choices=HOSTS, required=required, default=None, help="the MCP host whose config file to write"
    )


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    g = sub.add_parser("gemini", help="install into Gemini CLI (--user, the default, or --project)")
    _scope(g)
    _python(g)
    g.add_argument(
        "--no-link",
        action="store_true",
        help="--user: write the extension folder but do not run `gemini extensions link`",
    )
    c = sub.add_parser("claude", help="install into Claude Code (--user, the default, or --project)")
    _scope(c)
    _python(c)
    m = sub.add_parser("mcp", help="only the MCP server, in a host's own config file (--host)")
    _host(m, required=True)
    _scope(m)
    _python(m)
    m.add_argument(
        "--replace",
        action="store_true",
        help="claude-desktop: serve this project even though its one server serves another",
    )
    u = sub.add_parser("uninstall", help="remove what install added (--user, the default, or --project)")
    u.add_argument("agent", nargs="?", choices=("gemini", "claude", "mcp"), default="gemini", help="default gemini")
    _host(u, required=False)
    _scope(u)
    for action in sub.choices.values():
        add_common(action)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.hosts.install.dispatch import install, uninstall

    scope = args.scope or "user"
    if args.action == "uninstall":
        return uninstall(
            args.agent, scope, project_root=args.project_root, host=args.host, settings=getattr(args, "settings", None)
        )
    return install(
        args.action,
        scope,
        project_root=args.project_root,
        python=args.python,
        link=not getattr(args, "no_link", False),
        host=getattr(args, "host", None),
        settings=getattr(args, "settings", None),
        replace=getattr(args, "replace", False),
    )


HOST_NAMES = {"gemini": "Gemini CLI", "claude": "Claude Code", "cursor": "Cursor", "vscode": "VS Code"}


def render_text(result: "InstallResult") -> str:
    if result["action"] == "print":
        import json

        return json.dumps(result["config"], indent=2)
    where = result.get("project_root") or result.get("extension_dir") or result.get("config_file") or "~"
    verb = "Installed Contextware into" if result["action"] == "install" else "Removed Contextware from"
    host = result.get("host") or result["agent"]
    lines = [f"{verb} {HOST_NAMES.get(host, host)} ({result['scope']} scope: {where})"]
    for key, paths in (("written", result["written"]), ("removed", result["removed"]), ("kept", result.get("kept"))):
        lines += [f"  {key:<8}{path}" for path in paths or []]
    if result.get("linked_now"):
        lines.append(f"  linked  gemini extensions link {result.get('extension_dir')}")
    if result.get("unlinked"):
        lines.append("  unlinked the contextware extension from Gemini CLI")
    if not result["changed"]:
        lines.append(
            "Nothing changed: "
            + ("already installed." if result["action"] == "install" else "nothing of Contextware was installed there.")
        )
    if result.get("hook_command"):
        lines.append(f"Hook command: {result['hook_command']}")
    lines += [f"warning: {w}" for w in result.get("warnings") or []]
    if result.get("next") and result["changed"]:
        lines.append(result["next"])
    return "\n".join(lines)
