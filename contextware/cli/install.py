"""``install.py``: wire Contextware's hooks, MCP server and skill into Gemini CLI, or take them out."""

from __future__ import annotations

import argparse

from contextware.cli import add_common, new_parser

DESCRIPTION = """Install Contextware into Gemini CLI, or remove it again.

  gemini [--user]     write a Gemini CLI extension (hooks, MCP server, skill, context file) to
                      $CONTEXTWARE_HOME/gemini-extension/contextware/ and link it with
                      `gemini extensions link` (--no-link: only write the folder)
  gemini --project    merge the hooks and the MCP server into <project_root>/.gemini/settings.json
                      (other settings and hooks kept) and copy the skill to
                      <project_root>/.gemini/skills/contextware/SKILL.md
  uninstall [--user|--project]
                      remove exactly what install added (recorded in
                      $CONTEXTWARE_HOME/install-manifest.json); untouched files get their original
                      bytes back

Hooks (SessionStart, BeforeAgent, AfterAgent, PreCompress) and the MCP server run
`uv run --no-sync --project <skill_dir> <skill_dir>/scripts/...` after one `uv sync`; with --python
PATH (or $CONTEXTWARE_HOOK_PYTHON), or when uv is missing, they run `PATH <skill_dir>/scripts/...`.
Running install again changes nothing ("changed": false). The Gemini CLI binary is $CONTEXTWARE_GEMINI_BIN
or `gemini` on PATH. Project hooks run only in folders Gemini CLI trusts."""


def _scope(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--user",
        dest="scope",
        action="store_const",
        const="user",
        help="for every project of this user, as a linked Gemini CLI extension (default)",
    )
    g.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help="for this project only, in <project_root>/.gemini/",
    )


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    g = sub.add_parser("gemini", help="install into Gemini CLI (--user, the default, or --project)")
    _scope(g)
    g.add_argument(
        "--python",
        metavar="PATH",
        default=None,
        help="run hooks and the MCP server with this Python (it must import contextware) instead of "
        "uv run; default $CONTEXTWARE_HOOK_PYTHON",
    )
    g.add_argument(
        "--no-link",
        action="store_true",
        help="--user: write the extension folder but do not run `gemini extensions link`",
    )
    u = sub.add_parser("uninstall", help="remove what install added (--user, the default, or --project)")
    _scope(u)
    for action in sub.choices.values():
        add_common(action)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.hosts.install import install, uninstall

    scope = args.scope or "user"
    if args.action == "gemini":
        return install("gemini", scope, project_root=args.project_root, python=args.python, link=not args.no_link)
    return uninstall("gemini", scope, project_root=args.project_root)


def render_text(result: dict) -> str:
    where = result.get("project_root") or result.get("extension_dir")
    verb = "Installed Contextware into" if result["action"] == "install" else "Removed Contextware from"
    lines = [f"{verb} Gemini CLI ({result['scope']} scope: {where})"]
    for key in ("written", "removed", "kept"):
        lines += [f"  {key:<8}{path}" for path in result.get(key) or []]
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
