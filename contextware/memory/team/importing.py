"""``import_memory``: an export merged into the project id by id, in memory bounded by a chunk of rows
(the rules it keeps are ``share``'s docstring's).

The first pass checks every line (a bad line anywhere and nothing is written) and keeps per memory
only its line number, when it last changed, whether it is active and its text hash.  The plan then
reads this table in batches and decides each id (``tombstones.entry_key``; a tie on the time is
settled by both full entries, the file's read again from its line), the folds of one text into the
smallest id and what tombstones delete.  The rows to write are then read again, ``CHUNK_ROWS`` at a
time: redacted, linked to the code, embedded shortest first and written under the write lock after
each id is checked once more (another writer may have changed it).  Folds and deletions come last,
once what they fold into is written.  A process killed part-way has lost nothing (each chunk is a
commit of later versions) and importing the file again finishes the job.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NamedTuple, TypedDict, cast

from contextware.core.redact import redact
from contextware.core.text import sql_str, text_hash
from contextware.memory import quarantine
from contextware.memory.code_links import link_rows
from contextware.memory.records import collection_for_id
from contextware.memory.team import tombstones
from contextware.memory.team.memfile import (
    FIELDS,
    TEXT_FIELDS,
    Entry,
    check_row,
    checked_lines,
    entry_id,
    split_conflicts,
    text_or_none,
    written_form,
)
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.integrity import stamp
from contextware.storage.schemas import FTS_COLUMN, MEMORY_TABLES
from contextware.storage.table_search import release_unused

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.memory.results import LinkedRow, MemoryRow
    from contextware.memory.team.tombstones import Tombstone
    from contextware.storage.embeddings import Embedder
    from contextware.storage.project import Project

# Rows embedded and written at a time: the import's memory is this many rows and their vectors
# (~15 KB a row as Python lists), not the file; each chunk is one commit.
CHUNK_ROWS = 1000
SCAN_BATCH = 1024  # this table's rows read at a time by the plan

# Texts per call of the model, by length: at most 32, and at most TOKEN_BUDGET tokens (~4 characters
# each) counted at the longest.  The model's working memory grows with batch x length^2 and its arena
# keeps its peak: 64 texts of 256 tokens peaked at 1.49 GB in batches of 32, 0.52 GB in 8s and 0.36 GB
# in 4s (the model alone: 0.28 GB).  600 log texts: 380 MB at 1,024 tokens a call, 295 MB at 512 and
# 265 MB at 256, at the same speed within the noise of a busy machine.
TOKEN_BUDGET = 512


# Tombstones by id: the file's (checked, in written form) and this clone's (``tombstones.load``).
Stones = dict[str, Mapping[str, object]]


class ChunkWritten(TypedDict):
    """What one chunk's write did: ids added and updated, and file ids that duplicate a kept id."""

    added: list[str]
    updated: list[str]
    duplicates: dict[str, str]


class ImportCounts(TypedDict, total=False):
    """One collection's (or the whole file's) import: memories added, updated, left as they were,
    dropped as duplicates of a kept id, and deleted (tombstones and folds)."""

    added: int
    updated: int
    unchanged: int
    duplicates: int
    deleted: int


class Change(TypedDict):
    """A dry run's change to one id: add, update or delete."""

    id: str
    change: str


class _Report(TypedDict):
    file: str
    dry_run: bool
    collections: dict[str, ImportCounts]


class ImportReport(_Report, ImportCounts, total=False):
    """What an import did (or, with ``dry_run``, would do), in the order the JSON shows it."""

    conflict_markers: str
    duplicate_of: dict[str, str]
    folded_into: dict[str, str]
    changes: list[Change]
    redacted: dict[str, int]
    degraded: str
    vector: str


class Theirs(NamedTuple):
    """What the plan keeps of one memory of the file."""

    number: int  # its line
    when: str  # when it last changed (``entry_key``'s first part)
    active: bool
    digest: str | None  # the redacted text's hash (facts and episodes: folds)


class Plan(NamedTuple):
    """What an import does to one table, decided against its rows now."""

    todo: list[str]  # ids whose file row is written
    duplicates: dict[str, str]  # file id -> the id kept (the same text, a smaller id here)
    unchanged: int
    known: set[str]  # ids of ``todo`` that exist here
    deletes: list[str]  # local ids a tombstone removes
    folds: dict[str, str]  # local id -> the smaller id of the same text that replaces it


