"""Team memory in git: facts and episodes exported as JSON Lines, and merged back in.

``export_memory`` writes one JSON object a line, sorted by id, with a fixed key order, no vectors and
times in ISO 8601 UTC (to the second), so the same memory always gives the same bytes and a change
shows as a one-line diff.  Logs are left out unless asked for (they are long and personal).  Texts
pass through ``redact`` once more on the way out.

``import_memory`` checks the whole file before it writes anything (a bad line is a ``UsageError``
naming the line), then merges it: a new id is added, a known id is replaced when the file's
``updated_at`` is newer, anything else is left alone, so importing the same file twice changes nothing.
Supersession travels with the rows (``status``, ``supersedes``, ``superseded_by``).  An active fact
or an episode whose text is already saved here under another id (two people saved the same thing) is
not added again: it is counted under ``duplicates`` and named in ``duplicate_of`` (file id: local id).  Vectors are computed on import.

The first line is a header, ``{"format": "contextware-memory", "version": 1}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.errors import UsageError, load_json
from contextware.memory.records import FACT_KINDS, RESULTS, ROLES, check_choice, check_slug, collection_for_id
from contextware.redact import redact
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.integrity import stamp
from contextware.storage.schemas import FTS_COLUMN, MEMORY_TABLES
from contextware.system import write_atomic
from contextware.text import iso, parse_topics, text_hash

if TYPE_CHECKING:
    from contextware.storage.project import Project

FORMAT = "contextware-memory"
VERSION = 1
DEFAULT_FILE = ".contextware/memory.jsonl"

# The exported fields of each collection, in the order they are written (id first).
FIELDS: dict[str, tuple[str, ...]] = {
    "facts": (
        "id",
        "kind",
        "text",
        "topics",
        "status",
        "supersedes",
        "superseded_by",
        "source",
        "created_at",
        "updated_at",
    ),
    "episodes": ("id", "goal", "result", "category", "summary", "topics", "source", "created_at", "updated_at"),
    "logs": (
        "id",
        "session_id",
        "role",
        "chunk_index",
        "chunk_count",
        "text",
        "source",
        "created_at",
        "updated_at",
    ),
}
REQUIRED = {"facts": ("text",), "episodes": ("goal", "result", "summary"), "logs": ("session_id", "role", "text")}
TEXT_FIELDS = ("text", "goal", "summary")
TIME_FIELDS = ("created_at", "updated_at")


# -- export -----------------------------------------------------------------------------------------
def export_rows(project: "Project", *, include_logs: bool = False) -> tuple[list[dict], dict[str, int]]:
    """The rows to export, sorted by id, and how many secrets were masked on the way out."""
    redacted: dict[str, int] = {}
    out: list[dict] = []
    for name in MEMORY_TABLES:
        if name == "logs" and not include_logs:
            continue
        table = project.db.open_table(name)
        if table is None:
            continue
        columns = [c for c in FIELDS[name] if c in table.schema.names]

        def read_all(t: Any = table, c: list[str] = columns) -> list[dict]:
            return t.search().select(c).limit(None).to_arrow().to_pylist()

        for row in project.db.read(read_all):
            record: dict[str, Any] = {}
            for key in FIELDS[name]:
                value = row.get(key)
                if key in TIME_FIELDS:
                    value = iso(value)
                elif key in TEXT_FIELDS and isinstance(value, str):
                    clean, found = redact(value)
                    if clean != value:
                        value = clean
                        for k, v in found.items():
                            redacted[k] = redacted.get(k, 0) + v
                record[key] = value
            out.append(record)
    out.sort(key=lambda r: r["id"])
    return out, redacted


def render_jsonl(rows: list[dict]) -> str:
    header = json.dumps({"format": FORMAT, "version": VERSION})
    return "".join(line + "\n" for line in [header, *(json.dumps(r, ensure_ascii=False) for r in rows)])


def export_memory(project: "Project", path: Path | None, *, include_logs: bool = False) -> dict:
    """Write the export to ``path`` (default ``<root>/.contextware/memory.jsonl``); with ``path`` None
    the text is returned under ``jsonl`` for the caller to print."""
    rows, redacted = export_rows(project, include_logs=include_logs)
    text = render_jsonl(rows)
    counts = {name: sum(1 for r in rows if collection_for_id(r["id"]) == name) for name in MEMORY_TABLES}
    if not include_logs:
        counts.pop("logs")
    result: dict[str, Any] = {"rows": len(rows), "counts": counts, "include_logs": include_logs}
    if redacted:
        result["redacted"] = redacted
    if path is None:
        return {**result, "jsonl": text}
    try:
        before = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        before = None
    if path.exists() and not path.is_file():
        raise UsageError(f"{path} is not a file; give another --output.", code="bad_output")
    if before != text:
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise UsageError(
                f"Cannot write {path}: {exc.strerror}; nothing was exported.", code="not_writable"
            ) from None
    return {**result, "path": project.relpath(path), "changed": before != text}


# -- import -----------------------------------------------------------------------------------------
def _time(value: Any, key: str) -> datetime:
    if not isinstance(value, str):
        raise UsageError(f"{key} must be an ISO 8601 time such as 2026-01-31T12:00:00Z.", code="bad_import")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{key} {value!r} is not an ISO 8601 time.", code="bad_import") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _check_row(raw: Any) -> tuple[str, dict]:
    """The collection and the row ready to store (bar vector), or a UsageError saying what is wrong."""
    if not isinstance(raw, dict):
        raise UsageError("it is not a JSON object.", code="bad_import")
    record_id = raw.get("id")
    collection = collection_for_id(record_id) if isinstance(record_id, str) else None
    if collection is None or not isinstance(record_id, str) or not _valid_id(record_id):
        raise UsageError(f"id {record_id!r} is not a memory id (fact-…, episode-… or log-…).", code="bad_import")
    unknown = sorted(set(raw) - set(FIELDS[collection]))
    if unknown:
        raise UsageError(
            f"unknown field {', '.join(unknown)} for {collection} (is the file from a newer Contextware?).",
            code="bad_import",
        )
    for key in REQUIRED[collection]:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise UsageError(f"{key} is missing or empty.", code="bad_import")
    row: dict[str, Any] = {k: raw.get(k) for k in FIELDS[collection]}
    for key in ("source", "supersedes", "superseded_by", "category", "session_id"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise UsageError(f"{key} must be a string or null.", code="bad_import")
    for key in ("supersedes", "superseded_by"):
        if row.get(key) is not None and (collection_for_id(row[key]) != "facts" or not _valid_id(row[key])):
            raise UsageError(f"{key} {row[key]!r} is not a fact id.", code="bad_import")
    if row.get("created_at") is None:
        raise UsageError("created_at is missing.", code="bad_import")
    row["created_at"] = _time(row["created_at"], "created_at")
    row["updated_at"] = _time(row["updated_at"], "updated_at") if row.get("updated_at") else row["created_at"]
    if "topics" in row:
        if row["topics"] is not None and not isinstance(row["topics"], list):
            raise UsageError("topics must be a list of strings.", code="bad_import")
        row["topics"] = parse_topics(row["topics"] or [])
    if collection == "facts":
        row["kind"] = check_choice(row.get("kind") or "note", FACT_KINDS, "kind")
        row["status"] = check_choice(row.get("status") or "active", ("active", "superseded"), "status")
    elif collection == "episodes":
        row["result"] = check_choice(row["result"], RESULTS, "result")
        row["category"] = check_slug(row.get("category") or "general", "category")
    else:
        row["role"] = check_choice(row["role"], ROLES, "role")
        for key in ("chunk_index", "chunk_count"):
            if row.get(key) is not None and (not isinstance(row[key], int) or isinstance(row[key], bool)):
                raise UsageError(f"{key} must be an integer.", code="bad_import")
    return collection, row


def _valid_id(record_id: str) -> bool:
    from contextware.memory.records import _ID

    return bool(_ID.match(record_id))


def _bad_json_line(number: int) -> Callable[[json.JSONDecodeError], UsageError]:
    return lambda exc: UsageError(
        f"Line {number} is not valid JSON ({exc.msg}, column {exc.colno}); nothing was imported.", code="bad_import"
    )


def parse_export(text: str) -> dict[str, list[dict]]:
    """Every row of an export file by collection, checked; the first bad line is a UsageError."""
    by_collection: dict[str, list[dict]] = {name: [] for name in MEMORY_TABLES}
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        raw = load_json(line, _bad_json_line(number))
        if isinstance(raw, dict) and "format" in raw and "id" not in raw:
            if raw.get("format") != FORMAT or not isinstance(raw.get("version"), int) or raw["version"] > VERSION:
                raise UsageError(
                    f"Line {number}: this is not a Contextware memory export this version reads "
                    f"(format {raw.get('format')!r}, version {raw.get('version')!r}); nothing was imported.",
                    code="bad_import",
                )
            continue
        try:
            collection, row = _check_row(raw)
        except UsageError as exc:
            raise UsageError(
                f"Line {number}: {exc.message.rstrip('.')}; nothing was imported.", code="bad_import"
            ) from None
        if row["id"] in seen:
            raise UsageError(
                f"Line {number}: id {row['id']} is already on line {seen[row['id']]}; nothing was imported.",
                code="bad_import",
            )
        seen[row["id"]] = number
        by_collection[collection].append(row)
    return by_collection


def _prepare(collection: str, row: dict, redacted: dict[str, int]) -> dict:
    for key in TEXT_FIELDS:
        if isinstance(row.get(key), str):
            clean, found = redact(row[key].strip())
            row[key] = clean
            for k, v in found.items():
                redacted[k] = redacted.get(k, 0) + v
    if collection == "facts":
        row["text_hash"] = text_hash(row["text"])
    elif collection == "episodes":
        row["text_hash"] = text_hash(row["goal"], row["result"] or "", row["summary"])
    else:
        row["text_hash"] = f"{text_hash(row['session_id'], row['role'], row['text'])}:{row.get('chunk_index') or 0}"
    row[FTS_COLUMN] = search_text(collection, row)
    return row


Plan = tuple[list[dict], dict[str, str], int, set[str]]


def _plan(table: Any, collection: str, rows: list[dict]) -> Plan:
    """(rows to write, duplicates {file id: local id}, unchanged count, ids of the rows to write that
    exist here) against the table's rows now."""
    local: dict[str, dict] = {}
    if table is not None:
        columns = ["id", "updated_at", "text_hash", *(["status"] if collection == "facts" else [])]
        for r in table.search().select(columns).limit(None).to_arrow().to_pylist():
            local[r["id"]] = r
    active_hashes = {
        r["text_hash"]: r["id"] for r in local.values() if r.get("status") in (None, "active") and r.get("text_hash")
    }
    todo, duplicates, unchanged = [], {}, 0
    for row in rows:
        mine = local.get(row["id"])
        if mine is None:
            twin = active_hashes.get(row["text_hash"]) if collection != "logs" else None
            if twin is not None and row.get("status", "active") == "active":
                duplicates[row["id"]] = twin
            else:
                todo.append(row)
        elif mine.get("updated_at") is None or row["updated_at"] > _utc(mine["updated_at"]):
            todo.append(row)
        else:
            unchanged += 1
    return todo, duplicates, unchanged, {row["id"] for row in todo if row["id"] in local}


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


