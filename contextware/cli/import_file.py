"""``import.py``: merge a memory export (from ``export.py``, e.g. a teammate's commit) into the project."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from contextware.cli import open_project
from contextware.cli.memory_file import memory_file_parser, memory_file_path
from contextware.core.errors import UsageError

DESCRIPTION = """Merge a memory export into the project, id by id: the later version of each memory wins
(updated_at; a tombstone's deleted_at deletes it), so importing the same file twice changes nothing
and imports in any order agree. Supersession travels with the facts. The same text under two ids
folds into the smaller id (duplicate_of, folded_into). A file git left with conflict markers is read
as both sides, merged. The whole file is checked first: bad lines exit 2 naming each line and field,
and nothing is written. Format: docs/memory-file.md. Default file: .contextware/memory.jsonl in the
project; - reads standard input."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    dry = "write nothing; list what an import would add or update"
    return memory_file_parser(prog, DESCRIPTION, ["file"], "the export to merge", "stdin", "--dry-run", dry)


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.core.inputs import MAX_IMPORT_BYTES, read_input_file
    from contextware.core.system import fewer_heaps, read_limited
    from contextware.memory.team.share import import_memory

    fewer_heaps()  # a bulk writer: before LanceDB's and onnxruntime's threads start
    project = open_project(args)
    path = memory_file_path(project, args.file)
    if path is None:
        text, name = read_limited(sys.stdin.buffer, MAX_IMPORT_BYTES, "Standard input"), "stdin"
    else:
        name = project.relpath(path)
        if not os.path.lexists(path):
            raise UsageError(f"{name} does not exist; export one with `contextware export`.", code="file_not_found")
        text = read_input_file(path, name, limit=MAX_IMPORT_BYTES, code="bad_import")
    try:
        decoded = text.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{name} is not UTF-8 text; nothing was imported.", code="bad_encoding") from None
    del text  # the bytes: the decoded text is what the import reads
    return import_memory(project, decoded, source=name, dry_run=args.dry_run)


def render_text(result: dict[str, Any]) -> str:
    from contextware.cli.render import counts_line

    verb = "Would import" if result.get("dry_run") else "Imported"
    lines = [
        f"{verb} {result['file']}: {result['added']} added, {result['updated']} updated, "
        f"{result['unchanged']} unchanged, {result['duplicates']} already saved under another id, "
        f"{result.get('deleted', 0)} deleted."
    ]
    if result.get("conflict_markers"):
        lines.append(
            "The file had git conflict markers: both sides were merged; export and commit to conclude the merge."
        )
    for name, counts in result["collections"].items():
        lines.append(f"  {name:<9} {counts_line(counts)}")
    lines += [f"  would {c['change']:<6} {c['id']}" for c in result.get("changes") or []]
    if result.get("redacted"):
        lines.append("Redacted: " + counts_line(result["redacted"]))
    if result.get("degraded"):
        lines.append(f"Warning: {result['degraded']}")
    return "\n".join(lines)
