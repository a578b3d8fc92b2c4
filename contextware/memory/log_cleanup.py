"""Cleaning logs stored before captured turns were stripped of what Contextware injected.

Older versions saved AfterAgent's prompt as Gemini CLI held it, with our own ``<contextware-memory>``
blocks (and the host's ``<hook_context>`` wrapper) inside: those logs then outranked the facts they
quoted.  ``clean_injected_logs`` rewrites each such turn (its chunks joined) with
``fence.strip_injected`` and redaction applied, keeping its session, role and time, re-embedded; a
turn that held nothing but injected text is removed.  ``memory.py repair`` runs it after the tables
are readable again; it is idempotent (a clean table is left untouched, no new version).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from contextware.fence import has_injected, strip_injected
from contextware.redact import redact_text
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.schemas import FTS_COLUMN, ID_PREFIX
from contextware.text import chunk_text, new_id, sql_str, text_hash, utcnow

if TYPE_CHECKING:
    from contextware.storage.project import Project

LOGS = "logs"


def _turn_key(row: dict) -> tuple:
    digest = str(row.get("text_hash") or row["id"]).split(":", 1)[0]
    return row.get("session_id"), row.get("role"), digest


def clean_injected_logs(project: "Project") -> dict:
    """Rewrite or remove logs that carry an injected block; returns counts of turns."""
    import pyarrow as pa

    db = project.db
    table = db.open_table(LOGS)
    if table is None:
        return {"checked": 0, "cleaned": 0, "removed": 0}
    columns = [c for c in table.schema.names if c not in ("vector", FTS_COLUMN)]
    rows = db.read(lambda: table.search().select(columns).limit(None).to_arrow().to_pylist())
    turns: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        turns[_turn_key(row)].append(row)
    polluted = {k: v for k, v in turns.items() if any(has_injected(r.get("text") or "") for r in v)}
    out = {"checked": len(turns), "cleaned": 0, "removed": 0}
    if not polluted:
        return out
    chunk_size = int(project.config["log_chunk_chars"])
    doomed: list[str] = []
    new_rows: list[dict] = []
    for chunks in polluted.values():
        chunks.sort(key=lambda r: r.get("chunk_index") or 0)
        doomed += [r["id"] for r in chunks]
        first = chunks[0]
        text = redact_text(strip_injected("\n".join(r.get("text") or "" for r in chunks))).strip()
        if not text:
            out["removed"] += 1
            continue
        out["cleaned"] += 1
        pieces = chunk_text(text, chunk_size)
        digest = text_hash(first.get("session_id") or "", first.get("role") or "", text)
        for i, piece in enumerate(pieces):
            new: dict[str, Any] = {
                **first,
                "id": new_id(ID_PREFIX[LOGS]),
                "text": piece,
                "chunk_index": i,
                "chunk_count": len(pieces),
                "updated_at": utcnow(),
                "text_hash": f"{digest}:{i}",
            }
            new[FTS_COLUMN] = search_text(LOGS, new)
            new_rows.append(new)
    embedder = project.embedder
    vectors, _degraded = embed_texts(embedder, [embedding_text(LOGS, r) for r in new_rows]) if new_rows else ([], None)
    for i, row in enumerate(new_rows):
        row["vector"] = vectors[i] if vectors else None

    def write(tbl: Any) -> None:
        if new_rows:
            tbl.add(pa.Table.from_pylist(new_rows, schema=tbl.schema))
        for start in range(0, len(doomed), 500):
            tbl.delete(f"id IN ({', '.join(sql_str(i) for i in doomed[start : start + 500])})")

    db.write(LOGS, write, dim=embedder.dim, model_id=embedder.model_id)
    return out
