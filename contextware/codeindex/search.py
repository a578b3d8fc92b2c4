"""Ranking source files for a question: four rankers fused, definition hits aggregated to files.

Each question runs against two tables: the files (``CODE_TABLE``: the vector of path + summary +
symbol names, BM25 over path, symbols, summary and content) and their definitions (``CHUNKS_TABLE``:
the vector of a function's name, signature, doc and first lines).  A file's score
(``fuse_code``) weighs its cosine, its best and second-best definitions' cosines, its saturated
BM25, the share of the question's words its path and definition names hold (``name_match``), and a
penalty for test files when the question is not about tests.  The weights (``CodeWeights``) were
calibrated on the tune splits of bench/data/code_eval*.json; the experiments and their numbers are
in docs/retrieval.md.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextware.codeindex.hits import CODE_STEM, query_terms
from contextware.core.words import pieces, stem
from contextware.storage.candidate import Candidate, Row
from contextware.storage.integrity import verify_rows
from contextware.storage.schemas import CHUNKS_TABLE, CODE_TABLE
from contextware.storage.table_search import fts_rows, vector_rows

if TYPE_CHECKING:
    import numpy as np
    from lancedb.table import Table

    from contextware.storage.project import Project


@dataclass(frozen=True)
class CodeWeights:
    """How a file's features are fused (``fuse_code``).  Calibrated on the five tune splits
    (``bench/code_quality.py --tune``): file 0.6, definition 0.6, file BM25 2.0 (half 8), second
    definition 0.1, name 0.3, test 0.3, scaled by 2.5/3.6 so that the largest possible score stays
    what it was (recall compares code scores with memories' and gates on them)."""

    file_sim: float = 0.42
    chunk_sim: float = 0.42
    file_bm25: float = 1.39
    file_half: float = 8.0
    chunk_bm25: float = 0.0  # 0.3-1.0 cost MRR: the file's BM25 already counts the body's words
    chunk_half: float = 8.0
    chunk_sim2: float = 0.07  # the second-best definition's cosine: more than one definition about it
    name: float = 0.21  # the query's words found in the file's path and definition names (``name_match``)
    test: float = 0.21  # a test file, for a question that does not ask about tests (a penalty)


DEFAULT_CODE_WEIGHTS = CodeWeights()
LINES_BM25 = 0.3  # which chunk a hit points at: its cosine plus this much of its saturated BM25
CHUNK_CANDIDATES = 60  # chunks per ranker: several chunks of one file often come back together


Search = Callable[[], list[Row]]
Found = tuple[dict[str, Row], dict[str, float]]  # rows by id, and the BM25 score of those BM25 found


def _cosine(a: "np.ndarray | Sequence[float]", b: "np.ndarray | Sequence[float]") -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def file_lexical_rows(project: "Project", query: str, where: str | None, limit: int) -> list[Row]:
    """The files' BM25 search (``code_candidates`` takes it as ``lexical`` when run beforehand)."""
    table = project.db.open_table(CODE_TABLE)
    return [] if table is None else _lexical(project, CODE_TABLE, table, query, where, limit)


def _lexical(project: "Project", name: str, table: "Table", query: str, where: str | None, limit: int) -> list[Row]:
    try:
        return [
            {**r, "_bm25": float(r.get("_score") or 0.0)}
            for r in fts_rows(project.db, name, table, query, where, limit)
        ]
    except Exception:  # noqa: BLE001 - no FTS index yet (empty table) or an unparsable query
        return []


def _searches(
    project: "Project", name: str, query: str, qvec: "np.ndarray", where: str | None, limit: int, lexical: bool = True
) -> list[Search]:
    """The BM25 (if ``lexical``) and the vector search of one table, as calls to run (none if the
    table is missing)."""
    db = project.db
    table = db.open_table(name)
    if table is None:
        return []

    def fts() -> list[Row]:
        return _lexical(project, name, table, query, where, limit)

    def vec() -> list[Row]:
        return vector_rows(db, name, table, qvec, where, limit)

    return [f for f, wanted in ((fts, lexical), (vec, qvec is not None)) if wanted]


def _gather(results: list[list[Row]]) -> Found:
    found: dict[str, Row] = {}
    bm25: dict[str, float] = {}
    for rows in results:
        for row in rows:
            found.setdefault(row["id"], row)
            if "_bm25" in row:
                bm25[row["id"]] = row["_bm25"]
    return found, bm25


def _parallel(
    project: "Project",
    query: str,
    qvec: "np.ndarray",
    where: str | None,
    candidates: int,
    lexical: list[Row] | None = None,
) -> tuple[Found, Found]:
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


@dataclass
class _BestChunk:
    """A file's definitions as the search saw them: the one its hit points at (``row``, with its
    ``sim`` and ``bm25``), the best and second-best cosines, the best BM25 and relevance."""

    row: Row
    sim: float
    bm25: float
    rel: float
    sim_max: float
    sim_2nd: float = 0.0
    bm25_max: float = 0.0


def _best_chunks(chunks: Found, qvec: "np.ndarray", plain: "np.ndarray") -> dict[str, _BestChunk]:
    """Per file: its definitions' best signals (the hit points at the best-scored one)."""
    rows, chunk_bm25 = chunks
    best: dict[str, _BestChunk] = {}
    for cid, row in rows.items():
        sim = _cosine(qvec, row["vector"]) if qvec is not None and row.get("vector") is not None else 0.0
        rel = _cosine(plain, row["vector"]) if plain is not None and row.get("vector") is not None else sim
        bm25 = chunk_bm25.get(cid, 0.0)
        old = best.get(row["file_path"])
        if old is None:
            best[row["file_path"]] = _BestChunk(row, sim, bm25, rel, sim_max=sim, bm25_max=bm25)
            continue
        old.sim_2nd = max(old.sim_2nd, min(old.sim_max, sim))
        old.sim_max = max(old.sim_max, sim)
        old.bm25_max = max(old.bm25_max, bm25)
        old.rel = max(old.rel, rel)
        if _chunk_score(sim, bm25) > _chunk_score(old.sim, old.bm25):
            old.row, old.sim, old.bm25 = row, sim, bm25
    return best


def code_candidates(
    project: "Project",
    query: str,
    qvec: "np.ndarray",
    plain: "np.ndarray",
    where: str | None,
    candidates: int,
    lexical: list[Row] | None = None,
) -> list[Candidate]:
    """Candidate files with their ``features`` (``fuse_code`` scores them) and the best definition's
    ``lines`` and ``symbol``.  ``lexical``: the files' BM25 rows (``file_lexical_rows``), when
    already fetched."""
    (files, file_bm25), chunks = _parallel(project, query, qvec, where, candidates, lexical)
    best = _best_chunks(chunks, qvec, plain)
    names = name_match(query, list(files.values()))
    about_tests = bool(_TEST_WORDS & set(pieces(query)))
    out = []
    for fid, row in files.items():
        has_vec = qvec is not None and row.get("vector") is not None
        file_sim = _cosine(qvec, row["vector"]) if has_vec else None
        file_rel = _cosine(plain, row["vector"]) if has_vec and plain is not None else file_sim
        chunk = best.get(fid)
        features = {
            "file_sim": file_sim or 0.0,
            "file_bm25": file_bm25.get(fid, 0.0),
            "chunk_sim": chunk.sim_max if chunk else (file_sim or 0.0),  # no definition found: neutral
            "chunk_bm25": chunk.bm25_max if chunk else 0.0,
            "chunk_sim2": chunk.sim_2nd if chunk else 0.0,  # a second definition about it too
            "name": names.get(fid, 0.0),
            "test": 1.0 if not about_tests and is_test_path(row["file_path"]) else 0.0,
        }
        rels = [r for r in (file_rel, chunk.rel if chunk and qvec is not None else None) if r is not None]
        out.append(
            Candidate(
                row=row,
                collection=CODE_TABLE,
                similarity=file_sim,
                relevance=max(rels) if rels else None,  # the file or one of its definitions resembles it
                bm25=features["file_bm25"],
                features=features,
                lines=(int(chunk.row["start_line"]), int(chunk.row["end_line"])) if chunk else None,
                symbol=chunk.row["name"] if chunk else None,
            )
        )
    return out


_TEST_PATH = re.compile(r"(^|/)(tests?|testing|__tests__|spec)(/|$)|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$")
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures"})


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def _name_words(row: Row) -> frozenset[str]:
    """The words of a file's path segments and definition names, as ``query_terms`` cuts them."""
    return _words_of_names(row["file_path"], tuple(row.get("symbols") or ()))


@functools.lru_cache(maxsize=4096)
def _words_of_names(file_path: str, symbols: tuple[str, ...]) -> frozenset[str]:
    """Cached: the same files come back question after question in a long-lived process, and
    cutting their names was a tenth of a warm code search."""
    names = " ".join([file_path, *symbols])
    return frozenset(stem(w, CODE_STEM) for w in pieces(names) if len(w) >= 3)


def name_match(query: str, rows: list[Row]) -> dict[str, float]:
    """Per file: the share of the query's words (weighted by their rarity among the candidates'
    names, an IDF) that its path segments or definition names contain: a question that names a
    concept ("spinner", "shutdown", "pager") finds the file or the function called so."""
    terms = query_terms(query)
    if not terms or not rows:
        return {}
    words = {row["id"]: _name_words(row) for row in rows}
    n = len(rows)
    idf = {t: math.log(1 + n / (1 + sum(t in w for w in words.values()))) for t in terms}
    total = sum(idf.values()) or 1.0
    return {fid: sum(idf[t] for t in terms if t in w) / total for fid, w in words.items()}


def _chunk_score(sim: float, bm25: float) -> float:
    """Which of a file's chunks its hit points at."""
    return sim + LINES_BM25 * _sat(bm25, DEFAULT_CODE_WEIGHTS.chunk_half)


def fuse_code(features: Mapping[str, float], weights: CodeWeights = DEFAULT_CODE_WEIGHTS) -> float:
    """A file's fused score from its features (see the module docstring)."""
    w = weights
    return (
        w.file_sim * features["file_sim"]
        + w.chunk_sim * features["chunk_sim"]
        + w.file_bm25 * _sat(features["file_bm25"], w.file_half)
        + w.chunk_bm25 * _sat(features["chunk_bm25"], w.chunk_half)
        + w.chunk_sim2 * features.get("chunk_sim2", 0.0)
        + w.name * features.get("name", 0.0)
        - w.test * features.get("test", 0.0)
    )
