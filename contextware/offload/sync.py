"""``sync.py check|rebuild|prune``: the offload files are the source of truth, the ``offloads`` table
an index of them.

- ``check`` compares the two: ``missing`` (files without a row), ``orphans`` (rows whose files are
  gone), ``changed`` (rows that no longer say what their files say), ``incomplete`` (damaged entries),
  and ``stale`` (cached answers whose source files changed since, or past ``cache_ttl_days``).
- ``rebuild`` re-indexes every file into a new table, replacing the old one in one commit; a table
  too damaged to be replaced is moved aside under ``<data_dir>/damaged/`` first.
- ``prune`` deletes the orphan rows.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from contextware.core.errors import ContextwareError, StorageError, UsageError, first_line
from contextware.core.text import sql_str
from contextware.offload.files import (
    FULL_RESPONSE,
    METADATA,
    SUMMARY,
    cache_root,
    data_relative,
    display_path,
    is_temporary,
    read_json,
    read_text,
    session_dir,
)
from contextware.storage.schemas import OFFLOADS_TABLE, table_schema

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project
    from contextware.storage.schemas import OffloadRow

ACTIONS = ("check", "rebuild", "prune")
COMPARED = (
    "summary",
    "prompt_hash",
    "source_hash",
    "source_paths",
    "model",
    "token_count",
    "topics",
    "type",
    "session_name",
    "turn_number",
    "feature",
    "response_file",
    "summary_method",
)
_LIST_LIMIT = 100


def file_rows(project: "Project") -> tuple[dict[str, "OffloadRow"], list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows the files describe, by id; damaged entries; cache entries with their metadata)."""
    from contextware.offload.cache import entry_row
    from contextware.offload.session_admin import session_names
    from contextware.offload.sessions import load_state, synthesis_row, turn_row
    from contextware.offload.summary import truncate_sentences

    rows: dict[str, OffloadRow] = {}
    incomplete: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    root = cache_root(project)
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if not d.is_dir() or is_temporary(d.name):
            continue
        meta, summary = read_json(d / METADATA), read_text(d / SUMMARY)
        if meta is None or summary is None or not (d / FULL_RESPONSE).is_file():
            incomplete.append(
                {
                    "path": project.relpath(d),
                    "reason": "a cache entry lacks metadata.json, summary.md or full_response.md",
                }
            )
            continue
        meta.setdefault("key", d.name)
        meta["response_file"] = data_relative(project, d / FULL_RESPONSE)
        row = entry_row(project, meta, summary)
        rows[row["id"]] = row
        entries.append(meta)
    max_tokens = project.config.summary_max_tokens
    for name in session_names(project):
        sdir = session_dir(project, name)
        state = load_state(sdir)
        if state is None:
            continue
        for turn in state["turns"]:
            if turn.get("summary") is None:  # a turn file session.json does not describe
                turn["summary"] = truncate_sentences(read_text(sdir / turn["file"]) or "", max_tokens)
                turn["summary_method"] = "truncated"
            row = turn_row(project, state, turn)
            rows[row["id"]] = row
        if state["turns"]:
            summary = read_text(sdir / SUMMARY)
            if summary is None:
                summary = truncate_sentences("\n\n".join(t["summary"] for t in state["turns"]), max_tokens)
            row = synthesis_row(project, state, summary)
            rows[row["id"]] = row
    return rows, incomplete, entries


def _indexed(project: "Project") -> dict[str, dict[str, Any]] | None:
    table = project.db.open_table(OFFLOADS_TABLE)
    if table is None:
        return None
    columns = ["id", *COMPARED]
    rows = project.db.read(lambda: table.search().select(columns).limit(None).to_arrow().to_pylist())
    return {r["id"]: r for r in rows}


def _item(project: "Project", row: "OffloadRow | dict[str, Any]", **extra: Any) -> dict[str, Any]:
    response_file, session = row.get("response_file"), row.get("session_name")
    out = {
        "id": row["id"],
        "type": row.get("type"),
        "file": display_path(project, response_file) if isinstance(response_file, str) and response_file else None,
    }
    if session:
        out["session"] = session
    out.update(extra)
    return out


