"""Ranking source files for a question: four rankers fused, definition hits aggregated to files.

Each question is run against two tables (four queries):

* the files (``CODE_TABLE``): the vector of path + summary + symbol names, and BM25 over path,
  symbols, summary and content with camelCase identifiers split (``embedded_text.code_search_text``);
* the definitions (``CHUNKS_TABLE``, ``chunks.py``): the vector of each function's, method's or
  class's name, signature, doc and first lines, and BM25 over its name and body.

A file's score is

    FILE_SIM * cos(file) + CHUNK_SIM * cos(best chunk)
      + FILE_BM25 * sat(bm25(file), FILE_HALF) + CHUNK_BM25 * sat(bm25(best chunk), CHUNK_HALF)

with ``sat(x, h) = x / (x + h)``: cosines carry paraphrase, the saturated BM25 terms reward shared
words without letting a long file win on length; a question about one behaviour inside a function
reaches its file through that function's chunk even when the file's summary never mentions it.
The best chunk (by its own cosine and BM25) gives the hit its ``lines`` and ``symbol``.  A file is a
candidate when one of its own two searches finds it: fetching the rows of files found only through
a definition cost a query and changed no tune result.
Weights are calibrated on the tune splits of bench/data/code_eval*.json (``bench/code_quality.py
--tune``); the test splits are reported apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contextware.storage.integrity import verify_rows
from contextware.storage.schemas import CHUNKS_TABLE, CODE_TABLE
from contextware.storage.table_search import fts_rows, vector_rows

if TYPE_CHECKING:
    from contextware.storage.project import Project

WEIGHTS: dict[str, float] = {  # calibrated: the best mean MRR over the five tune splits
    "file_sim": 0.6,
    "chunk_sim": 0.4,
    "file_bm25": 1.5,
    "file_half": 8.0,
    "chunk_bm25": 0.0,  # 0.3-1.0 cost MRR: the file's BM25 already counts the body's words
    "chunk_half": 8.0,
}
LINES_BM25 = 0.3  # which chunk a hit points at: its cosine plus this much of its saturated BM25
CHUNK_CANDIDATES = 60  # chunks per ranker: several chunks of one file often come back together


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def file_lexical_rows(project: "Project", query: str, where: str | None, limit: int) -> list[dict]:
    """The files' BM25 search (``code_candidates`` takes it as ``lexical`` when run beforehand)."""
    table = project.db.open_table(CODE_TABLE)
    return [] if table is None else _lexical(project, CODE_TABLE, table, query, where, limit)


def _lexical(project: "Project", name: str, table: Any, query: str, where: str | None, limit: int) -> list[dict]:
    try:
        return [
            {**r, "_bm25": float(r.get("_score") or 0.0)}
            for r in fts_rows(project.db, name, table, query, where, limit)
        ]
    except Exception:  # noqa: BLE001 - no FTS index yet (empty table) or an unparsable query
        return []


def _searches(
    project: "Project", name: str, query: str, qvec: Any, where: str | None, limit: int, lexical: bool = True
) -> list:
    """The BM25 (if ``lexical``) and the vector search of one table, as calls to run (none if the
    table is missing)."""
    db = project.db
    table = db.open_table(name)
    if table is None:
        return []

    def fts() -> list[dict]:
        return _lexical(project, name, table, query, where, limit)

    def vec() -> list[dict]:
        return vector_rows(db, name, table, qvec, where, limit)

    return [f for f, wanted in ((fts, lexical), (vec, qvec is not None)) if wanted]


def _gather(results: list) -> tuple[dict[str, dict], dict[str, float]]:
    found: dict[str, dict] = {}
    bm25: dict[str, float] = {}
    for rows in (r() if callable(r) else r for r in results):
        for row in rows:
            found.setdefault(row["id"], row)
            if "_bm25" in row:
                bm25[row["id"]] = row["_bm25"]
    return found, bm25


