"""Fixing one memory after it was saved: ``update`` (its fields, re-embedded), ``confirm`` (still true
although code it names changed) and ``delete`` (a fact or episode leaves a tombstone that travels).

Plain functions the console command, the MCP server and the memory browser call; each returns a
JSON-ready dict, each failure is a ``ContextwareError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from contextware.core.errors import NotFoundError, UsageError
from contextware.core.redact import redact, refuse_secret_name, refuse_secret_topics
from contextware.core.text import parse_topics, sql_str, text_hash
from contextware.memory.code_links import LINKED_COLLECTIONS, link_row, stale_note
from contextware.memory.records import (
    FACT_KINDS,
    RESULTS,
    ROLES,
    check_choice,
    check_slug,
    locate,
    public_row,
    require_text,
)
from contextware.memory.results import Confirmed, Deleted, LinkedRow, MemoryRow, Updated
from contextware.memory.team.tombstones import changed_after
from contextware.storage.embedded_text import embedding_text, search_text
from contextware.storage.embeddings import embed_texts
from contextware.storage.integrity import stamp
from contextware.storage.schemas import FTS_COLUMN, FactRow

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project


def update(project: "Project", record_id: str, **changes: Any) -> Updated:
    """Change fields of one memory and re-embed it."""
    import pyarrow as pa

    collection, table, row = locate(project, record_id)
    editable = {
        "facts": {"text", "kind", "topics", "status"},
        "episodes": {"goal", "result", "category", "summary", "topics"},
        "logs": {"text", "role"},
    }[collection]
    given = {k: v for k, v in changes.items() if v is not None}
    if not given:
        raise UsageError("Nothing to update: give at least one field to change.", code="nothing_to_update")
    bad = sorted(set(given) - editable)
    if bad:
        raise UsageError(f"{', '.join('--' + b for b in bad)} cannot be changed on {collection}.", code="bad_option")
    redactions: dict[str, int] = {}
    for key in ("text", "summary", "goal"):
        if key in given:
            given[key], found = redact(require_text(given[key], key))
            redactions.update(found)
    if "kind" in given:
        given["kind"] = check_choice(given["kind"], FACT_KINDS, "kind")
    if "result" in given:
        given["result"] = check_choice(given["result"], RESULTS, "result")
    if "category" in given:
        given["category"] = refuse_secret_name(check_slug(given["category"], "category") or "", "category")
    if "role" in given:
        given["role"] = check_choice(given["role"], ROLES, "role")
    if "status" in given:
        given["status"] = check_choice(given["status"], ("active", "superseded"), "status")
    if "topics" in given:
        given["topics"] = parse_topics(refuse_secret_topics(given["topics"]))
    new: dict[str, Any] = {k: v for k, v in row.items() if not k.startswith("_")}  # any table's columns
    new.update(given)
    new["updated_at"] = changed_after(row.get("updated_at"))
    if collection == "facts":
        new["text_hash"] = text_hash(new["text"])
    elif collection == "episodes":
        new["text_hash"] = text_hash(new["goal"], new["result"] or "", new["summary"])
    new[FTS_COLUMN] = search_text(collection, new)
    link_row(project, collection, cast(LinkedRow, new))  # what it names now, as the code is now: clears a stale flag
    embedder = project.embedder
    project.db.check_model(collection, table, embedder.model_id, embedder.dim)  # before paying for a vector
    vectors, degraded = embed_texts(project.embedder, [embedding_text(collection, new)])
    new["vector"] = vectors[0] if vectors else None
    stamp(collection, [new])

    def write(tbl: "Table") -> None:
        if not tbl.search().where(f"id = {sql_str(record_id)}").limit(1).to_list():
            raise NotFoundError(f"No memory has the id {record_id}.")
        data = pa.Table.from_pylist([new], schema=tbl.schema)
        tbl.merge_insert("id").when_matched_update_all().execute(data)

    project.db.write(collection, write, dim=embedder.dim, model_id=embedder.model_id)
    out: Updated = {
        "id": record_id,
        "collection": collection,
        "updated": sorted(given),
        "record": public_row(cast(MemoryRow, new), collection),
    }
    if redactions:
        out["redacted"] = redactions
    if degraded:
        out["degraded"] = degraded
    return out


def confirm(project: "Project", record_id: str) -> Confirmed:
    """Say that a fact or episode still holds although code it names changed: it is linked again to
    the files it names as the code index has them now, which clears its ``may_be_stale`` flag."""
    import pyarrow as pa

    collection, _table, row = locate(project, record_id)
    if collection not in LINKED_COLLECTIONS:
        raise UsageError(f"Only facts and episodes are tied to code; {record_id} is a log.", code="bad_collection")
    was = stale_note(project, collection, cast(LinkedRow, row))
    linked = cast(LinkedRow, dict(row))
    link_row(project, collection, linked)
    columns = ("code_links", "code_hashes", "linked_at")

    def write(tbl: "Table") -> None:
        found = tbl.search().where(f"id = {sql_str(record_id)}").limit(1).to_list()
        if not found:
            raise NotFoundError(f"No memory has the id {record_id}.")
        fresh = {k: v for k, v in found[0].items() if not k.startswith("_")}
        fresh.update({c: linked.get(c) for c in columns})
        tbl.merge_insert("id").when_matched_update_all().execute(pa.Table.from_pylist([fresh], schema=tbl.schema))

    project.db.write(collection, write)
    from contextware.memory.turns.usage import relied_on

    relied_on(project.data_dir, [record_id])  # confirming a memory is relying on it
    return {
        "id": record_id,
        "collection": collection,
        "confirmed": True,
        "was_stale": was,
        "code_links": linked.get("code_links") or [],
    }


def delete(project: "Project", record_id: str) -> Deleted:
    """Delete one memory; a fact or an episode leaves a tombstone (``tombstones``), recorded first,
    so that the deletion travels through ``export`` and ``import``."""
    from contextware.memory.team import tombstones

    collection, _table, found = locate(project, record_id)
    row = cast(FactRow, found)  # ``supersedes`` is read only from a fact
    stone = (
        tombstones.tombstone_for(project, cast("dict[str, Any]", row)) if collection in ("facts", "episodes") else None
    )

    def write(tbl: "Table") -> None:
        if stone is not None:
            tombstones.record(project, [stone])
        tbl.delete(f"id = {sql_str(record_id)}")
        if collection == "facts" and (older := row.get("supersedes")):
            # The fact it replaced becomes current again rather than staying hidden forever (a newer
            # updated_at, so that this travels too).
            where = f"id = {sql_str(older)} AND superseded_by = {sql_str(record_id)}"
            for before in tbl.search().where(where).select(["updated_at"]).limit(1).to_list():
                when = changed_after(before.get("updated_at"))
                tbl.update(where=where, values={"status": "active", "superseded_by": None, "updated_at": when})

    project.db.write(collection, write)  # the table exists: a delete needs no model
    out: Deleted = {"id": record_id, "collection": collection, "deleted": True}
    if collection == "facts" and (older := row.get("supersedes")):
        out["reactivated"] = older
    return out
