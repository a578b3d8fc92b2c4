"""Team memory in git: facts and episodes exported as JSON Lines, and merged back in.

``export_memory`` writes the memory file (``memfile``; docs/memory-file.md): a header line, then one
JSON object a line in ``(created_at, id)`` order with a fixed key order, no vectors and times in ISO
8601 UTC (to the second), so the same memory always gives the same bytes, a change shows as a
one-line diff and a new memory as a line at the end.  A deleted fact or episode is written as a
tombstone (``tombstones``) until it expires.  Logs are left out unless asked for (they are long and
personal).  Texts pass through ``redact`` once more on the way out.

``import_memory`` checks the whole file before it writes anything (a bad line is a ``UsageError``
naming the line and field), then merges it id by id: the later version wins (``tombstones.entry_key``:
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

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from contextware.errors import UsageError
from contextware.memory import tombstones
from contextware.memory.code_links import link_rows
from contextware.memory.memfile import (
    DEFAULT_FILE,
    FIELDS,
    FORMAT,
    TEXT_FIELDS,
    TIME_FIELDS,
    VERSION,
    check_row,
    line_order,
    parse_export,
    read_entries,
    render,
    split_conflicts,
    written_form,
)
from contextware.memory.records import collection_for_id
from contextware.redact import redact
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.integrity import stamp
from contextware.storage.schemas import FTS_COLUMN, MEMORY_TABLES
from contextware.system import write_atomic
from contextware.text import iso, sql_str, text_hash

if TYPE_CHECKING:
    from contextware.storage.project import Project

__all__ = ["DEFAULT_FILE", "FORMAT", "VERSION", "export_memory", "import_memory", "parse_export"]


# -- export -----------------------------------------------------------------------------------------
def export_rows(project: "Project", *, include_logs: bool = False) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The entries to export (memories, and the tombstones of deleted ones that still win) in file
    order, and how many secrets were masked on the way out."""
    redacted: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    stones = tombstones.load(project)
    for name in MEMORY_TABLES:
        if name == "logs" and not include_logs:
            continue
        table = project.db.open_table(name)
        if table is None:
            continue
        columns = [c for c in FIELDS[name] if c in table.schema.names]

        def read_all(t: Any = table, c: list[str] = columns) -> list[dict[str, Any]]:
            return t.search().select(c).limit(None).to_arrow().to_pylist()

        for row in project.db.read(read_all):
            record: dict[str, Any] = {}
            for key in FIELDS[name]:
                value = row.get(key)
                if key in TIME_FIELDS:
                    value = iso(value)
                elif key in (*TEXT_FIELDS, "session_id") and isinstance(value, str):
                    clean, found = redact(value, library=key != "session_id")
                    if clean != value:
                        value = clean
                        for k, v in found.items():
                            redacted[k] = redacted.get(k, 0) + v
                record[key] = value
            out.append(tombstones.later(record, stones.pop(record["id"], None)) or record)
    kinds = {"facts", "episodes", *(["logs"] if include_logs else [])}
    out += [s for s in stones.values() if collection_for_id(s["id"]) in kinds]
    out.sort(key=line_order)
    return out, redacted


def render_jsonl(rows: list[dict[str, Any]]) -> str:
    return render(rows)


def export_memory(project: "Project", path: Path | None, *, include_logs: bool = False) -> dict[str, Any]:
    """Write the export to ``path`` (default ``<root>/.contextware/memory.jsonl``); with ``path`` None
    the text is returned under ``jsonl`` for the caller to print."""
    rows, redacted = export_rows(project, include_logs=include_logs)
    text = render_jsonl(rows)
    live = [r for r in rows if not tombstones.is_tombstone(r)]
    counts = {name: sum(1 for r in live if collection_for_id(r["id"]) == name) for name in MEMORY_TABLES}
    if not include_logs:
        counts.pop("logs")
    result: dict[str, Any] = {"rows": len(live), "counts": counts, "include_logs": include_logs}
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
def _prepare(collection: str, row: dict[str, Any], redacted: dict[str, int]) -> dict[str, Any]:
    for key in (*TEXT_FIELDS, "session_id"):
        if isinstance(row.get(key), str):
            ident = key == "session_id"  # an id: kept as it is, and only the shapes run on it
            clean, found = redact(row[key] if ident else row[key].strip(), library=not ident)
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


