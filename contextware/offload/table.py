"""The ``offloads`` table: an index of the offload files (one row per cached answer, session turn and
session synthesis), the recall filters over it, and the registry of projects for ``--global``.

Row ids are derived from the files (cache key, session name and turn file), so re-indexing a file
updates its row instead of adding one, and ``sync.py`` can compare files and rows.  Writing the
index never decides whether an offload succeeded: when the table cannot be opened or written, the
offload still answers from its files and reports ``index_error`` (``sync.py rebuild`` restores it).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.errors import ContextwareError, first_line
from contextware.core.text import cut_at_word, iso, sql_str
from contextware.offload.files import display_path
from contextware.offload.sources import text_sha256
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.integrity import stamp
from contextware.storage.schemas import OFFLOADS_TABLE, OffloadRow

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

REBUILD_HINT = "run `uv run scripts/sync.py rebuild` to restore the index from the files"


def row_id(kind: str, *parts: str) -> str:
    """``offload-<12 hex>`` derived from what the row indexes (stable across rebuilds)."""
    return "offload-" + hashlib.sha256(":".join([kind, *parts]).encode()).hexdigest()[:12]


def make_row(
    project: "Project",
    *,
    id: str,
    prompt: str,
    type: str,
    summary: str,
    summary_method: str,
    response_file: str,
    created_at: datetime,
    model: str | None = None,
    source_paths: Sequence[str] = (),
    source_hash: str | None = None,
    source_type: str | None = None,
    session_name: str | None = None,
    turn_number: int | None = None,
    feature: str | None = None,
    topics: Sequence[str] = (),
    token_count: int | None = None,
) -> OffloadRow:
    row: OffloadRow = {
        "id": id,
        "prompt": prompt,
        "prompt_hash": text_sha256(prompt),
        "source_paths": list(source_paths),
        "source_hash": source_hash,
        "source_type": source_type,
        "session_name": session_name,
        "turn_number": turn_number,
        "feature": feature,
        "type": type,
        "topics": list(topics),
        "model": model,
        "created_at": created_at,
        "summary": summary,
        "summary_method": summary_method,
        "response_file": response_file,
        "token_count": token_count,
        "project": str(project.root),
    }
    row["search_text"] = search_text(OFFLOADS_TABLE, row)
    return row


def embed_rows(project: "Project", rows: list[OffloadRow]) -> str | None:
    """Give each row its vector (None for all when the model cannot load: then returns why)."""
    from contextware.storage.embeddings import embed_texts

    vectors, why = (
        embed_texts(project.embedder, [embedding_text(OFFLOADS_TABLE, r) for r in rows]) if rows else ([], None)
    )
    for row, vec in zip(rows, vectors if vectors is not None else [None] * len(rows), strict=False):
        row["vector"] = vec
    stamp(OFFLOADS_TABLE, rows)
    return why


def _index_write(fn: Any) -> dict[str, Any]:
    """Run one write of the index; never raises a storage error (the files already hold the
    offload): ``{"indexed": True}`` or ``{"indexed": False, "index_error": ...}``."""
    from contextware.core.redact import redact_text  # an error's text can quote a path holding a secret

    try:
        fn()
    except ContextwareError as exc:
        return {"indexed": False, "index_error": redact_text(f"{exc.message.rstrip('.')}; {REBUILD_HINT}.")}
    except Exception as exc:  # noqa: BLE001 - lance raises plain errors for damaged tables
        why = f"The offloads index could not be written ({first_line(exc, 200)}); {REBUILD_HINT}."
        return {"indexed": False, "index_error": redact_text(why)}
    return {"indexed": True}


def write_rows(project: "Project", rows: list[OffloadRow]) -> dict[str, Any]:
    """Upsert ``rows`` (by id) with their vectors."""
    import pyarrow as pa

    degraded: list[str] = []

    def write() -> None:
        embedder = project.embedder
        if why := embed_rows(project, rows):
            degraded.append(f"{why} Rows were saved without vectors; run `memory.py reembed` later.")
        db = project.db
        table = db.open_table(OFFLOADS_TABLE)
        if table is not None:
            db.check_model(OFFLOADS_TABLE, table, embedder.model_id, embedder.dim)

        def upsert(tbl: "Table") -> None:
            if rows:
                data = pa.Table.from_pylist(rows, schema=tbl.schema)
                tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)

        db.write(OFFLOADS_TABLE, upsert, dim=embedder.dim, model_id=embedder.model_id)

    out = _index_write(write)
    if degraded and out["indexed"]:
        out["degraded"] = degraded[0]
    return out


def delete_rows(project: "Project", where: str) -> dict[str, Any]:
    """Delete the rows matching ``where`` (nothing to do when the table does not exist)."""

    def delete() -> None:
        if project.db.open_table(OFFLOADS_TABLE) is not None:
            project.db.write(OFFLOADS_TABLE, lambda tbl: tbl.delete(where))  # deleting needs no model

    return _index_write(delete)


# -- recall filters ------------------------------------------------------------------------------
def _normalise_source(source: str, root: Path | None) -> str:
    raw = source.strip().replace("\\", "/")
    if root is not None and os.path.isabs(raw):
        try:
            raw = Path(raw).resolve().relative_to(Path(root).resolve()).as_posix() or "."
        except ValueError:
            pass
    norm = posixpath.normpath(raw) if raw else "."
    return "." if norm in ("", "./") else norm


def _ancestors(path: str) -> list[str]:
    out = [path]
    parent = posixpath.dirname(path)
    while parent and parent not in ("/", "."):
        out.append(parent)
        parent = posixpath.dirname(parent)
    if not posixpath.isabs(path):
        out.append(".")
    return out


def offload_where(*, source: str | None, session: str | None, root: Path | str | None = None) -> str | None:
    """SQL filter for the ``offloads`` table (LanceDB / DataFusion).

    ``source``: offloads whose sources include that file or folder: a source equal to it, a source
    folder containing it, or a source file under it.  Paths are project-relative POSIX as stored
    (``./`` and trailing slashes ignored; an absolute path is made relative to ``root`` when given).
    ``session``: offloads of that named (or feature) session: its turns and its synthesis."""
    parts: list[str] = []
    if source is not None and source.strip():
        path = _normalise_source(source, Path(root) if root is not None else None)
        if path == ".":
            parts.append("array_length(source_paths) > 0")
        else:
            listed = ", ".join(sql_str(p) for p in _ancestors(path))
            inside = sql_str("|" + path.rstrip("/") + "/")
            parts.append(
                f"(array_has_any(source_paths, make_array({listed})) OR "
                f"strpos(concat('|', array_to_string(source_paths, '|')), {inside}) > 0)"
            )
    if session is not None and session.strip():
        parts.append(f"session_name = {sql_str(session.strip())}")
    return " AND ".join(parts) or None


def public_offload(project: "Project", row: dict[str, Any], *, prompt_chars: int = 300) -> dict[str, Any]:
    """An offloads row as recall shows it: summary, sources, session, where the full answer is."""
    out = {
        "summary": row.get("summary"),
        "source_paths": list(row.get("source_paths") or []),
        "session_name": row.get("session_name"),
        "full_response_path": display_path(project, row["response_file"]) if row.get("response_file") else None,
        "type": row.get("type"),
        "prompt": cut_at_word(row.get("prompt") or "", prompt_chars),
        "topics": list(row.get("topics") or []),
        "turn_number": row.get("turn_number"),
        "feature": row.get("feature"),
        "model": row.get("model"),
        "token_count": row.get("token_count"),
        "created_at": iso(row["created_at"]) if isinstance(row.get("created_at"), datetime) else row.get("created_at"),
        "project": row.get("project") or str(project.root),
    }
    return {k: v for k, v in out.items() if v is not None}
