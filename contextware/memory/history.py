"""The history of one memory: the chain of facts that superseded one another, oldest first.

A fact replaced with ``--supersedes`` keeps its row (status ``superseded``, ``superseded_by`` naming
its successor), so the whole line of a decision can be walked in both directions from any of its
links.  Edits made in place (``memory.py update``) are not versioned: each link shows when it was
created and last updated.  Episodes and logs are never superseded; their history is the record
itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from contextware.core.text import sql_str
from contextware.memory.records import locate, public_row
from contextware.memory.results import History, MemoryRow

if TYPE_CHECKING:
    from contextware.storage.project import Project

# A chain longer than this is a loop planted by hand (an edited import file): stop walking.
MAX_CHAIN = 1000


def history(project: "Project", record_id: str) -> History:
    """``{"id", "collection", "current", "chain": [oldest ... newest], "missing": [...]}``.

    ``current`` is the id of the chain's active fact (None when every link is superseded), and
    ``missing`` lists ids a link names that no longer exist (deleted or never imported)."""
    collection, table, row = locate(project, record_id)
    if collection != "facts":
        record = public_row(row, collection)
        return {"id": record_id, "collection": collection, "current": record_id, "chain": [record], "missing": []}

    def fetch(fact_id: str) -> MemoryRow | None:
        rows = project.db.read(lambda: table.search().where(f"id = {sql_str(fact_id)}").limit(1).to_list())
        return cast("MemoryRow", rows[0]) if rows else None

    seen = {record_id}
    missing: list[str] = []
    older: list[MemoryRow] = []
    newer: list[MemoryRow] = []
    for link, out in (("supersedes", older), ("superseded_by", newer)):
        cursor: MemoryRow = row
        while (next_id := cursor.get(link)) and isinstance(next_id, str) and len(seen) < MAX_CHAIN:
            if next_id in seen:
                break
            seen.add(next_id)
            found = fetch(next_id)
            if found is None:
                missing.append(next_id)
                break
            out.append(found)
            cursor = found
    chain = [public_row(r, "facts") for r in [*reversed(older), row, *newer]]
    current = next((r["id"] for r in reversed(chain) if r.get("status") != "superseded"), None)
    return {"id": record_id, "collection": "facts", "current": current, "chain": chain, "missing": missing}