class Plan(NamedTuple):
    """What an import does to one table, decided against its rows now."""

    todo: list[dict[str, Any]]  # file rows to write
    duplicates: dict[str, str]  # file id -> the id kept (the same text, a smaller id here)
    unchanged: int
    known: set[str]  # ids of the rows to write that exist here
    deletes: list[str]  # local ids a tombstone removes
    folds: dict[str, str]  # local id -> the smaller id of the same text that replaces it


def _plan(table: Any, collection: str, rows: list[dict[str, Any]], stones: dict[str, dict[str, Any]]) -> Plan:
    """Each id's later version among this table's row, the file's row and the tombstones
    (``stones``, local and the file's), then active memories of one text folded into the smallest id."""
    local: dict[str, dict[str, Any]] = {}
    if table is not None:
        columns = [c for c in (*FIELDS[collection], "text_hash") if c in table.schema.names]
        for r in table.search().select(columns).limit(None).to_arrow().to_pylist():
            local[r["id"]] = r
    theirs = {r["id"]: r for r in rows}
    contested = {*theirs, *(i for i in stones if i in local)}
    mine = {i: written_form(collection, local[i]) for i in contested if i in local}
    winner: dict[str, tuple[str, dict[str, Any]]] = {i: ("local", r) for i, r in local.items() if i not in contested}
    for i in contested:
        options = [("local", mine.get(i)), ("file", written_form(collection, theirs[i]) if i in theirs else None)]
        options.append(("stone", stones.get(i)))
        best = max(((src, e) for src, e in options if e is not None), key=lambda o: tombstones.entry_key(o[1]))
        winner[i] = best
    folds: dict[str, str] = {}
    duplicates: dict[str, str] = {}
    if collection != "logs":
        groups: dict[str, list[str]] = {}
        for i, (src, entry) in winner.items():
            if src == "stone" or (entry.get("status") or "active") != "active":
                continue
            digest = (local[i] if src == "local" else theirs[i]).get("text_hash")
            if digest:
                groups.setdefault(digest, []).append(i)
        for ids in groups.values():
            keep = min(ids)
            for i in ids:
                if i == keep:
                    continue
                if i in local:
                    folds[i] = keep
                else:
                    duplicates[i] = keep
    todo = [
        theirs[i]
        for i in sorted(theirs)
        if winner[i][0] == "file" and i not in folds and i not in duplicates and mine.get(i) != winner[i][1]
    ]
    deletes = sorted(i for i in local if winner[i][0] == "stone" and i not in folds)
    unchanged = len(theirs) - len(todo) - len(duplicates) - sum(1 for i in deletes if i in theirs)
    return Plan(todo, duplicates, unchanged, {r["id"] for r in todo if r["id"] in local}, deletes, folds)


def _refold(tbl: Any, collection: str, plan: Plan) -> None:
    """Delete the folded and tombstoned rows, and point supersession at the id each fold kept."""
    import pyarrow as pa

    gone = [*plan.deletes, *plan.folds]
    if not gone:
        return
    if collection == "facts" and plan.folds:
        for row in plan.todo:
            for key in ("supersedes", "superseded_by"):
                if row.get(key) in plan.folds:
                    row[key] = plan.folds[row[key]]
            stamp(collection, [row])
        listed = ", ".join(sql_str(i) for i in plan.folds)
        where = f"supersedes IN ({listed}) OR superseded_by IN ({listed})"
        pointing = [
            {k: v for k, v in r.items() if not k.startswith("_")}
            for r in tbl.search().where(where).limit(None).to_list()
        ]
        pointing = [r for r in pointing if r["id"] not in plan.folds]
        for row in pointing:
            for key in ("supersedes", "superseded_by"):
                if row.get(key) in plan.folds:
                    row[key] = plan.folds[row[key]]
        if pointing:
            stamp(collection, pointing)
            data = pa.Table.from_pylist(pointing, schema=tbl.schema)
            tbl.merge_insert("id").when_matched_update_all().execute(data)
    tbl.delete(f"id IN ({', '.join(sql_str(i) for i in gone)})")


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