def _mark_imported(rows: list[Entry]) -> None:
    """Each row marked as come from a team file (its provenance kept as written) and, when it reads
    as an instruction to the agent, quarantined with the reason (``memory.quarantine``)."""
    now = datetime.now(timezone.utc)
    for row in rows:
        row["imported_at"] = now
        row["quarantine"] = quarantine.reason(cast("MemoryRow", row))


def _when(entry: Mapping[str, object]) -> str:
    return str(entry.get("deleted_at") or entry.get("updated_at") or entry.get("created_at") or "")


def _clean(collection: str, row: Entry, redacted: dict[str, int] | None) -> Entry:
    """The (checked) row's texts redacted (counted into ``redacted``) and its ``text_hash``."""
    for key in (*TEXT_FIELDS, "session_id"):
        if (value := text_or_none(row, key)) is not None:
            ident = key == "session_id"  # an id: kept as it is, and only the shapes run on it
            clean, found = redact(value if ident else value.strip(), library=not ident)
            row[key] = clean
            for k, v in found.items():
                if redacted is not None:
                    redacted[k] = redacted.get(k, 0) + v

    def text(key: str) -> str:
        return text_or_none(row, key) or ""

    if collection == "facts":
        row["text_hash"] = text_hash(text("text"))
    elif collection == "episodes":
        row["text_hash"] = text_hash(text("goal"), text("result"), text("summary"))
    else:
        row["text_hash"] = f"{text_hash(text('session_id'), text('role'), text('text'))}:{row.get('chunk_index') or 0}"
    return row


class Lines:
    """The file's lines by index, as ``memfile.file_lines`` numbers them (split at ``\n`` alone), read
    from the text itself: the offsets where each starts and ends (16 bytes a line), not a second copy
    of the file."""

    _BREAK = re.compile("\r?\n")

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts, self.ends = array("q", [0]), array("q")
        for match in self._BREAK.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    def __getitem__(self, index: int) -> str:
        return self.text[self.starts[index] : self.ends[index]]


def _entry(lines: Lines, number: int) -> Entry:
    """The written form of the (checked) memory on line ``number``, as the file has it."""
    collection, row = check_row(json.loads(lines[number - 1]))
    return written_form(collection, row)


def _stored(lines: Lines, number: int) -> tuple[str, Entry]:
    """The row to store for the memory on line ``number``, redacted (bar vector)."""
    collection, row = check_row(_entry(lines, number))
    return collection, _clean(collection, row, None)


class FileView(NamedTuple):
    """What the import keeps of a checked file."""

    lines: Lines
    memories: dict[str, dict[str, Theirs]]  # by collection and id
    stones: Stones  # its tombstones by id
    redacted: dict[str, int]  # secrets masked in its memories, by kind
    conflicted: bool  # it had git conflict markers


def read_file(text: str) -> FileView:
    """Check every line: the file's lines, its memories, its tombstones and the secrets redacted in
    its memories.  Both sides of a file with conflict markers, the later entry of
    each id (``tombstones.later``).  A bad line anywhere is a UsageError before anything is kept."""
    sides = split_conflicts(text)
    lines = Lines(text)
    found: dict[str, int | Entry] = {}  # id -> its line, or its tombstone
    for side in sides:
        first, found = found, {}
        for number, kind, entry in checked_lines(side, repeats=len(sides) == 2):
            where = entry if kind == "tombstone" else number
            if (i := entry_id(entry)) in found:  # a conflicted side holding an id twice: the later line
                kept = found[i]
                if tombstones.later(kept if isinstance(kept, dict) else _entry(lines, kept), entry) is not entry:
                    continue
            found[i] = where
        if first:  # the second side of a conflict: the later entry of each id (ours on a tie)
            for i, ours in first.items():
                theirs = found.get(i)
                a = ours if isinstance(ours, dict) else _entry(lines, ours)
                b = None if theirs is None else theirs if isinstance(theirs, dict) else _entry(lines, theirs)
                if tombstones.later(a, b) is a:
                    found[i] = ours
    memories: dict[str, dict[str, Theirs]] = {name: {} for name in MEMORY_TABLES}
    stones: Stones = {}
    redacted: dict[str, int] = {}
    for i in sorted(found):
        where = found[i]
        if isinstance(where, dict):
            stones[i] = where
            continue
        collection, row = check_row(_entry(lines, where))
        row = _clean(collection, row, redacted)
        digest = text_or_none(row, "text_hash") if collection != "logs" else None
        active = (row.get("status") or "active") == "active"
        memories[collection][i] = Theirs(where, _when(written_form(collection, row)), active, digest)
    return FileView(lines, memories, stones, redacted, len(sides) == 2)


