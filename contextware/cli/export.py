"""``export.py``: write the project's facts and episodes as JSON Lines, to commit with the code."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from contextware.cli import open_project
from contextware.cli.memory_file import memory_file_parser, memory_file_path

DESCRIPTION = """Export the project's facts and episodes (logs with --include-logs) as JSON Lines: a
version header, then one memory a line in (created_at, id) order, fixed key order, no vectors, times
in ISO 8601 UTC, secrets redacted; a deleted memory as a tombstone line (until tombstone_days). The
same memory always gives the same file, so it diffs well and can be committed; teammates merge it
with `import` (format: docs/memory-file.md). Default file: .contextware/memory.jsonl in the project
(--output - prints the JSON Lines on stdout instead of the usual JSON result)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    logs = "also export conversation logs (left out by default)"
    return memory_file_parser(prog, DESCRIPTION, ["--output", "-o"], "where to write", "stdout", "--include-logs", logs)


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.core.errors import UsageError, disk_full, is_disk_full
    from contextware.memory.team.share import export_memory

    project = open_project(args)
    try:
        return export_memory(project, memory_file_path(project, args.output), include_logs=args.include_logs)
    except UsageError as exc:  # a write refused by a full disk is disk_full (exit 1), as every write's
        cause = exc.__context__
        if exc.code == "not_writable" and cause is not None and is_disk_full(cause):
            raise disk_full(cause, "the export (the previous file is kept)") from None
        raise


def raw_output(result: dict[str, Any]) -> str | None:
    """``--output -``: the JSON Lines are the output."""
    return result.get("jsonl")


def render_text(result: dict[str, Any]) -> str:
    from contextware.cli.render import counts_line

    where = result.get("path", "stdout")
    verb = "Exported" if result.get("changed", True) else "Unchanged:"
    lines = [f"{verb} {result['rows']} memories to {where} ({counts_line(result['counts'])})."]
    if result.get("tombstones"):
        lines.append(f"Tombstones of deleted memories: {result['tombstones']}.")
    if result.get("redacted"):
        lines.append("Redacted: " + counts_line(result["redacted"]))
    return "\n".join(lines)
