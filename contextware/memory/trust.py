"""Which memories the hooks may inject unasked: the user's own, and imported ones of trusted authors.

An imported memory (``imported_at`` set, ``memory.provenance``) is injected by the hooks only when
its author is the user, is in ``trusted_authors`` or ``trust_imported`` is true; otherwise it is
recalled on request only.  A quarantined one (``memory.quarantine``) is never injected, whatever the
settings, until a person accepts it (``accept``).  Recall results carry ``from`` for a memory that is
not the user's own, so that every reader sees whose memory it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, TypeVar, cast

from contextware.core.text import sql_str
from contextware.memory import provenance
from contextware.memory.results import Accepted, MemoryRow, Queued, Whose
from contextware.storage.schemas import MEMORY_TABLES

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

COLUMNS = ("id", "origin", "author", "host", "session", "imported_at", "quarantine")

# A recall hit as trust annotates it: its id, and whose it is when not the user's own (``from``).
TrustNote = TypedDict("TrustNote", {"id": str, "from": str, "quarantine": str}, total=False)
Hit = TypeVar("Hit", bound=TrustNote)


def _read(project: "Project", table: "Table", where: str, columns: list[str], limit: int) -> list[MemoryRow]:
    def query() -> list[MemoryRow]:
        return cast("list[MemoryRow]", table.search().where(where).select(columns).limit(limit).to_list())

    return list(project.db.read(query))


def rows_of(project: "Project", ids: list[str]) -> dict[str, Whose]:
    """The provenance of the memories ``ids`` (one read per table; rows without the columns: none)."""
    from contextware.memory.records import collection_for_id

    wanted: dict[str, list[str]] = {}
    for record_id in ids:
        collection = collection_for_id(record_id)
        if collection in MEMORY_TABLES:
            wanted.setdefault(collection, []).append(record_id)
    found: dict[str, Whose] = {}
    for collection, some in wanted.items():
        table = project.db.open_table(collection)
        if table is None or "quarantine" not in table.schema.names:
            continue
        where = f"id IN ({', '.join(sql_str(i) for i in some)})"
        for row in _read(project, table, where, list(COLUMNS), len(some)):
            found[row["id"]] = cast(Whose, {k: row.get(k) for k in COLUMNS})
    return found


def _trusted(project: "Project") -> tuple[bool, set[str]]:
    config = project.config
    authors = config.trusted_authors
    return bool(config.trust_imported), {str(a).strip().lower() for a in authors}


def held_back(project: "Project", row: MemoryRow | Whose) -> str | None:
    """Why the hooks must not inject this memory, or None."""
    if row.get("quarantine"):
        return f"quarantined: {row['quarantine']}"
    root = str(project.root)
    if provenance.is_own(row, root):
        return None
    everyone, authors = _trusted(project)
    if everyone or str(row.get("author") or "").strip().lower() in authors:
        return None
    return f"imported from {row.get('author') or 'an unknown author'}, not a trusted author"


def only_trusted(project: "Project", table: "Table", where: str | None) -> str | None:
    """``where`` narrowed to the rows the hooks may inject (the briefing's filter), in SQL."""
    if "quarantine" not in table.schema.names:
        return where
    everyone, authors = _trusted(project)
    me = provenance.author(str(project.root))
    keep = "quarantine IS NULL"
    if not everyone:
        names = sorted({*authors, *([me.lower()] if me else [])})
        allowed = f" OR lower(author) IN ({', '.join(sql_str(a) for a in names)})" if names else ""
        keep += f" AND (imported_at IS NULL{allowed})"
    return f"({where}) AND {keep}" if where else keep


def annotate(
    project: "Project", hits: Sequence[TrustNote], known: Mapping[str, MemoryRow] | None = None
) -> dict[str, Whose]:
    """Add ``from`` ("from alice@example.com, imported") and ``quarantine`` to the hits that are not
    the user's own; the provenance from ``known`` (id -> the stored row, as recall found it), else
    read by id (a read per table on every prompt, which recall's own rows spare)."""
    rows: dict[str, Whose] = {}
    missing = []
    for record_id in (str(h.get("id")) for h in hits if h.get("id")):
        row = (known or {}).get(record_id)
        if row is not None and "quarantine" in row:
            rows[record_id] = cast(Whose, {k: row.get(k) for k in COLUMNS})
        else:
            missing.append(record_id)
    if missing:
        rows.update(rows_of(project, missing))
    root = str(project.root)
    for hit in hits:
        verdict = rows.get(str(hit.get("id")))
        if verdict is None:
            continue
        if whose := provenance.whose(verdict, root):
            hit["from"] = whose
        if held := verdict.get("quarantine"):
            hit["quarantine"] = held
    return rows


def for_hooks(project: "Project", hits: Sequence[Hit], known: Mapping[str, MemoryRow] | None = None) -> list[Hit]:
    """The hits a hook may inject unasked: quarantined and untrusted imported memories left out."""
    rows = annotate(project, hits, known)
    return [h for h in hits if (row := rows.get(str(h.get("id")))) is None or held_back(project, row) is None]


def review_queue(project: "Project", limit: int = 500) -> list[Queued]:
    """The quarantined memories, with their reason, for a person to accept or delete."""
    out: list[Queued] = []
    for collection in MEMORY_TABLES:
        table = project.db.open_table(collection)
        if table is None or "quarantine" not in table.schema.names:
            continue
        text = {"facts": "text", "episodes": "summary", "logs": "text"}[collection]
        rows = _read(project, table, "quarantine IS NOT NULL", [*COLUMNS, text], limit)
        for row in rows:
            out.append(
                {
                    "id": row["id"],
                    "collection": collection,
                    "reason": str(row["quarantine"]),
                    "author": row.get("author"),
                    "origin": row.get("origin"),
                    "text": str(row.get(text) or "")[:300],
                }
            )
    return out


def accept(project: "Project", record_id: str) -> Accepted:
    """A person's word that a quarantined memory is fine: it is released (the hooks may inject it
    again by the trust settings)."""
    import pyarrow as pa

    from contextware.core.errors import NotFoundError, UsageError
    from contextware.memory.records import locate
    from contextware.storage.integrity import stamp

    collection, _table, row = locate(project, record_id)
    was = row.get("quarantine")
    if not was:
        raise UsageError(f"{record_id} is not quarantined: nothing to accept.", code="not_quarantined")

    def write(tbl: "Table") -> None:
        found = tbl.search().where(f"id = {sql_str(record_id)}").limit(1).to_list()
        if not found:
            raise NotFoundError(f"No memory has the id {record_id}.")
        fresh = {k: v for k, v in found[0].items() if not k.startswith("_")}
        fresh["quarantine"] = None
        stamp(collection, [fresh])
        tbl.merge_insert("id").when_matched_update_all().execute(pa.Table.from_pylist([fresh], schema=tbl.schema))

    project.db.write(collection, write)
    return {"id": record_id, "collection": collection, "accepted": True, "was": was}
