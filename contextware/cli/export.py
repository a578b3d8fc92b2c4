"""``export.py``: write the project's facts and episodes as JSON Lines, to commit with the code."""

from __future__ import annotations

import argparse
from pathlib import Path

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Export the project's facts and episodes (logs with --include-logs) as JSON Lines: one
memory a line, sorted by id, fixed key order, no vectors, times in ISO 8601 UTC, secrets redacted.
The same memory always gives the same file, so it diffs well and can be committed; teammates merge
it with `import`. Default file: .contextware/memory.jsonl in the project (--output - prints the JSON
Lines on stdout instead of the usual JSON result)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    from contextware.memory.exchange import DEFAULT_FILE

    p = new_parser(prog, DESCRIPTION)
    p.add_argument(
        "--output", "-o", metavar="FILE", help=f"where to write (default: {DEFAULT_FILE} in the project; - for stdout)"
    )
    p.add_argument("--include-logs", action="store_true", help="also export conversation logs (left out by default)")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.memory.exchange import DEFAULT_FILE, export_memory

    project = open_project(args)
    if args.output == "-":
        path = None
    else:
        path = Path(args.output).expanduser().absolute() if args.output else project.root / DEFAULT_FILE
    return export_memory(project, path, include_logs=args.include_logs)


def raw_output(result: dict) -> str | None:
    """``--output -``: the JSON Lines are the output."""
    return result.get("jsonl")


def render_text(result: dict) -> str:
    from contextware.cli.render import counts_line

    where = result.get("path", "stdout")
    verb = "Exported" if result.get("changed", True) else "Unchanged:"
    lines = [f"{verb} {result['rows']} memories to {where} ({counts_line(result['counts'])})."]
    if result.get("redacted"):
        lines.append("Redacted: " + counts_line(result["redacted"]))
    return "\n".join(lines)
