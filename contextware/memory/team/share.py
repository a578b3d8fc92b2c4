"""Team memory in git: facts and episodes exported as JSON Lines, and merged back in.

``export_memory`` writes the memory file (``memfile``; docs/memory-file.md): a header line, then one
JSON object a line in ``(created_at, id)`` order with a fixed key order, no vectors and times in ISO
8601 UTC (to the second), so the same memory always gives the same bytes, a change shows as a
one-line diff and a new memory as a line at the end.  A deleted fact or episode is written as a
tombstone (``tombstones``) until it expires.  Logs are left out unless asked for (they are long and
personal).  Texts pass through ``redact`` once more on the way out.

``import_memory`` (``importing``: memory bounded by a chunk of rows, not by the file) checks the
whole file before it writes anything (a bad line is a ``UsageError`` naming the line and field),
then merges it id by id: the later version wins (``tombstones.entry_key``:
the file's or this project's copy, a memory or a tombstone), so importing the same file twice changes
nothing and the order of imports does not matter.  Supersession travels with the rows (``status``,
``supersedes``, ``superseded_by``).  A file git left with conflict markers is read as both of its
sides, merged.  Two active facts (or episodes) with the same text under two ids (saved before ids
came from the content, or with another kind) fold into the smaller id on every clone: a file id
that loses is counted under ``duplicates`` and named in ``duplicate_of`` (file id: the id kept),
a local one is replaced.  Vectors are computed on import, and facts and episodes are linked to the
files they name in this project's code index (``memory.code_links``; links are not exported).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from contextware.core.errors import FieldError, UsageError
from contextware.core.redact import redact
from contextware.core.system import write_atomic
from contextware.core.text import iso_of
from contextware.memory.records import collection_for_id
from contextware.memory.team import tombstones
from contextware.memory.team.importing import import_memory
from contextware.memory.team.memfile import (
    DEFAULT_FILE,
    FIELDS,
    FORMAT,
    LEARNED,
    TEXT_FIELDS,
    TIME_FIELDS,
    VERSION,
    Entry,
    entry_id,
    line_order,
    parse_export,
    render,
)
from contextware.storage.schemas import MEMORY_TABLES

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

__all__ = ["DEFAULT_FILE", "FORMAT", "VERSION", "export_memory", "import_memory", "parse_export"]


# -- export -----------------------------------------------------------------------------------------
def export_rows(project: "Project", *, include_logs: bool = False) -> tuple[list[Mapping[str, object]], dict[str, int]]:
    """The entries to export (memories, and the tombstones of deleted ones that still win) in file
    order, and how many secrets were masked on the way out."""
    redacted: dict[str, int] = {}
    out: list[Mapping[str, object]] = []
    stones: dict[str, Mapping[str, object]] = {**tombstones.load(project)}
    for name in MEMORY_TABLES:
        if name == "logs" and not include_logs:
            continue
        table = project.db.open_table(name)
        if table is None:
            continue
        columns = [c for c in FIELDS[name] if c in table.schema.names]

        def read_all(t: "Table" = table, c: list[str] = columns) -> list[Entry]:
            return t.search().select(c).limit(None).to_arrow().to_pylist()

        for row in project.db.read(read_all):
            record: Entry = {}
            for key in FIELDS[name]:
                value = row.get(key)
                if key in LEARNED and value is None:
                    continue  # everyone's: the line as before branches were recorded
                if key in TIME_FIELDS:
                    value = iso_of(value)
                elif key in (*TEXT_FIELDS, "session_id") and isinstance(value, str):
                    clean, found = redact(value, library=key != "session_id")
                    if clean != value:
                        value = clean
                        for k, v in found.items():
                            redacted[k] = redacted.get(k, 0) + v
                record[key] = value
            out.append(tombstones.later(record, stones.pop(entry_id(record), None)) or record)
    kinds = {"facts", "episodes", *(["logs"] if include_logs else [])}
    out += [s for s in stones.values() if collection_for_id(entry_id(s)) in kinds]
    out.sort(key=line_order)
    return out, redacted


def render_jsonl(rows: Sequence[Mapping[str, object]]) -> str:
    return render(rows)


class _Exported(TypedDict):
    rows: int
    counts: dict[str, int]
    include_logs: bool


class Exported(_Exported, total=False):
    """What an export wrote (``path``, whether the file ``changed``) or, with no path, its text
    (``jsonl``); how many memories by collection, tombstones and secrets masked."""

    tombstones: int
    redacted: dict[str, int]
    jsonl: str
    path: str
    changed: bool


def export_memory(project: "Project", path: Path | None, *, include_logs: bool = False) -> Exported:
    """Write the export to ``path`` (default ``<root>/.contextware/memory.jsonl``); with ``path`` None
    the text is returned under ``jsonl`` for the caller to print."""
    rows, redacted = export_rows(project, include_logs=include_logs)
    text = render_jsonl(rows)
    live = [r for r in rows if not tombstones.is_tombstone(r)]
    counts = {name: sum(1 for r in live if collection_for_id(entry_id(r)) == name) for name in MEMORY_TABLES}
    if not include_logs:
        counts.pop("logs")
    result: Exported = {"rows": len(live), "counts": counts, "include_logs": include_logs}
    if len(live) != len(rows):
        result["tombstones"] = len(rows) - len(live)
    if redacted:
        result["redacted"] = redacted
    if path is None:
        return {**result, "jsonl": text}
    try:
        before = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        before = None
    if path.exists() and not path.is_file():
        raise FieldError(f"{path} is not a file; give another {{field}}.", field="output", code="bad_output")
    if before != text:
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise UsageError(
                f"Cannot write {path}: {exc.strerror}; nothing was exported.", code="not_writable"
            ) from None
    return {**result, "path": project.relpath(path), "changed": before != text}
