"""Recall's first stage: the candidates of every table a query covers, each with its cosine and
BM25 scores.  The question is widened by the engineering thesaurus (``expand_query``) for the
memories' full-text search and nudged toward that widened form for the vector search; code is
searched with the plain question (``codeindex.search``).  A captured turn that follows one of the
best full-text turns joins them (``next_turns``): a reply is found by what it answers.  Nothing
here writes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from contextware.core.errors import DamagedDataError, EmbeddingError
from contextware.core.text import sql_str, sql_time
from contextware.memory.branches import recall_wheres
from contextware.memory.recall.params import FusionParams
from contextware.storage.candidate import Candidate, Row
from contextware.storage.embedded_text import expand_query
from contextware.storage.integrity import verify_rows
from contextware.storage.schemas import CODE_TABLE
from contextware.storage.table_search import columns, fts_rows, vector_rows

if TYPE_CHECKING:
    import numpy as np
    from lancedb.table import Table

    from contextware.memory.recall.query import RecallQuery
    from contextware.storage.embeddings import Embedder
    from contextware.storage.project import Project

# The question's vectors per embedding model, or why they could not be made: embedded once for
# every project of a search across projects.
Vectors = dict[str, "tuple[np.ndarray, np.ndarray] | str"]


@dataclass(frozen=True)
class CandidateSet:
    candidates: list[Candidate]
    degraded: str | None  # why vectors were not used; None when they were


def query_vectors(
    embedder: "Embedder", query: str, expanded: str, fusion: FusionParams
) -> "tuple[np.ndarray, np.ndarray]":
    """(search vector, plain vector): the question's embedding nudged toward its widened form, and
    the question's own embedding, which the floors are judged on."""
    import numpy as np

    if expanded == query:
        plain = embedder.embed([query])[0]
        return plain, plain
    wide_text = " ".join([query, *expanded[len(query) :].split()[: fusion.expansion_words]])
    plain, wide = embedder.embed([query, wide_text])
    vec = np.asarray(plain, dtype=np.float32) + fusion.expansion_weight * np.asarray(wide, dtype=np.float32)
    return vec / float(np.linalg.norm(vec) or 1.0), plain


def _cosine(a: "np.ndarray", b: "np.ndarray") -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def lexical_rows(project: "Project", name: str, query: str, where: str | None, candidates: int) -> list[Row]:
    """The BM25 candidates of one table (each with ``_score``); none without a full-text index yet
    (an empty table) or for a query the index cannot parse."""
    table = project.db.open_table(name)
    if table is None:
        return []
    try:
        return fts_rows(project.db, name, table, query, where, candidates)
    except DamagedDataError:
        raise
    except Exception:  # noqa: BLE001 - no FTS index yet (empty table) or an unparsable query
        return []


def next_turns(project: "Project", table: "Table", turns: list[Row], where: str | None) -> list[Row]:
    """The turn written next in the session of each of ``turns`` (within ``NEIGHBOUR_SECONDS``):
    "yes, the blue one" is found by the question it answers.  One read of the few minutes after
    each turn (bounded however long its session); nothing is copied into a turn's own index, so a
    deleted turn leaves no trace in its neighbour's."""
    from datetime import datetime, timedelta

    from contextware.memory.recall.ranker import NEIGHBOUR_SECONDS

    anchors = [
        (str(r["session_id"]), r["created_at"])
        for r in turns
        if r.get("session_id") and isinstance(r.get("created_at"), datetime)
    ]
    if not anchors:
        return []
    windows = [
        f"(session_id = {sql_str(session)} AND created_at > {sql_time(moment)}"
        f" AND created_at <= {sql_time(moment + timedelta(seconds=NEIGHBOUR_SECONDS))})"
        for session, moment in anchors
    ]
    filt = f"({' OR '.join(windows)})" + (f" AND ({where})" if where else "")
    rows: list[Row] = project.db.read(
        lambda: table.search().where(filt).select(columns(project.db, table)).limit(10_000).to_list()
    )
    out: dict[str, Row] = {}
    for session, moment in anchors:
        after = [r for r in rows if r["session_id"] == session and r["created_at"] > moment]
        if after:
            first = min(after, key=lambda r: (r["created_at"], str(r["id"])))
            out.setdefault(str(first["id"]), first)
    return list(out.values())


