"""Looking after the database: statistics, re-embedding, compaction and repair."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from contextware.errors import StorageError
from contextware.storage.database import vector_dim, vector_model, with_retries
from contextware.storage.embedded_text import embedding_text
from contextware.storage.layout import is_local_uri
from contextware.storage.schemas import VECTOR_TABLES, table_schema
from contextware.text import iso

if TYPE_CHECKING:
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


def stats(project: "Project") -> dict:
    db = project.db
    tables: dict[str, Any] = {}
    last_write = None
    for name in db.table_names():
        table = db.open_table(name)
        if table is None:
            continue
        versions = table.list_versions()
        latest = max((v["timestamp"] for v in versions), default=None)
        info: dict[str, Any] = {
            "rows": table.count_rows(),
            "versions": len(versions),
            "version": table.version,
            "last_write": iso(latest),
            "model": vector_model(table.schema),
            "disk_bytes": _disk_bytes(os.path.join(project.db_uri, f"{name}.lance")),
        }
        if "vector" in table.schema.names:
            info["missing_vectors"] = table.count_rows("vector IS NULL")
        if name == "facts":
            info["superseded"] = table.count_rows("status = 'superseded'")
        tables[name] = info
        if latest and (last_write is None or latest > last_write):
            last_write = latest
    return {
        "project_root": str(project.root),
        "data_dir": str(project.data_dir),
        "db_uri": project.db_uri,
        "model": project.embedder.model_id,
        "tables": tables,
        "disk_bytes": _disk_bytes(project.db_uri),
        "last_write": iso(last_write),
    }


def reembed(project: "Project", *, all_rows: bool = False) -> dict:
    """Fill in missing vectors, or rebuild every vector when the configured model changed."""
    import pyarrow as pa

    db = project.db
    embedder = project.embedder
    report: dict[str, Any] = {"model": embedder.model_id, "tables": {}}
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
                vectors = embedder.embed([embedding_text(name, r) for r in todo])
                for row, vec in zip(todo, vectors, strict=False):
                    row["vector"] = vec.tolist()
            if changed_model:
                schema = table_schema(name, embedder.dim, embedder.model_id)
                data = pa.Table.from_pylist(rows, schema=schema)
                table = db.replace_table(name, data)
            elif todo:
                data = pa.Table.from_pylist(todo, schema=table.schema)

                def update(table: Any = table, data: Any = data) -> Any:
                    return table.merge_insert("id").when_matched_update_all().execute(data)

                with_retries(update)
            db._maintain(table, force=bool(todo))
        report["tables"][name] = {"reembedded": len(todo), "rows": len(rows), "model_changed": changed_model}
    return report


def compact(project: "Project") -> dict:
    return {"tables": [project.db.compact(name) for name in project.db.table_names()]}


def repair(project: "Project") -> dict:
    """Make every table readable again: restore the newest readable version, or move an
    unrecoverable table aside (kept under ``damaged/``) so that a fresh one can be created."""
    import shutil
    import time

    db = project.db
    report: dict[str, Any] = {"tables": {}}
    if not is_local_uri(project.db_uri):
        raise StorageError(
            "repair works on a local database only; restore object-store data with your provider's tools."
        )
    root = project.db_uri
    names = sorted(n[:-6] for n in os.listdir(root) if n.endswith(".lance")) if os.path.isdir(root) else []
    for name in names:
        path = os.path.join(root, f"{name}.lance")
        status = "ok"
        try:
            table = db.conn.open_table(name)
            table.to_arrow()
        except Exception:  # noqa: BLE001
            status = _restore_newest_readable(db, name) or "moved"
            if status == "moved":
                target = project.data_dir / "damaged" / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}.lance"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(path, target)
                status = f"moved to {project.relpath(target)}"
        report["tables"][name] = status
    return report


def _restore_newest_readable(db: Any, name: str) -> str | None:
    try:
        table = db.conn.open_table(name)
        versions = sorted((v["version"] for v in table.list_versions()), reverse=True)
    except Exception:  # noqa: BLE001
        return None
    for version in versions:
        try:
            table.checkout(version)
            table.to_arrow()
            table.restore(version)
            return f"restored version {version}"
        except Exception:  # noqa: BLE001
            continue
    return None