def _stones(collection: str, local: Stones, file: Stones, theirs: dict[str, Theirs]) -> Stones:
    """The tombstones that win over the file's memory of their id (a tie goes to the tombstone)."""
    out: Stones = {}
    for i in {*local, *file}:
        if collection_for_id(i) != collection:
            continue
        stone = tombstones.later(local.get(i), file.get(i))
        if stone is not None and (i not in theirs or _when(stone) >= theirs[i].when):
            out[i] = stone
    return out


def plan(table: "Table | None", collection: str, lines: Lines, theirs: dict[str, Theirs], stones: Stones) -> Plan:
    """Each id's later version among this table's row, the file's and the tombstones, read in batches;
    then active memories of one text folded into the smallest id."""
    winners: set[str] = set()  # file ids whose row wins
    present: set[str] = set()  # file ids this table holds
    deletes: list[str] = []
    groups: dict[str, list[str]] = {}
    folding = collection != "logs"
    if table is not None:
        columns = [c for c in (*FIELDS[collection], "text_hash") if c in table.schema.names]
        for batch in table.search().select(columns).limit(None).to_batches(SCAN_BATCH):
            for row in batch.to_pylist():
                i = row["id"]
                mine = written_form(collection, row)
                best: tuple[str, int] = (_when(mine), 0)
                src = "local"
                file = theirs.get(i)
                if file is not None:
                    present.add(i)
                    if file.when > best[0]:
                        src, best = "file", (file.when, 0)
                    elif file.when == best[0]:
                        entry = written_form(*_stored(lines, file.number))
                        if tombstones.entry_key(entry) > tombstones.entry_key(mine):
                            src = "file"
                stone = stones.get(i)
                if stone is not None and (_when(stone), 1) >= best:
                    deletes.append(i)
                elif src == "file":
                    winners.add(i)
                elif folding and (row.get("status") or "active") == "active" and row.get("text_hash"):
                    groups.setdefault(row["text_hash"], []).append(i)
    for i in theirs:
        if i not in present and i not in stones:  # a stone in ``stones`` beats the file's memory
            winners.add(i)
    if folding:
        for i in winners:
            if theirs[i].active and theirs[i].digest:
                groups.setdefault(theirs[i].digest or "", []).append(i)
    folds: dict[str, str] = {}
    duplicates: dict[str, str] = {}
    for ids in groups.values():
        keep = min(ids)
        for i in ids:
            if i != keep:
                if i in winners and i not in present:
                    duplicates[i] = keep
                else:
                    folds[i] = keep
    todo = sorted(i for i in winners if i not in folds and i not in duplicates)
    deletes = sorted(i for i in deletes if i not in folds)
    unchanged = len(theirs) - len(todo) - len(duplicates) - sum(1 for i in deletes if i in theirs)
    return Plan(todo, duplicates, unchanged, {i for i in todo if i in present}, deletes, folds)


def _embed_sorted(embedder: "Embedder", texts: list[str]) -> tuple[list[list[float]] | None, str | None]:
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


def _rows_by_id(tbl: "Table", ids: list[str], columns: list[str] | None = None) -> dict[str, Entry]:
    if not ids:
        return {}
    query = tbl.search().where(f"id IN ({', '.join(sql_str(i) for i in ids)})")
    if columns is not None:
        query = query.select(columns)
    return {r["id"]: r for r in query.limit(None).to_arrow().to_pylist()}


