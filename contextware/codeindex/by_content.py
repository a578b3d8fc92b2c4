"""Summaries kept per file content: a checkout re-uses what was made for the same bytes.

The code index keeps one row per path; switching branches changes some files' content, and coming
back changes it again.  Each summary made (by Gemini or locally) is also kept here under the
content's hash (``schemas.SUMMARIES_TABLE``), so a file whose content was summarised before, on any
branch or under any path, gets that summary back without a summariser call; only its vectors are
computed again only when no vector of the same text by the same model was kept with it.  A summary is re-used when it is Gemini's, or when the crawl did not
ask for Gemini (``--summarizer gemini`` re-summarises what was summarised locally).  A full crawl
prunes the kept summaries no indexed file has now and that were stored more than
``code_index_keep_days`` (30) days ago (0: never).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextware.core.text import sql_str, sql_time, text_hash, utcnow
from contextware.storage.integrity import stamp, verify_rows
from contextware.storage.schemas import SUMMARIES_TABLE

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.codeindex.local_summary import LocalSummary
    from contextware.storage.project import Project
    from contextware.storage.schemas import CodeChunkRow, CodeFileRow

_BATCH = 500  # ids asked at once


def known(
    project: "Project", digests: Sequence[str], summarizer: str, model_id: str
) -> dict[str, tuple["LocalSummary", str, dict[str, list[float]]]]:
    """The kept summary, who made it and its vectors (text hash -> vector, when made by
    ``model_id``) of each content hash of ``digests`` that has one usable for a crawl asking for
    ``summarizer``."""
    from contextware.codeindex.local_summary import LocalSummary

    table = project.db.open_table(SUMMARIES_TABLE)
    wanted = sorted({d for d in digests if d})
    if table is None or not wanted:
        return {}
    rows: list[dict[str, Any]] = []
    for start in range(0, len(wanted), _BATCH):
        ids = ", ".join(sql_str(d) for d in wanted[start : start + _BATCH])

        def read(ids: str = ids) -> list[dict[str, Any]]:
            return table.search().where(f"id IN ({ids})").limit(None).to_list()

        rows += project.db.read(read)
    verify_rows(SUMMARIES_TABLE, rows)
    out: dict[str, tuple[LocalSummary, str, dict[str, list[float]]]] = {}
    for row in rows:
        made_by = str(row.get("summarizer") or "local")
        if summarizer == "gemini" and made_by != "gemini":
            continue
        summary = LocalSummary(
            language=row.get("language"),
            summary=row.get("summary") or "",
            symbols=list(row.get("symbols") or []),
            questions=list(row.get("questions") or []),
        )
        vectors: dict[str, list[float]] = {}
        if row.get("model") == model_id:
            for key, vec in zip(row.get("vector_texts") or [], row.get("vectors") or [], strict=False):
                if vec is not None:
                    vectors[key] = [float(x) for x in vec]
        out[row["id"]] = (summary, made_by, vectors)
    return out


def reuse_vector(row: "CodeFileRow | CodeChunkRow", text: str, kept: dict[str, list[float]]) -> bool:
    """Give ``row`` the kept vector of its embedded ``text`` if there is one (True), else False."""
    vec = kept.get(text_hash(text)) if kept else None
    if vec is None:
        return False
    row["vector"] = vec
    return True


def remember(
    project: "Project",
    rows: "Sequence[CodeFileRow]",
    embedded: "Sequence[tuple[CodeFileRow | CodeChunkRow, str]]",
    model_id: str,
) -> None:
    """Keep the summaries of freshly indexed code rows under their content hashes, with the vectors
    of the file's and its definitions' embedded texts (``embedded``: (row, text) of this write)."""
    import pyarrow as pa

    by_path: dict[str, list[tuple[str, list[float]]]] = {}
    for row, text in embedded:
        vector = row.get("vector")
        if vector is not None:
            by_path.setdefault(str(row.get("file_path")), []).append((text_hash(text), vector))
    now = utcnow()
    kept = {
        r["content_hash"]: {
            "id": r["content_hash"],
            "language": r.get("language"),
            "summary": r.get("summary"),
            "symbols": list(r.get("symbols") or []),
            "questions": list(r.get("questions") or []),
            "summarizer": r.get("summarizer"),
            "stored_at": now,
            "model": model_id,
            "vector_texts": [k for k, _ in by_path.get(str(r.get("file_path")), [])],
            "vectors": [[float(x) for x in v] for _, v in by_path.get(str(r.get("file_path")), [])],
        }
        for r in rows
        if r.get("content_hash")
    }
    if not kept:
        return
    batch = list(kept.values())
    stamp(SUMMARIES_TABLE, batch)

    def write(tbl: "Table") -> None:
        data = pa.Table.from_pylist(batch, schema=tbl.schema)
        tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)

    project.db.write(SUMMARIES_TABLE, write)


def prune(project: "Project", days: float) -> int:
    """Drop the kept summaries stored over ``days`` days ago whose content no indexed file has now
    (a full crawl calls this); how many went.  ``days`` 0 keeps everything."""
    from datetime import timedelta

    from contextware.storage.schemas import CODE_TABLE

    table = project.db.open_table(SUMMARIES_TABLE)
    code = project.db.open_table(CODE_TABLE)
    if days <= 0 or table is None or code is None:
        return 0
    old = f"stored_at < {sql_time(utcnow() - timedelta(days=days))}"

    def read() -> tuple[list[str], set[str]]:
        ids = table.search().where(old).select(["id"]).limit(None).to_arrow().column("id").to_pylist()
        if not ids:
            return [], set()
        live = code.search().select(["content_hash"]).limit(None).to_arrow().column("content_hash").to_pylist()
        return ids, set(live)

    ids, live = project.db.read(read)
    doomed = [i for i in ids if i not in live]
    if not doomed:
        return 0

    def drop(tbl: "Table") -> None:
        for start in range(0, len(doomed), _BATCH):
            tbl.delete(f"id IN ({', '.join(sql_str(d) for d in doomed[start : start + _BATCH])})")

    project.db.write(SUMMARIES_TABLE, drop)
    return len(doomed)
