"""Cleaning what older versions stored: injected blocks in logs, and secrets their redaction missed.

``memory.py repair`` runs both after the tables are readable again; both are idempotent (a clean
table is left untouched, no new version).

Injected blocks: older versions saved AfterAgent's prompt as Gemini CLI held it, with our own ``<contextware-memory>``
blocks (and the host's ``<hook_context>`` wrapper) inside: those logs then outranked the facts they
quoted.  ``clean_injected_logs`` rewrites each such turn (its chunks joined) with
``fence.strip_injected`` and redaction applied, keeping its session, role and time, re-embedded; a
turn that held nothing but injected text is removed.

Secrets: ``scrub_secrets`` passes every stored text through today's redaction layer (facts, episodes
and logs re-embedded, store values leaf by leaf) and removes code-index rows of secret-bearing files
or with a secret in their text (the next crawl indexes those files again, redacted); offload files
are re-redacted by ``offload.scrub``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, cast

from contextware.codeindex.exclusions import SecretFiles
from contextware.core.fence import has_injected, strip_injected
from contextware.core.redact import redact_json, redact_text
from contextware.core.text import chunk_text, new_id, sql_str, text_hash, utcnow
from contextware.memory.results import CleanedLogs, Scrubbed
from contextware.memory.team.tombstones import changed_after
from contextware.offload.scrub import scrub_offload_files
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.integrity import stamp
from contextware.storage.schemas import FTS_COLUMN, ID_PREFIX

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project
    from contextware.storage.schemas import LogRow

LOGS = "logs"


TurnKey = tuple[str | None, str | None, str]  # session, role, the text's digest: one turn's parts share it


def _turn_key(row: "LogRow") -> TurnKey:
    digest = str(row.get("text_hash") or row["id"]).split(":", 1)[0]
    return row.get("session_id"), row.get("role"), digest


def clean_injected_logs(project: "Project") -> CleanedLogs:
    """Rewrite or remove logs that carry an injected block; returns counts of turns."""
    import pyarrow as pa

    db = project.db
    table = db.open_table(LOGS)
    if table is None:
        return {"checked": 0, "cleaned": 0, "removed": 0}
    columns = [c for c in table.schema.names if c not in ("vector", FTS_COLUMN)]
    rows = cast("list[LogRow]", db.read(lambda: table.search().select(columns).limit(None).to_arrow().to_pylist()))
    turns: dict[TurnKey, list[LogRow]] = defaultdict(list)
    for row in rows:
        turns[_turn_key(row)].append(row)
    polluted = {k: v for k, v in turns.items() if any(has_injected(r.get("text") or "") for r in v)}
    out: CleanedLogs = {"checked": len(turns), "cleaned": 0, "removed": 0}
    if not polluted:
        return out
    chunk_size = project.config.log_chunk_chars
    doomed: list[str] = []
    new_rows: list[LogRow] = []
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
            new: LogRow = {
                **first,
                "id": new_id(ID_PREFIX[LOGS]),
                "text": piece,
                "chunk_index": i,
                "chunk_count": len(pieces),
                "updated_at": utcnow(),
                "text_hash": f"{digest}:{i}",
            }
            new["search_text"] = search_text(LOGS, new)  # FTS_COLUMN
            new_rows.append(new)
    embedder = project.embedder
    vectors, _degraded = embed_texts(embedder, [embedding_text(LOGS, r) for r in new_rows]) if new_rows else ([], None)
    for i, row in enumerate(new_rows):
        row["vector"] = vectors[i] if vectors else None
    stamp(LOGS, new_rows)  # the checksum covers the cleaned text and its new vector

    def write(tbl: "Table") -> None:
        if new_rows:
            tbl.add(pa.Table.from_pylist(new_rows, schema=tbl.schema))
        for start in range(0, len(doomed), 500):
            tbl.delete(f"id IN ({', '.join(sql_str(i) for i in doomed[start : start + 500])})")

    db.write(LOGS, write, dim=embedder.dim, model_id=embedder.model_id)
    return out


# -- secrets ---------------------------------------------------------------------------------------
_TEXT_FIELDS = {"facts": ("text",), "episodes": ("goal", "summary"), "logs": ("text",)}


def _rows(project: "Project", table: "Table", skip: tuple[str, ...] = ("vector",)) -> list[dict[str, Any]]:
    columns = [c for c in table.schema.names if c not in skip]
    return project.db.read(lambda: table.search().select(columns).limit(None).to_arrow().to_pylist())


def scrub_secrets(project: "Project") -> Scrubbed:
    """Re-redact every stored text with the current detectors; returns rows changed per table."""
    return {
        "facts": _scrub_memories(project, "facts", _TEXT_FIELDS["facts"]),
        "episodes": _scrub_memories(project, "episodes", _TEXT_FIELDS["episodes"]),
        "logs": _scrub_memories(project, "logs", _TEXT_FIELDS["logs"]),
        "kv": _scrub_store(project),
        "code_index_removed": _scrub_code_index(project),
        "offload_files": scrub_offload_files(project)["files"],  # the offloads index is rebuilt from them
    }


def _scrub_memories(project: "Project", name: str, fields: tuple[str, ...]) -> int:
    import pyarrow as pa

    db = project.db
    table = db.open_table(name)
    if table is None:
        return 0
    changed = []
    for row in _rows(project, table, ("vector",)):
        clean = {f: redact_text(row[f]) for f in fields if isinstance(row.get(f), str)}
        if any(clean[f] != row[f] for f in clean):
            row.update(clean)
            if name == "facts":
                row["text_hash"] = text_hash(row["text"])
            elif name == "episodes":
                row["text_hash"] = text_hash(row["goal"], row.get("result") or "", row["summary"])
            row[FTS_COLUMN] = search_text(name, row)
            row["updated_at"] = changed_after(row.get("updated_at"))
            changed.append(row)
    if not changed:
        return 0
    embedder = project.embedder
    vectors, _degraded = embed_texts(embedder, [embedding_text(name, r) for r in changed])
    for i, row in enumerate(changed):
        row["vector"] = vectors[i] if vectors else None
    stamp(name, changed)

    def write(tbl: "Table") -> None:
        data = pa.Table.from_pylist(changed, schema=tbl.schema)
        tbl.merge_insert("id").when_matched_update_all().execute(data)

    db.write(name, write, dim=embedder.dim, model_id=embedder.model_id)
    return len(changed)


def _scrub_store(project: "Project") -> int:
    import json

    import pyarrow as pa

    from contextware.store.kvstore import encode

    db = project.db
    table = db.open_table("kv")
    if table is None:
        return 0
    changed = []
    for row in _rows(project, table, ()):
        try:
            value = json.loads(row["data"])
        except (TypeError, ValueError):
            continue  # a damaged value is repair's business, not ours
        counts: dict[str, int] = {}
        clean = redact_json(value, counts)
        if counts:
            text = encode(clean)
            changed.append({**row, "data": text, "size": len(text.encode("utf-8"))})
    if changed:
        stamp("kv", changed)

        def write(tbl: "Table") -> None:
            tbl.merge_insert("id").when_matched_update_all().execute(pa.Table.from_pylist(changed, schema=tbl.schema))

        db.write("kv", write)
    return len(changed)


def _scrub_code_index(project: "Project") -> int:
    from contextware.codeindex.files import secret_files

    db = project.db
    table = db.open_table("code_index")
    if table is None:
        return 0
    secrets: SecretFiles = secret_files(project.data_dir)
    doomed = []
    for row in _rows(project, table, ("vector",)):
        texts = [row.get("summary") or "", " ".join(row.get("symbols") or []), row.get(FTS_COLUMN) or ""]
        if secrets(row["file_path"]) or any(redact_text(t) != t for t in texts):
            doomed.append(row["id"])
    if doomed:

        def write(tbl: "Table") -> None:
            for start in range(0, len(doomed), 500):
                tbl.delete(f"id IN ({', '.join(sql_str(i) for i in doomed[start : start + 500])})")

        db.write("code_index", write)
    return len(doomed)
