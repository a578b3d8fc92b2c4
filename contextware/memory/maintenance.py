"""Looking after the database: statistics, re-embedding, compaction and repair."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import ContextwareError, DamagedDataError, StorageError
from contextware.core.text import iso
from contextware.memory.results import ReembedReport, Stats, TableStats
from contextware.storage.database import RECOVERY_HINT, vector_dim, vector_model, with_retries
from contextware.storage.embedded_text import embedding_text
from contextware.storage.integrity import damaged_rows, stamp, verify_rows
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import VECTOR_TABLES, table_schema

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project


def _disk_bytes(path: str) -> int | None:
    if not is_local_uri(path) or not os.path.isdir(path):
        return None
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


def stats(project: "Project") -> Stats:
    from contextware.memory.turns.retention import retention_stats
    from contextware.memory.turns.usage import summary as use_summary

    db = project.db
    tables: dict[str, TableStats] = {}
    last_write = None
    for name in db.table_names():
        try:
            table = db.open_table(name)
        except DamagedDataError as exc:  # stats is where one looks first: show the damage, go on
            tables[name] = {"damaged": exc.message}
            continue
        if table is None:
            continue
        try:
            versions = db.read(table.list_versions)
        except DamagedDataError as exc:  # an older manifest unreadable (NUL bytes): shown, not a crash
            tables[name] = {"damaged": exc.message}
            continue
        latest = max((v["timestamp"] for v in versions), default=None)
        info: TableStats = {
            "rows": table.count_rows(),
            "versions": len(versions),
            "version": table.version,
            "last_write": iso(latest),
            "model": vector_model(table.schema),
            "disk_bytes": _disk_bytes(os.path.join(project.db_uri, f"{name}.lance")),
        }
        try:  # counts that read the data, and every row's checksum: Lance reads most flipped bits back silently
            if "vector" in table.schema.names:
                info["missing_vectors"] = db.read(partial(table.count_rows, "vector IS NULL"))
            if name == "facts":
                info["superseded"] = db.read(partial(table.count_rows, "status = 'superseded'"))
            bad = db.read(partial(damaged_rows, name, table))
        except DamagedDataError as exc:
            info["damaged"] = exc.message
        else:
            if bad:
                info["damaged_rows"] = len(bad)
                info["damaged_ids"] = bad[:10]
                info["damaged"] = f"{len(bad)} row(s) do not match what was written; {RECOVERY_HINT}."
        tables[name] = info
        if latest and (last_write is None or latest > last_write):
            last_write = latest
    root_from, data_from = resolved_from(project)
    return {
        "project_root": str(project.root),
        "project_root_from": root_from,
        "data_dir": str(project.data_dir),
        "data_dir_from": data_from,
        "db_uri": project.db_uri,
        "model": project.embedder.model_id,
        "tables": tables,
        "disk_bytes": _disk_bytes(project.db_uri),
        "last_write": iso(last_write),
        "retention": retention_stats(project),
        "use": use_summary(project.data_dir),  # what the prompt hook injected and the agent used
    }


def resolved_from(project: "Project") -> tuple[str, str]:
    """Why this project root and this data dir: which setting, or which rule of ``storage.layout``
    (the git top level above the working directory, a linked worktree sharing its main checkout's)."""
    from contextware.storage.layout import DATA_DIR_NAME, find_git_root, main_worktree, worktrees_mode

    root = project.root
    env_root = project.settings.project_root
    try:
        cwd: Path | None = Path.cwd().resolve()
    except OSError:
        cwd = None
    if env_root and Path(env_root).expanduser().resolve() == root:
        root_from = "CONTEXTWARE_PROJECT_ROOT"
    elif cwd is not None and find_git_root(cwd) == root:
        where = "the working directory" if cwd == root else f"the working directory {cwd}"
        root_from = f"the git top level above {where}"
    elif cwd == root:
        root_from = "the working directory (no git repository above it)"
    else:
        root_from = "--project-root"
    main = main_worktree(root)
    if project.settings.data_dir:
        data_from = "CONTEXTWARE_DATA_DIR"
    elif main is not None and project.data_dir == main / DATA_DIR_NAME:
        data_from = f"shared with the main checkout {main}: {root} is a linked git worktree (worktrees: shared)"
    elif main is not None:
        try:
            mode = worktrees_mode(main)
        except ContextwareError:  # a bad worktrees value
            mode = "not shared"
        data_from = f"this worktree's own: worktrees is {mode}"
    else:
        data_from = f"{DATA_DIR_NAME}/ in the project root"
    return root_from, data_from


def reembed(project: "Project", *, all_rows: bool = False) -> ReembedReport:
    """Fill in missing vectors, or rebuild every vector when the configured model changed."""
    import pyarrow as pa

    db = project.db
    embedder = project.embedder
    report: ReembedReport = {"model": embedder.model_id, "tables": {}}
    for name in VECTOR_TABLES:
        table = db.open_table(name)
        if table is None:
            continue
        changed_model = vector_model(table.schema) != embedder.model_id or vector_dim(table.schema) != embedder.dim
        with db.write_lock(name):
            table.checkout_latest()
            rows = table.to_arrow().to_pylist()
            todo = rows if (all_rows or changed_model) else [r for r in rows if r.get("vector") is None]
            if todo:
                # A new vector and checksum must not vouch for damaged content: repair first.
                verify_rows(name, ({k: v for k, v in r.items() if k != "vector"} for r in todo))
                vectors = embedder.embed([embedding_text(name, r) for r in todo])
                for row, vec in zip(todo, vectors, strict=False):
                    row["vector"] = vec.tolist()
                stamp(name, todo)
            if changed_model:
                schema = table_schema(name, embedder.dim, embedder.model_id)
                data = pa.Table.from_pylist(rows, schema=schema)
                table = db.replace_table(name, data)
            elif todo:
                data = pa.Table.from_pylist(todo, schema=table.schema)

                def update(table: "Table" = table, data: Any = data) -> Any:
                    return table.merge_insert("id").when_matched_update_all().execute(data)

                with_retries(update)
            db._maintain(table, force=bool(todo))
        report["tables"][name] = {"reembedded": len(todo), "rows": len(rows), "model_changed": changed_model}
    return report


def compact(project: "Project") -> dict[str, Any]:
    return {"tables": [project.db.compact(name) for name in project.db.table_names()]}


def repair(project: "Project") -> dict[str, Any]:
    """Make every table readable again, keeping every row that can be read (``storage.salvage``):
    roll back past unreadable manifests, salvage rows by range and by row, re-embed damaged vectors,
    and move aside (under ``damaged/``) only what cannot be read.  Reports per table and in total how
    many rows were kept, recovered and lost; raises ``damaged_data`` if a table is still unreadable."""
    from contextware.storage.salvage import repair_table, verify_readable

    if not is_local_uri(project.db_uri):
        raise StorageError(
            "repair works on a local database only; restore object-store data with your provider's tools."
        )
    if project.data_dir.is_dir() and not os.access(project.data_dir, os.W_OK | os.X_OK):
        raise StorageError(
            f"repair must write in {project.relpath(project.data_dir)}, which is read-only for you; "
            "nothing was changed: make it writable and run repair again."
        )
    db = project.db
    root = project.db_uri
    damaged_dir = project.data_dir / "damaged"
    tables: dict[str, Any] = {}
    if os.path.exists(root) and not os.path.isdir(root):  # a file where the database should be
        import shutil
        import time

        target = damaged_dir / f"lancedb-{time.strftime('%Y%m%dT%H%M%S')}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(root, target)
        tables[os.path.basename(root)] = {
            "status": "moved",
            "kept": 0,
            "recovered": 0,
            "lost": None,
            "moved_to": project.relpath(target),
        }
    names = sorted(n[:-6] for n in os.listdir(root) if n.endswith(".lance")) if os.path.isdir(root) else []
    for name in names:
        with db.write_lock(name):
            info = repair_table(db, name, damaged_dir)
        for key in ("moved_to", "backup"):
            if key in info:
                info[key] = project.relpath(Path(info[key]))
        tables[name] = info
    if any(t["recovered"] for t in tables.values()):
        try:
            reembed(project)
        except ContextwareError as exc:  # the rows are kept; their vectors wait for the model
            for info in tables.values():
                if info["recovered"]:
                    info["vectors_pending"] = exc.message
    for name, info in tables.items():
        if info["status"] != "moved":
            verify_readable(db, name)
    lost = [t["lost"] for t in tables.values()]
    repaired = sorted(n for n, t in tables.items() if t["status"] != "ok")
    return {
        "message": _repair_message(tables, repaired),
        "repaired": repaired,
        "kept": sum(t["kept"] for t in tables.values()),
        "recovered": sum(t["recovered"] for t in tables.values()),
        "lost": None if None in lost else sum(lost),
        "tables": tables,
    }


def _repair_message(tables: dict[str, Any], repaired: list[str]) -> str:
    """One sentence per repaired table: what was kept, recovered and lost, and where the rest is."""
    if not repaired:
        return "Every table was read back intact; nothing needed repair."
    parts = []
    for name in repaired:
        t = tables[name]
        lost = (
            "an unknown number of rows (versions whose manifest is unreadable)"
            if t["lost"] is None
            else f"{t['lost']} row(s)"
        )
        where = t.get("moved_to") or t.get("backup")
        parts.append(
            f"{name}: {t['status'].replace('_', ' ')}, kept {t['kept']} row(s), recovered {t['recovered']}, lost {lost}"
            + (f"; the damaged files are kept under {where}" if where else "")
        )
    return "; ".join(parts) + "."