def _norm(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def _stale(project: "Project", entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from contextware.offload.cache import ttl_reason
    from contextware.offload.sources import current_files, stale_reason

    out = []
    for meta in entries:
        reason = ttl_reason(project, meta)
        if reason is None:
            current = current_files(project, meta.get("sources") or [], meta.get("include_dirs") or [])
            reason = current if isinstance(current, str) else stale_reason(meta.get("sources") or [], current)[0]
        if reason:
            out.append(
                {
                    "id": meta.get("id"),
                    "key": meta["key"],
                    "reason": reason,
                    "file": display_path(project, meta["response_file"]),
                }
            )
    return out


class SyncCounts(TypedDict):
    missing: int
    orphans: int
    changed: int
    incomplete: int
    stale: int


class SyncCheck(TypedDict, total=False):
    """``sync check``: the offload files against the index (each list cut to its first entries)."""

    files: int
    index_error: str
    rows: int
    in_sync: bool
    missing: list[dict[str, Any]]
    orphans: list[dict[str, Any]]
    changed: list[dict[str, Any]]
    incomplete: list[dict[str, Any]]
    stale: list[dict[str, Any]]
    counts: SyncCounts
    hint: str


class SyncRebuild(TypedDict, total=False):
    """``sync rebuild``: the index made again from the files."""

    indexed: int
    incomplete: list[dict[str, Any]]
    degraded: str
    moved_damaged_table_to: str


class SyncPrune(TypedDict):
    """``sync prune``: the rows whose files are gone, dropped."""

    pruned: int
    ids: list[str]
    rows: int


def check(project: "Project") -> SyncCheck:
    rows, incomplete, entries = file_rows(project)
    out: SyncCheck = {"files": len(rows)}
    try:
        indexed = _indexed(project)
    except ContextwareError as exc:
        indexed, out["index_error"] = None, exc.message
    indexed_rows = indexed or {}
    out["rows"] = len(indexed_rows)
    missing = [_item(project, rows[i]) for i in sorted(rows) if i not in indexed_rows]
    orphans = [
        _item(project, indexed_rows[i], reason="its file is gone") for i in sorted(indexed_rows) if i not in rows
    ]
    changed = []
    for i in sorted(set(rows) & set(indexed_rows)):
        fields = [f for f in COMPARED if _norm(rows[i].get(f)) != _norm(indexed_rows[i].get(f))]
        if fields:
            changed.append(_item(project, rows[i], fields=fields))
    stale = _stale(project, entries)
    out["in_sync"] = not (missing or orphans or changed or incomplete or out.get("index_error"))
    out["missing"] = missing[:_LIST_LIMIT]
    out["orphans"] = orphans[:_LIST_LIMIT]
    out["changed"] = changed[:_LIST_LIMIT]
    out["incomplete"] = incomplete[:_LIST_LIMIT]
    out["stale"] = stale[:_LIST_LIMIT]
    out["counts"] = {
        "missing": len(missing),
        "orphans": len(orphans),
        "changed": len(changed),
        "incomplete": len(incomplete),
        "stale": len(stale),
    }
    if not out["in_sync"]:
        out["hint"] = (
            "run `uv run scripts/sync.py rebuild` to re-index from the files"
            if (missing or changed or out.get("index_error"))
            else "run `uv run scripts/sync.py prune` to drop the orphan rows"
        )
    return out


def rebuild(project: "Project") -> SyncRebuild:
    """Re-index every offload file into a fresh table (one commit replaces the old table)."""
    import pyarrow as pa

    from contextware.offload.table import embed_rows

    rows, incomplete, _ = file_rows(project)
    embedder = project.embedder
    out: SyncRebuild = {"indexed": len(rows), "incomplete": incomplete[:_LIST_LIMIT]}
    ordered = [rows[i] for i in sorted(rows)]
    if why := embed_rows(project, ordered):
        out["degraded"] = f"{why} Rows were indexed without vectors; run `memory.py reembed` later."
    data = pa.Table.from_pylist(ordered, schema=table_schema(OFFLOADS_TABLE, embedder.dim, embedder.model_id))
    project.ensure_data_dir()
    db = project.db
    with db.write_lock(OFFLOADS_TABLE):
        try:
            db.replace_table(OFFLOADS_TABLE, data)
        except Exception as first:  # noqa: BLE001 - a damaged table cannot be overwritten in place
            moved = _move_aside(project)
            if moved is None:
                raise StorageError(f"Cannot rebuild the offloads index: {first_line(first)}.") from None
            out["moved_damaged_table_to"] = moved
            try:
                db.replace_table(OFFLOADS_TABLE, data)
            except Exception as exc:  # noqa: BLE001
                raise StorageError(f"Cannot rebuild the offloads index: {first_line(exc)}.") from None
    return out


def _move_aside(project: "Project") -> str | None:
    from contextware.storage.layout import is_local_uri

    if not is_local_uri(project.db_uri):
        return None
    path = Path(project.db_uri.removeprefix("file://")) / f"{OFFLOADS_TABLE}.lance"
    if not path.exists():
        return None
    target = project.data_dir / "damaged" / f"{OFFLOADS_TABLE}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.lance"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(target))
    project.db._tables.pop(OFFLOADS_TABLE, None)
    return project.relpath(target)


def prune(project: "Project") -> SyncPrune:
    """Delete the rows whose files are gone."""
    rows, _, _ = file_rows(project)
    indexed = _indexed(project) or {}
    orphans = sorted(i for i in indexed if i not in rows)
    if orphans:

        def write(tbl: "Table") -> None:
            for start in range(0, len(orphans), 500):
                tbl.delete(f"id IN ({', '.join(sql_str(i) for i in orphans[start : start + 500])})")

        project.db.write(OFFLOADS_TABLE, write)  # the table exists: deleting needs no model
    return {"pruned": len(orphans), "ids": orphans[:_LIST_LIMIT], "rows": len(indexed) - len(orphans)}


def sync(project: "Project", action: str) -> Mapping[str, object]:
    if action not in ACTIONS:
        raise UsageError(f"Unknown action {action!r}: use check, rebuild or prune.", code="bad_action")
    return {"action": action, **{"check": check, "rebuild": rebuild, "prune": prune}[action](project)}
