"""``contextware doctor``: check that Contextware works here as the hosts will use it, and say what to do."""

from __future__ import annotations

import argparse

from contextware.cli import add_common, new_parser

DESCRIPTION = """Check an install end to end, for this project and this user, and say what to do.

  command   `contextware` is on PATH (what files a project commits call)
  hook      every installed hook command (and this install's own) answers a SessionStart event
  mcp       every installed MCP server (and this install's own) answers initialize and tools/list
  service   the project's resident service starts and answers
  data      every table of the project's memory is readable

Each check says ok or the problem and its fix; "healthy" is true when all are ok (exit code 0 either
way: the answer is the report)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.hosts.install.doctor import doctor

    return doctor(args.project_root)


def render_text(result: dict) -> str:
    from contextware.cli.render import paint

    lines = [f"Contextware {result['version']} for {result['project_root']}"]
    for check in result["checks"]:
        mark = paint(f"{'ok':<7}", "green") if check["ok"] else paint("PROBLEM", "bold", "red")
        lines.append(f"{mark} {check['name']:<8} {check['detail']}")
        if check.get("fix"):
            lines.append(f"        fix: {check['fix']}")
    lines.append("Healthy." if result["healthy"] else f"{result['problems']} problem(s): see the fixes above.")
    return "\n".join(lines)