def _write_chunk(tbl: "Table", collection: str, rows: list[Entry], project: "Project") -> ChunkWritten:
    """Under the lock: each row written unless this table's row or a tombstone is now its later
    version, or (facts, episodes) an active row of the same text now holds a smaller id."""
    import pyarrow as pa

    columns = [c for c in (*FIELDS[collection], "text_hash") if c in tbl.schema.names]
    now = _rows_by_id(tbl, [entry_id(r) for r in rows], columns)
    stones = tombstones.load(project)
    same: dict[str, str] = {}
    if collection != "logs":
        digests = sorted({text_or_none(r, "text_hash") or "" for r in rows})
        where = f"text_hash IN ({', '.join(sql_str(d) for d in digests)})"
        for r in tbl.search().where(where).select(columns).limit(None).to_arrow().to_pylist():
            if (r.get("status") or "active") == "active":
                same[r["text_hash"]] = min(same.get(r["text_hash"], r["id"]), r["id"])
    written: list[Entry] = []
    duplicates: dict[str, str] = {}
    for row in rows:
        entry = written_form(collection, row)
        key = tombstones.entry_key(entry)
        i = entry_id(row)
        mine, stone = now.get(i), stones.get(i)
        if (mine is not None and tombstones.entry_key(written_form(collection, mine)) >= key) or (
            stone is not None and tombstones.entry_key(stone) >= key
        ):
            continue
        other = same.get(text_or_none(row, "text_hash") or "")
        if other is not None and other < i and (row.get("status") or "active") == "active":
            duplicates[i] = other
            continue
        written.append(row)
    new = [r for r in written if entry_id(r) not in now]
    old = [r for r in written if entry_id(r) in now]
    if new:
        tbl.add(pa.Table.from_pylist(new, schema=tbl.schema), on_bad_vectors="null")
    if old:
        data = pa.Table.from_pylist(old, schema=tbl.schema)
        tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
            data, on_bad_vectors="null"
        )
    return {"added": [entry_id(r) for r in new], "updated": [entry_id(r) for r in old], "duplicates": duplicates}


def _finish(tbl: "Table", collection: str, plan: Plan, stones: Stones) -> tuple[list[str], dict[str, str]]:
    """Under the lock, once every row is written: the tombstoned rows deleted (unless changed since),
    the folded ones too (when the id kept holds their text), and supersession pointed at the id kept."""
    import pyarrow as pa

    columns = [c for c in (*FIELDS[collection], "text_hash") if c in tbl.schema.names]
    now = _rows_by_id(tbl, sorted({*plan.deletes, *plan.folds, *plan.folds.values()}), columns)
    deletes = [
        i
        for i in plan.deletes
        if i in now and tombstones.entry_key(stones[i]) >= tombstones.entry_key(written_form(collection, now[i]))
    ]
    folds = {
        i: keep
        for i, keep in plan.folds.items()
        if i in now and keep in now and now[i].get("text_hash") == now[keep].get("text_hash")
    }
    if collection == "facts" and folds:
        listed = ", ".join(sql_str(i) for i in folds)
        where = f"supersedes IN ({listed}) OR superseded_by IN ({listed})"
        pointing = [
            {k: v for k, v in r.items() if not k.startswith("_")}
            for r in tbl.search().where(where).limit(None).to_list()
        ]
        pointing = [r for r in pointing if r["id"] not in folds]
        for row in pointing:
            for key in ("supersedes", "superseded_by"):
                if row.get(key) in folds:
                    row[key] = folds[row[key]]
        if pointing:
            stamp(collection, pointing)
            data = pa.Table.from_pylist(pointing, schema=tbl.schema)
            tbl.merge_insert("id").when_matched_update_all().execute(data)
    gone = [*deletes, *folds]
    if gone:
        tbl.delete(f"id IN ({', '.join(sql_str(i) for i in gone)})")
    return deletes, folds


def _summed(a: ImportCounts, b: ImportCounts) -> ImportCounts:
    return {
        "added": a.get("added", 0) + b.get("added", 0),
        "updated": a.get("updated", 0) + b.get("updated", 0),
        "unchanged": a.get("unchanged", 0) + b.get("unchanged", 0),
        "duplicates": a.get("duplicates", 0) + b.get("duplicates", 0),
        "deleted": a.get("deleted", 0) + b.get("deleted", 0),
    }


def _chunks(ids: list[str], size: int) -> list[list[str]]:
    return [ids[k : k + size] for k in range(0, len(ids), size)]