def _parallel(
    project: "Project", query: str, qvec: Any, where: str | None, candidates: int, lexical: list[dict] | None = None
) -> tuple:
    """The four searches (files and chunks, BM25 and vector) at once: each is mostly waiting on
    LanceDB's native code, so the question costs about its slowest search, not their sum.
    ``lexical``: the files' BM25 rows (``file_lexical_rows``), when already fetched."""
    from concurrent.futures import ThreadPoolExecutor

    file_calls = _searches(project, CODE_TABLE, query, qvec, where, candidates, lexical=lexical is None)
    # Definitions are searched by vector only: their BM25 added nothing over the file's (weight 0 on
    # the tune splits) and cost a query.  Without vectors (degraded mode) their BM25 stands in.
    chunk_calls = _searches(
        project, CHUNKS_TABLE, query, qvec, where, max(candidates, CHUNK_CANDIDATES), lexical=qvec is None
    )
    with ThreadPoolExecutor(max_workers=max(1, len(file_calls) + len(chunk_calls))) as pool:
        file_futures = [pool.submit(c) for c in file_calls]
        chunk_futures = [pool.submit(c) for c in chunk_calls]
        files = _gather(([] if lexical is None else [lexical]) + [f.result() for f in file_futures])
        chunks = _gather([f.result() for f in chunk_futures])
    verify_rows(CODE_TABLE, files[0].values())  # a flipped bit is damaged_data, never a wrong answer
    verify_rows(CHUNKS_TABLE, chunks[0].values())
    return files, chunks


def _sat(x: float, half: float) -> float:
    return x / (x + half) if x > 0 else 0.0


def code_candidates(
    project: "Project",
    query: str,
    qvec: Any,
    plain: Any,
    where: str | None,
    candidates: int,
    lexical: list[dict] | None = None,
) -> list[dict]:
    """Candidate files with their features (``fuse_code`` scores them); the shape of
    ``recall.search_table``'s hits plus ``features``, ``lines`` and ``symbol``.  ``lexical``: the
    files' BM25 rows (``file_lexical_rows``), when already fetched."""
    (files, file_bm25), (chunks, chunk_bm25) = _parallel(project, query, qvec, where, candidates, lexical)
    best: dict[str, dict] = {}  # per file: its best chunk's features
    for cid, row in chunks.items():
        sim = _cosine(qvec, row["vector"]) if qvec is not None and row.get("vector") is not None else 0.0
        rel = _cosine(plain, row["vector"]) if plain is not None and row.get("vector") is not None else sim
        feat = {"sim": sim, "rel": rel, "bm25": chunk_bm25.get(cid, 0.0), "row": row}
        old = best.get(row["file_path"])
        if old is None:
            best[row["file_path"]] = {**feat, "sim_max": sim, "bm25_max": feat["bm25"]}
            continue
        old["sim_max"] = max(old["sim_max"], sim)
        old["bm25_max"] = max(old["bm25_max"], feat["bm25"])
        old["rel"] = max(old["rel"], rel)
        if _chunk_score(feat) > _chunk_score(old):
            old.update({k: feat[k] for k in ("sim", "bm25", "row")})
    out = []
    for fid, row in files.items():
        has_vec = qvec is not None and row.get("vector") is not None
        file_sim = _cosine(qvec, row["vector"]) if has_vec else None
        file_rel = _cosine(plain, row["vector"]) if has_vec and plain is not None else file_sim
        chunk = best.get(fid)
        features = {
            "file_sim": file_sim or 0.0,
            "file_bm25": file_bm25.get(fid, 0.0),
            "chunk_sim": chunk["sim_max"] if chunk else (file_sim or 0.0),  # no definition found: neutral
            "chunk_bm25": chunk["bm25_max"] if chunk else 0.0,
        }
        rels = [r for r in (file_rel, chunk["rel"] if chunk and qvec is not None else None) if r is not None]
        hit = {
            "row": row,
            "collection": CODE_TABLE,
            "similarity": file_sim,
            "relevance": max(rels) if rels else None,  # how much the file or one of its definitions resembles it
            "bm25": features["file_bm25"],
            "features": features,
        }
        if chunk:
            hit["lines"] = [int(chunk["row"]["start_line"]), int(chunk["row"]["end_line"])]
            hit["symbol"] = chunk["row"]["name"]
        out.append(hit)
    return out


def _chunk_score(feat: dict) -> float:
    """Which of a file's chunks its hit points at."""
    return feat["sim"] + LINES_BM25 * _sat(feat["bm25"], WEIGHTS["chunk_half"])


def fuse_code(features: dict[str, float], weights: dict[str, float] | None = None) -> float:
    """A file's fused score from its features (see the module docstring)."""
    w = WEIGHTS if weights is None else {**WEIGHTS, **weights}
    return (
        w["file_sim"] * features["file_sim"]
        + w["chunk_sim"] * features["chunk_sim"]
        + w["file_bm25"] * _sat(features["file_bm25"], w["file_half"])
        + w["chunk_bm25"] * _sat(features["chunk_bm25"], w["chunk_half"])
    )