IMPORT_CHUNK = 2000  # rows embedded and written at a time: vectors in memory stay bounded
# Texts per call of the model, by length: at most 32, and at most TOKEN_BUDGET tokens (~4 characters
# each) counted at the longest.  The model's working memory grows with batch x length^2 and its arena
# keeps its peak: 64 texts of 256 tokens peaked at 1.49 GB in batches of 32, 0.52 GB in 8s and 0.36 GB
# in 4s (the model alone: 0.28 GB); an import of 1,200 rows at 1.23 GB before, 0.74 GB with 8s.
TOKEN_BUDGET = 1024


def _embed_sorted(embedder: Any, texts: list[str]) -> tuple[list[list[float]] | None, str | None]:
    """``embed_texts`` of ``texts`` (shortest first) in calls of at most ``TOKEN_BUDGET`` tokens."""
    out: list[list[float]] = []
    start = 0
    while start < len(texts):
        end = start + 1
        while (
            end < len(texts)
            and end - start < 32
            and (end - start + 1) * min(256, max(16, len(texts[end]) // 4)) <= TOKEN_BUDGET
        ):
            end += 1
        vectors, why = embed_texts(embedder, texts[start:end])
        if vectors is None:
            return None, why
        out += vectors
        start = end
    return out, None


def _embed_and_write(
    project: "Project", collection: str, todo: list[dict], first: Plan
) -> tuple[list[dict], dict[str, str], int, set[str], str | None]:
    """Embed ``todo`` in chunks of ``IMPORT_CHUNK`` rows sorted by length (the model pads a batch to
    its longest text: sorted, an import of logs embeds ~2x faster, with the same vectors) and write
    each chunk as it is embedded, checked again under the lock (``_plan``); its vectors are let go once
    written.  Progress goes to stderr when it is a terminal.  Answers what ``_plan`` answers for the
    whole (the rows ``first``, the plan made before, left out of ``todo`` counted as it counted them),
    and why vectors are missing (None when none are)."""
    import sys
    import time

    import pyarrow as pa

    embedder = project.embedder
    ordered = sorted(todo, key=lambda r: len(embedding_text(collection, r)))
    mine: set[str] = set()  # ids this import wrote: a twin among them is the file's own, as before
    written: list[dict] = []
    dups: dict[str, str] = dict(first[1])
    same, known, degraded = first[2], set(), None
    started = time.monotonic()
    show = len(ordered) > IMPORT_CHUNK and sys.stderr.isatty()
    for start in range(0, len(ordered), IMPORT_CHUNK):
        chunk = ordered[start : start + IMPORT_CHUNK]
        vectors, why = _embed_sorted(embedder, [embedding_text(collection, r) for r in chunk])
        degraded = degraded or why
        for i, row in enumerate(chunk):
            row["vector"] = vectors[i] if vectors else None
        stamp(collection, chunk)
        del vectors

        def write(tbl: Any, c: str = collection, r: list[dict] = chunk) -> Plan:
            todo_now, dups, same, known = _plan(tbl, c, r)
            ours = {fid: lid for fid, lid in dups.items() if lid in mine}
            if ours:  # the same text twice in the file: both are added, as in one write
                todo_now += [row for row in r if row["id"] in ours]
                dups = {fid: lid for fid, lid in dups.items() if fid not in ours}
            late = [row for row in todo_now if "vector" not in row]  # changed meanwhile by another writer
            if late:
                vectors, _ = embed_texts(embedder, [embedding_text(c, row) for row in late])
                for i, row in enumerate(late):
                    row["vector"] = vectors[i] if vectors else None
                stamp(c, late)
            if todo_now:
                data = pa.Table.from_pylist(todo_now, schema=tbl.schema)
                tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
                    data, on_bad_vectors="null"
                )
            return todo_now, dups, same, known

        done, chunk_dups, chunk_same, chunk_known = project.db.write(
            collection, write, dim=embedder.dim, model_id=embedder.model_id
        )
        for row in chunk:
            row.pop("vector", None)  # written: bounded memory
        mine.update(row["id"] for row in done)
        written += done
        dups.update(chunk_dups)
        same += chunk_same
        known |= chunk_known
        if show:
            count = min(start + IMPORT_CHUNK, len(ordered))
            rate = count / max(time.monotonic() - started, 1e-6)
            sys.stderr.write(f"\rimporting {collection}: {count}/{len(ordered)} ({rate:.0f} rows/s)")
            sys.stderr.flush()
    if show:
        sys.stderr.write("\n")
    return written, dups, same, known, degraded


def import_memory(project: "Project", text: str, *, source: str, dry_run: bool = False) -> dict:
    """Merge an export into the project (see the module docstring); ``source`` names the file.
    ``dry_run`` writes nothing and lists under ``changes`` what an import would add or update."""
    by_collection = parse_export(text)
    redacted: dict[str, int] = {}
    report: dict[str, Any] = {"file": source, "dry_run": dry_run, "collections": {}}
    changes: list[dict] = []
    totals = {"added": 0, "updated": 0, "unchanged": 0, "duplicates": 0}
    degraded = None
    embedder = project.embedder
    for collection, rows in by_collection.items():
        if not rows:
            continue
        rows = [_prepare(collection, r, redacted) for r in rows]
        table = project.db.open_table(collection)
        if table is not None:
            project.db.check_model(collection, table, embedder.model_id, embedder.dim)

        def plan(t: Any = table, c: str = collection, r: list[dict] = rows) -> Plan:
            return _plan(t, c, r)

        todo, _dups, _same, _known = project.db.read(plan)
        if dry_run:
            changes += [{"id": row["id"], "change": "update" if row["id"] in _known else "add"} for row in todo]
        if todo and not dry_run:
            written, dups, same, known, why = _embed_and_write(project, collection, todo, (todo, _dups, _same, _known))
            degraded = degraded or why
        else:
            written, dups, same, known = todo if dry_run else [], _dups, _same, _known
        counts = {
            "added": sum(1 for r in written if r["id"] not in known),
            "updated": sum(1 for r in written if r["id"] in known),
            "unchanged": same,
            "duplicates": len(dups),
        }
        report["collections"][collection] = counts
        if dups:
            report.setdefault("duplicate_of", {}).update(dups)
        for key, value in counts.items():
            totals[key] += value
    report.update(totals)
    if dry_run:
        report["changes"] = sorted(changes, key=lambda c: c["id"])
    if redacted:
        report["redacted"] = redacted
    if degraded:
        report["degraded"] = degraded
        report["vector"] = "pending: run `memory.py reembed` once the model loads"
    return report