def import_memory(project: "Project", text: str, *, source: str, dry_run: bool = False) -> ImportReport:
    """Merge an export into the project (``share``'s docstring); ``source`` names the file.
    ``dry_run`` writes nothing and lists under ``changes`` what an import would add, update or delete."""
    lines, memories, file_stones, redacted, conflicted = read_file(text)
    report: ImportReport = {"file": source, "dry_run": dry_run, "collections": {}}
    if conflicted:
        report["conflict_markers"] = "merged both sides"
    changes: list[Change] = []
    totals: ImportCounts = {"added": 0, "updated": 0, "unchanged": 0, "duplicates": 0, "deleted": 0}
    degraded = None
    embedder = project.embedder
    if file_stones and not dry_run:  # kept before any row goes: a kill -9 in between loses nothing
        tombstones.record(project, cast("list[Tombstone]", list(file_stones.values())))  # checked by memfile
    local_stones: Stones = {**tombstones.load(project)} if project.data_dir.exists() else {}
    for collection, theirs in memories.items():
        stones = _stones(collection, local_stones, file_stones, theirs)
        if not theirs and not stones:
            continue
        table = project.db.open_table(collection)
        if table is not None:
            project.db.check_model(collection, table, embedder.model_id, embedder.dim)

        def decide(
            t: "Table | None" = table,
            c: str = collection,
            r: dict[str, Theirs] = theirs,
            s: Stones = stones,
        ) -> Plan:
            return plan(t, c, lines, r, s)

        first = project.db.read(decide)
        counts: ImportCounts = {
            "added": 0,
            "updated": 0,
            "unchanged": first.unchanged,
            "duplicates": len(first.duplicates),
        }
        duplicates, folds, deletes = dict(first.duplicates), dict(first.folds), list(first.deletes)
        if dry_run:
            changes += [{"id": i, "change": "update" if i in first.known else "add"} for i in first.todo]
            changes += [{"id": i, "change": "delete"} for i in [*first.deletes, *first.folds]]
            counts["added"] = len(first.todo) - len(first.known)
            counts["updated"] = len(first.known)
        else:
            for ids in _chunks(first.todo, CHUNK_ROWS):
                rows = [_stored(lines, theirs[i].number)[1] for i in ids]
                for row in rows:
                    row[FTS_COLUMN] = search_text(collection, row)
                link_rows(
                    project, collection, cast("list[LinkedRow]", rows)
                )  # tied to this project's code as it is now (memory.code_links)
                # Shortest first: the model pads a batch to its longest text (same vectors, ~2x faster).
                ordered = sorted(rows, key=lambda r, c=collection: len(embedding_text(c, r)))  # type: ignore[misc]
                vectors, why = _embed_sorted(embedder, [embedding_text(collection, r) for r in ordered])
                degraded = degraded or why
                for k, row in enumerate(ordered):
                    row["vector"] = vectors[k] if vectors else None
                _mark_imported(rows)
                stamp(collection, rows)

                def write(tbl: "Table", c: str = collection, r: list[Entry] = rows) -> ChunkWritten:
                    return _write_chunk(tbl, c, r, project)

                done = project.db.write(collection, write, dim=embedder.dim, model_id=embedder.model_id, maintain=False)
                release_unused()  # the chunk's buffers go back to the system, not to the next chunk's peak
                counts["added"] += len(done["added"])
                counts["updated"] += len(done["updated"])
                counts["duplicates"] += len(done["duplicates"])
                duplicates.update(done["duplicates"])
                skipped = len(ids) - len(done["added"]) - len(done["updated"]) - len(done["duplicates"])
                counts["unchanged"] += skipped
            if first.todo or first.deletes or first.folds:

                def finish(
                    tbl: "Table", c: str = collection, p: Plan = first, s: Stones = stones
                ) -> tuple[list[str], dict[str, str]]:
                    return _finish(tbl, c, p, s)

                deletes, folds = project.db.write(collection, finish, dim=embedder.dim, model_id=embedder.model_id)
        counts["deleted"] = len(deletes) + len(folds)
        report["collections"][collection] = counts
        if duplicates:
            report.setdefault("duplicate_of", {}).update(duplicates)
        if folds:
            report.setdefault("folded_into", {}).update(folds)
        totals = _summed(totals, counts)
    report.update(totals)
    if dry_run:
        report["changes"] = sorted(changes, key=lambda c: c["id"])
    if redacted:
        report["redacted"] = redacted
    if degraded:
        report["degraded"] = degraded
        report["vector"] = "pending: run `memory.py reembed` once the model loads"
    return report
