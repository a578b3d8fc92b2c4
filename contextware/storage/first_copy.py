"""Exactly one copy of a saved text when writers share no lock (machines on one object store).

On one machine the write lock makes "check for the text, then append" atomic. Writers on other
machines share no lock, so two of them can both find no copy and both append. What is safe there:
appends, which LanceDB never loses (each commit is a put-if-absent of the next version; a writer that
loses the race re-commits on top), and deletes of one's own rows. What is not: ``merge_insert`` keyed
on the text. Its commit carries an Update of existing fragments, and the conflict checks for
concurrent merge_inserts that insert new keys are an open problem upstream (lance-format/lance
#4585, lancedb/lancedb#3377); measured here it once lost 4 of 80 rows.

So every writer appends, and if another commit landed between its check and its own commit, it asks
the version just before its commit (a total order: versions are numbered one by one) whether a copy
was committed first. If one was, it deletes its own rows and answers with the first copy's id. The
first committer finds nothing before it and keeps its row; every later one finds it. No row other
than a later duplicate is ever deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextware.core.text import sql_str
from contextware.storage.database import with_retries

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.database import Database

# How far back to look for the commit that added the first copy (one step per concurrent commit).
MAX_STEPS = 64


def _ids_at(table: "Table", version: int, where: str) -> list[str]:
    table.checkout(version)
    rows = table.search().where(where).select(["id"]).limit(None).to_arrow().to_pylist()
    return sorted(r["id"] for r in rows)


def _first_copy(table: "Table", version: int, where: str, seen: list[str]) -> str:
    """The id of the row matching ``where`` that was committed first, walking back from ``version``
    (where ``seen`` matched) to the version before any copy existed; the commit after it added
    exactly one save's rows."""
    for _ in range(MAX_STEPS):
        if version <= 1:
            break
        try:
            earlier = _ids_at(table, version - 1, where)
        except Exception:  # noqa: BLE001 - that version was cleaned up: the oldest copy seen is the best guess
            break
        if not earlier:
            break
        seen, version = earlier, version - 1
    return seen[0]


def _commit_of(table: "Table", row_id: str, hint: int) -> int:
    """The version whose commit added ``row_id``: the first one that holds it.  The version an append
    reports is only a hint (under concurrent commits it was seen to be a later one), and trusting a
    later one would make a writer take its own row, or a later duplicate, for an earlier copy."""
    where = f"id = {sql_str(row_id)}"
    version = hint
    latest = table.list_versions()[-1]["version"]
    while version < latest and not _ids_at(table, version, where):
        version += 1
    while version > 1 and _ids_at(table, version - 1, where):
        version -= 1
    return version


def keep_first_copy(db: "Database", name: str, where: str, mine: list[str], committed: int) -> str | None:
    """After appending the rows ``mine`` (in version ``committed``, as the append reported it): if a
    row matching ``where`` was committed before them, delete ``mine`` and return the first copy's id;
    else return None."""
    # A handle of our own: the shared one must stay on the latest version for other threads.
    table = db.conn.open_table(name)
    version = db.read(lambda: _commit_of(table, mine[0], committed))
    if version <= 1:
        return None
    before = db.read(lambda: _ids_at(table, version - 1, where))
    if not before:
        return None
    first = db.read(lambda: _first_copy(table, version - 1, where, before))
    shared = db.open_table(name) or table
    ids = ", ".join(sql_str(i) for i in mine)
    try:
        with_retries(lambda: shared.delete(f"id IN ({ids})"))
    except Exception:  # noqa: BLE001 - our rows stay: one extra copy, which a later save names as a duplicate
        return None
    return first