def import_memory(project: "Project", text: str, *, source: str, dry_run: bool = False) -> dict[str, Any]:
    """Merge an export into the project (see the module docstring); ``source`` names the file.
    ``dry_run`` writes nothing and lists under ``changes`` what an import would add, update or delete."""
    import pyarrow as pa

    entries = read_entries(text)
    by_collection: dict[str, list[dict[str, Any]]] = {name: [] for name in MEMORY_TABLES}
    file_stones: list[dict[str, Any]] = []
    for entry in entries.values():
        if tombstones.is_tombstone(entry):
            file_stones.append(entry)
        else:
            collection, row = check_row(entry)
            by_collection[collection].append(row)
    redacted: dict[str, int] = {}
    report: dict[str, Any] = {"file": source, "dry_run": dry_run, "collections": {}}
    if len(split_conflicts(text)) == 2:
        report["conflict_markers"] = "merged both sides"
    changes: list[dict[str, Any]] = []
    totals = {"added": 0, "updated": 0, "unchanged": 0, "duplicates": 0, "deleted": 0}
    degraded = None
    embedder = project.embedder
    if file_stones and not dry_run:  # kept before any row goes: a kill -9 in between loses nothing
        tombstones.record(project, file_stones)
    local_stones = tombstones.load(project) if project.data_dir.exists() else {}
    for collection, rows in by_collection.items():
        stones = {
            i: s
            for i in {*local_stones, *(s["id"] for s in file_stones)}
            if collection_for_id(i) == collection
            and (s := tombstones.later(local_stones.get(i), entries.get(i) if i in entries else None)) is not None
            and tombstones.is_tombstone(s)
        }
        if not rows and not stones:
            continue
        rows = [_prepare(collection, r, redacted) for r in rows]
        if not dry_run:
            link_rows(project, collection, rows)  # tied to this project's code as it is now (memory.code_links)
        table = project.db.open_table(collection)
        if table is not None:
            project.db.check_model(collection, table, embedder.model_id, embedder.dim)

        def plan(
            t: Any = table, c: str = collection, r: list[dict[str, Any]] = rows, s: dict[str, Any] = stones
        ) -> Plan:
            return _plan(t, c, r, s)

        first = project.db.read(plan)
        todo = first.todo
        if dry_run:
            changes += [{"id": row["id"], "change": "update" if row["id"] in first.known else "add"} for row in todo]
            changes += [{"id": i, "change": "delete"} for i in [*first.deletes, *first.folds]]
        if todo and not dry_run:  # vectors only for what may be written (checked again under the lock)
            # Shortest first: the model pads a batch to its longest text (same vectors, ~2x faster).
            ordered = sorted(todo, key=lambda r: len(embedding_text(collection, r)))
            vectors, why = _embed_sorted(embedder, [embedding_text(collection, r) for r in ordered])
            degraded = degraded or why
            for i, row in enumerate(ordered):
                row["vector"] = vectors[i] if vectors else None
            stamp(collection, todo)

        def write(tbl: Any, c: str = collection, r: list[dict[str, Any]] = rows, s: dict[str, Any] = stones) -> Plan:
            now = _plan(tbl, c, r, s)
            late = [row for row in now.todo if "vector" not in row]  # changed meanwhile by another writer
            if late:
                vectors, _ = embed_texts(embedder, [embedding_text(c, row) for row in late])
                for i, row in enumerate(late):
                    row["vector"] = vectors[i] if vectors else None
                stamp(c, late)
            if now.todo:
                data = pa.Table.from_pylist(now.todo, schema=tbl.schema)
                tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
                    data, on_bad_vectors="null"
                )
            _refold(tbl, c, now)
            return now

        if (todo or first.deletes or first.folds) and not dry_run:
            done = project.db.write(collection, write, dim=embedder.dim, model_id=embedder.model_id)
        else:
            done = first if dry_run else first._replace(todo=[], deletes=[], folds={})
        counts = {
            "added": sum(1 for r in done.todo if r["id"] not in done.known),
            "updated": sum(1 for r in done.todo if r["id"] in done.known),
            "unchanged": done.unchanged,
            "duplicates": len(done.duplicates),
            "deleted": len(done.deletes) + len(done.folds),
        }
        report["collections"][collection] = counts
        if done.duplicates:
            report.setdefault("duplicate_of", {}).update(done.duplicates)
        if done.folds:
            report.setdefault("folded_into", {}).update(done.folds)
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
