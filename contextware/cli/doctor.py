"""``contextware doctor``: check that Contextware works here as the hosts will use it, and say what to do."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser

if TYPE_CHECKING:
    from contextware.hosts.install.doctor import DoctorReport

DESCRIPTION = """Check an install end to end, for this project and this user, and say what to do.

  command    `contextware` is on the PATH a host will have (this environment's own bin/ left out)
  hook       every installed hook command (and this install's own) answers a SessionStart event
  loop       each installed host's hooks run a session start, a prompt and a turn end against this
             project's memory (the sample turn is removed after); says what the model would receive
  duplicate  one host installed in both project and user scope
  hooks_log  hook failures of the last day in hooks.log (hooks fail open: a failure shows only there)
  mcp        every installed MCP server (and this install's own) answers initialize and tools/list
  service    the project's resident service starts and answers
  data       every table of the project's memory is readable
  briefing   the session briefing reads, as `contextware context` reads it

Each check says ok or the problem and its fix; "healthy" is true when all are ok. Exit 0 when
healthy, 1 when not (the report is printed either way, with an "unhealthy" error)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> DoctorReport:
    from contextware.hosts.install.doctor import doctor

    return doctor(args.project_root)


def failure(result: DoctorReport) -> dict[str, str] | None:
    """The error of an unhealthy report (exit 1): its first problem."""
    if result["healthy"]:
        return None
    first = next(c for c in result["checks"] if not c["ok"])
    message = f"{result['problems']} problem(s); first, {first['name']}: {first['detail']}"
    return {"code": "unhealthy", "message": message}


def render_text(result: DoctorReport) -> str:
    from contextware.cli.render import paint

    lines = [f"Contextware {result['version']} for {result['project_root']}"]
    for check in result["checks"]:
        mark = paint(f"{'ok':<7}", "green") if check["ok"] else paint("PROBLEM", "bold", "red")
        lines.append(f"{mark} {check['name']:<8} {check['detail']}")
        if check.get("fix"):
            lines.append(f"        fix: {check['fix']}")
    lines.append("Healthy." if result["healthy"] else f"{result['problems']} problem(s): see the fixes above.")
    return "\n".join(lines)