def search_table(
    project: "Project",
    name: str,
    query: str,
    qvec: "np.ndarray",
    where: str | None,
    candidates: int,
    plain: "np.ndarray | None" = None,
    lexical: list[Row] | None = None,
    joined: int = 0,
) -> list[Candidate]:
    """Candidates from one memory table with their similarity and BM25 score; ``relevance`` is the
    cosine to ``plain`` (the unwidened question).  ``lexical``: the table's ``lexical_rows`` for
    ``query``, when already fetched.  ``joined``: for captured turns, the turn after each of that
    many best full-text turns joins them (``next_turns``)."""
    db = project.db
    table = db.open_table(name)
    if table is None:
        return []
    found: dict[str, Row] = {}
    bm25: dict[str, float] = {}
    for row in lexical_rows(project, name, query, where, candidates) if lexical is None else lexical:
        found[row["id"]] = row
        bm25[row["id"]] = float(row.get("_score") or 0.0)
    if qvec is not None:
        for row in vector_rows(db, name, table, qvec, where, candidates):
            found.setdefault(row["id"], row)
    if name == "logs" and joined > 0 and bm25:
        best = sorted(bm25, key=lambda rid: -bm25[rid])[:joined]
        for row in next_turns(project, table, [found[rid] for rid in best], where):
            found.setdefault(row["id"], row)
    verify_rows(name, found.values())
    out = []
    for rid, row in found.items():
        has_vec = qvec is not None and row.get("vector") is not None
        sim = _cosine(qvec, row["vector"]) if has_vec else None
        rel = _cosine(plain, row["vector"]) if has_vec and plain is not None else sim
        out.append(Candidate(row=row, collection=name, similarity=sim, relevance=rel, bm25=bm25.get(rid, 0.0)))
    return out


def candidates(
    project: "Project", query: "RecallQuery", fusion: FusionParams, vectors: Vectors, tag: bool = False
) -> CandidateSet:
    """Candidates of every table of one project.  The full-text searches run while the question
    is embedded (they need no vector), then the vector searches, the tables at once: each search
    mostly waits in LanceDB's native code (or numpy), so a question costs about its slowest table.
    ``tag`` marks each candidate with its project (a search across projects)."""
    text, tables = query.question, query.tables
    embedder = project.embedder
    opened = {t: project.db.open_table(t) for t in tables}
    present = [t for t in tables if opened[t] is not None]
    for name, table in opened.items():
        if table is not None:
            project.db.check_model(name, table, embedder.model_id, embedder.dim)
    wide = expand_query(text)
    limit = max(project.config.recall_candidates, query.limit * 3)
    wheres = {name: query.filters.where(name, project.root) for name in present}
    # memory.branches: what HEAD sees; a query with a margin is the prompt hook's (it injects unasked)
    wheres = recall_wheres(project, query.filters.branch, wheres, unasked=query.margin is not None)

    def lexical(name: str) -> list[Row]:
        # Code is searched with the plain question: the thesaurus matches too many files' words.
        if name == CODE_TABLE:
            from contextware.codeindex.search import file_lexical_rows

            return file_lexical_rows(project, text, wheres[name], limit)
        return lexical_rows(project, name, wide, wheres[name], limit)

    def embed() -> tuple[Any, Any, str | None]:
        """(search vector, plain vector, why there are none)."""
        if not present:
            return None, None, None
        if embedder.model_id not in vectors:
            try:
                vectors[embedder.model_id] = query_vectors(embedder, text, wide, fusion)
            except EmbeddingError as exc:
                vectors[embedder.model_id] = f"{exc.message} Answering from full-text search only."
        cached = vectors[embedder.model_id]
        return (None, None, cached) if isinstance(cached, str) else (*cached, None)

    def table_hits(name: str, lex: list[Row]) -> list[Candidate]:
        if name == CODE_TABLE:
            from contextware.codeindex.search import code_candidates

            return code_candidates(project, text, qvec, plain, wheres[name], limit, lexical=lex)
        return search_table(
            project, name, wide, qvec, wheres[name], limit, plain, lexical=lex, joined=fusion.next_turns
        )

    if len(present) < 2:
        qvec, plain, degraded = embed()
        found = [c for name in present for c in table_hits(name, lexical(name))]
    else:
        with ThreadPoolExecutor(max_workers=len(present)) as pool:
            started = [pool.submit(lexical, name) for name in present]
            qvec, plain, degraded = embed()
            lexed = [f.result() for f in started]
            found = [c for hits in pool.map(table_hits, present, lexed) for c in hits]
    if tag:
        found = [replace(c, project=project) for c in found]
    return CandidateSet(found, degraded)
