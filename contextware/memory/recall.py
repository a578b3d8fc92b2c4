"""Hybrid retrieval over the memory tables: vectors plus the native full-text index, fused into one
score, gated by a relevance floor.  What each row embeds and indexes is decided in ``storage/embedded_text.py``.

1. The question is widened by ``embedded_text.expand_query`` (a generic engineering thesaurus: "ship" brings
   "deploy release rollout ...").  The query vector is the normalised sum of the question's embedding
   and EXPANSION_WEIGHT times the widened question's embedding (one batch of two; at most
   EXPANSION_WORDS added words, to bound its cost), so synonyms pull the vector toward the memory's
   wording without drowning the question.  The widened text is also the full-text (BM25) query; the
   index stems and drops stop words.
2. Each table gives its nearest ``candidates`` rows by vector and by BM25; every candidate gets

       score = cosine(query, row) + BM25_WEIGHT * bm25 / (bm25 + BM25_HALF)

   The cosine carries paraphrase; the saturated BM25 term rewards rows that share words (names,
   flags, error strings, synonyms) with the question without letting a long row win on length.
3. ``select`` applies the floor: if the best cosine similarity between the *plain* question (not
   widened: synonyms make every row look a little relevant) and any candidate is below FLOOR, nothing
   in memory resembles the question and recall returns no results; otherwise it returns the rows
   whose score is within MARGIN of the best, best first.  Without vectors (degraded mode) recall
   keeps any full-text match (LEXICAL_FLOOR) and no margin applies.
4. Every candidate gets a ``confidence`` in [0, 1] (``confidence.py``: several signals, one
   logistic model).  Unless one reaches ``min_confidence`` (config ``recall_min_confidence``; the
   prompt hook's ``hook_min_confidence``), recall returns nothing: ``"answerable": false``.

Calibration (``uv run bench/recall_quality.py --tune``, on the tune split of
bench/data/memory_eval.json; ``--split test`` reports the held-out split): EXPANSION_WEIGHT,
BM25_WEIGHT and BM25_HALF maximise recall@3.  FLOOR is two standard deviations below the mean best
relevance of the answerable tune questions: a safety net against questions unlike anything in
memory (off-topic prompts).  It cannot tell an unanswerable question *about the project* from a
hard paraphrase: with this small model their similarities overlap.  A floor set for that trade-off
on the tune split (~0.27: a third of them silenced for 4 points of recall@3) silenced none of the
test split's and cost it ~10 points, so it was given up; ``--tune`` prints the tune curve.  MARGIN
is the tightest that costs no recall@5.  Re-ranking ideas measured on the tune split (recall@3
0.897 as fused here) and not kept: pseudo-relevance feedback (the centroid of the top 1-8
candidates' vectors added to the score, 0.82-0.90), a hubness correction (a row's mean similarity
to its nearest other candidates subtracted, 0.84-0.91: one question either way is noise),
min-max-normalised BM25 or reciprocal-rank fusion instead of the saturated sum (0.79-0.88), a
bonus for the share of question words a row covers (0.86-0.90), a query vector leaning on the
question's content words only (0.83-0.88), and a logistic re-ranker over ten such signals (0.87,
5-fold cross-validated).

Code (``bench/code_quality.py``, the tune split of bench/data/code_eval.json over a copy of the
standard library): files are searched with the plain question (the thesaurus widening cost 25 points
of BM25 recall@5 there), and BM25 over path, symbols, summary and content carries much more weight
(CODE_BM25_WEIGHT, CODE_BM25_HALF): questions name behaviour that a summary leaves out.  The fused
score is scaled by CODE_SCALE into the memories' range so that ``--scope all`` can rank both; code
results are not cut by MARGIN.  With ``--scope code`` files are only ranked (whoever asks for code
wants the likeliest files).  Mixed with memories (``--scope all``, the hooks), code answers a
question at all only when its best file resembles the plain question (CODE_FLOOR: 95% of the set's
questions have a file at 0.36 or more, nine of ten off-topic questions none above 0.24) or scores
high (CODE_SCORE_FLOOR: the right first answers of the set score 0.47 and more, the best files for
the off-topic questions 0.12-0.40).  BM25, hence the score, grows with the corpus; the similarity
floor keeps small projects answerable.  Files are ranked by ``codeindex.search`` (file and
definition-level rankers fused; its docstring says how); ``fuse`` with CODE_BM25_WEIGHT remains for
code hits without its features.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contextware.errors import DamagedDataError, EmbeddingError, UsageError
from contextware.memory.confidence import assign as assign_confidence
from contextware.memory.confidence import check_min_confidence
from contextware.memory.records import FACT_KINDS, RESULTS, check_choice, check_slug, public_row
from contextware.storage.embedded_text import expand_query
from contextware.storage.integrity import verify_rows
from contextware.storage.schemas import CODE_TABLE, MEMORY_TABLES, OFFLOADS_TABLE
from contextware.storage.table_search import fts_rows, vector_rows
from contextware.text import check_unicode, cut_at_word, parse_since, parse_topics, sql_str

if TYPE_CHECKING:
    from contextware.storage.project import Project

EXPANSION_WEIGHT = 0.3
EXPANSION_WORDS = 16  # added words the widened embedding sees at most (bounds the embedding cost)
BM25_WEIGHT = 0.2
BM25_HALF = 8.0
FLOOR = 0.21
MARGIN = 0.2
CODE_BM25_WEIGHT = 1.5  # code: words shared with the file's content and names weigh far more (see below)
CODE_BM25_HALF = 16.0
CODE_SCALE = (1 + BM25_WEIGHT) / (1 + CODE_BM25_WEIGHT)  # keeps code scores comparable with memories'
CODE_FLOOR = 0.25  # code answers a question when some file resembles it this much ...
CODE_SCORE_FLOOR = 0.42  # ... or scores this high (fused and scaled)
LEXICAL_FLOOR = 1e-9  # degraded mode (no vectors): any full-text match
TIE = 0.01
SUMMARY_CHARS = 320

DEFAULT_MAX_CHARS = 20_000
TOPIC_TABLES = ("facts", "episodes", OFFLOADS_TABLE)

SCOPES: dict[str, tuple[str, ...]] = {
    "all": (*MEMORY_TABLES, CODE_TABLE, OFFLOADS_TABLE),
    "code": (CODE_TABLE,),
    "offloads": (OFFLOADS_TABLE,),
    "memory": ("facts",),
    "facts": ("facts",),
    "episodes": ("episodes",),
    "logs": ("logs",),
}


def fuse(similarity: float | None, bm25: float, weight: float | None = None, half: float | None = None) -> float:
    weight = BM25_WEIGHT if weight is None else weight
    half = BM25_HALF if half is None else half
    lexical = weight * bm25 / (bm25 + half) if bm25 > 0 else 0.0
    return (similarity if similarity is not None else 0.0) + lexical


def query_vectors(embedder: Any, query: str, expanded: str) -> tuple[Any, Any]:
    """(search vector, plain vector): the question's embedding nudged toward its widened form, and
    the question's own embedding, which the floor is judged on (see the module docstring)."""
    import numpy as np

    if expanded == query:
        plain = embedder.embed([query])[0]
        return plain, plain
    wide_text = " ".join([query, *expanded[len(query) :].split()[:EXPANSION_WORDS]])
    plain, wide = embedder.embed([query, wide_text])
    vec = np.asarray(plain, dtype=np.float32) + EXPANSION_WEIGHT * np.asarray(wide, dtype=np.float32)
    return vec / float(np.linalg.norm(vec) or 1.0), plain


def _filters(
    table: str,
    *,
    since: datetime | None,
    topic: str | None,
    kind: str | None,
    result: str | None,
    category: str | None,
    include_superseded: bool,
    source: str | None = None,
    session: str | None = None,
    root: Any = None,
) -> str | None:
    parts: list[str] = []
    if since is not None:
        column = "indexed_at" if table == CODE_TABLE else "created_at"
        parts.append(f"{column} >= timestamp '{since.strftime('%Y-%m-%d %H:%M:%S')}'")
    if topic and table in TOPIC_TABLES:
        parts.append(f"array_has(topics, {sql_str(topic)})")
    if table == OFFLOADS_TABLE:
        from contextware.offload.table import offload_where

        if where := offload_where(source=source, session=session, root=root):
            parts.append(where)
    if table == "facts":
        if not include_superseded:
            parts.append("(status IS NULL OR status = 'active')")
        if kind:
            parts.append(f"kind = {sql_str(kind)}")
    if table == "episodes":
        if result:
            parts.append(f"result = {sql_str(result)}")
        if category:
            parts.append(f"category = {sql_str(category)}")
    return " AND ".join(parts) or None


def _tables_for(
    scope: str,
    *,
    topic: str | None,
    kind: str | None,
    result: str | None,
    category: str | None,
    source: str | None = None,
    session: str | None = None,
) -> tuple[str, ...]:
    if scope not in SCOPES:
        raise UsageError(f"Unknown --scope {scope!r}: use one of {', '.join(SCOPES)}.", code="bad_scope")
    tables = SCOPES[scope]
    # A filter on a field only some collections have narrows the search to those collections.
    if kind:
        tables = tuple(t for t in tables if t == "facts")
    if result or category:
        tables = tuple(t for t in tables if t == "episodes")
    if topic:
        tables = tuple(t for t in tables if t in TOPIC_TABLES)
    if source or session:
        tables = tuple(t for t in tables if t == OFFLOADS_TABLE)
    return tables


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def lexical_rows(project: "Project", name: str, query: str, where: str | None, candidates: int) -> list[dict]:
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


def search_table(
    project: "Project",
    name: str,
    query: str,
    qvec: Any,
    where: str | None,
    candidates: int,
    plain: Any = None,
    lexical: list[dict] | None = None,
) -> list[dict]:
    """Candidates from one table with their similarity and BM25 score (``select`` fuses, floors and
    orders them); ``relevance`` is the cosine similarity to ``plain`` (the unwidened question).
    ``lexical``: the table's ``lexical_rows`` for ``query``, when already fetched."""
    db = project.db
    table = db.open_table(name)
    if table is None:
        return []
    found: dict[str, dict] = {}
    bm25: dict[str, float] = {}
    for row in lexical_rows(project, name, query, where, candidates) if lexical is None else lexical:
        found[row["id"]] = row
        bm25[row["id"]] = float(row.get("_score") or 0.0)
    if qvec is not None:
        for row in vector_rows(db, name, table, qvec, where, candidates):
            found.setdefault(row["id"], row)
    verify_rows(name, found.values())
    out = []
    for rid, row in found.items():
        has_vec = qvec is not None and row.get("vector") is not None
        sim = _cosine(qvec, row["vector"]) if has_vec else None
        rel = _cosine(plain, row["vector"]) if has_vec and plain is not None else sim
        out.append({"row": row, "collection": name, "similarity": sim, "relevance": rel, "bm25": bm25.get(rid, 0.0)})
    return out


def _order(hits: list[dict]) -> list[dict]:
    """Best score first; recency breaks ties; a superseding fact always precedes what it replaced."""

    def created(h: dict) -> float:
        value = h["row"].get("created_at")
        return value.timestamp() if value is not None else 0.0

    hits.sort(key=lambda h: (-math.floor(h["score"] / TIE), -created(h), -h["score"]))  # code: no created_at
    position = {h["row"]["id"]: i for i, h in enumerate(hits)}
    for h in list(hits):
        old = h["row"].get("supersedes")
        if old in position and position[old] < position[h["row"]["id"]]:
            hits.remove(h)
            hits.insert(hits.index(next(x for x in hits if x["row"]["id"] == old)), h)
            position = {x["row"]["id"]: i for i, x in enumerate(hits)}
    return hits


def _relevant(hits: list[dict], floor: float) -> bool:
    """Does anything clear the floor?  A memory must resemble the question; code hits arrive
    already gated by CODE_FLOOR / CODE_SCORE_FLOOR."""
    return any(h["collection"] == CODE_TABLE or (h["relevance"] is not None and h["relevance"] >= floor) for h in hits)


def select(
    hits: list[dict],
    limit: int,
    *,
    vector: bool = True,
    weight: float | None = None,
    half: float | None = None,
    floor: float | None = None,
    margin: float | None = None,
    code_gate: bool = True,
    query: str = "",
    min_confidence: float = 0.0,
) -> list[dict]:
    """Fuse, floor, gate and order the candidates of all tables: what recall returns.  The keyword
    arguments override the module constants (the bench's calibration uses them); ``code_gate``
    False (``--scope code``) ranks files without asking whether any is about the question.  Every
    hit gets a ``confidence`` (``confidence.assign``); nothing is returned unless one reaches
    ``min_confidence`` (not applied to ``--scope code``, which only ranks)."""
    if not hits:
        return []
    floor = FLOOR if floor is None else floor
    margin = MARGIN if margin is None else margin
    for h in hits:
        if h["collection"] == CODE_TABLE and "features" in h:  # codeindex.search: files, definitions, BM25
            from contextware.codeindex.search import fuse_code

            h["score"] = fuse_code(h["features"]) * CODE_SCALE
        elif h["collection"] == CODE_TABLE:
            h["score"] = fuse(h["similarity"], h["bm25"], CODE_BM25_WEIGHT, CODE_BM25_HALF) * CODE_SCALE
        else:
            h["score"] = fuse(h["similarity"], h["bm25"], weight, half)
    assign_confidence(hits, query)
    if vector:
        code = [h for h in hits if h["collection"] == CODE_TABLE]
        if (
            code
            and code_gate
            and not (
                max(h["relevance"] or 0.0 for h in code) >= CODE_FLOOR
                or max(h["score"] for h in code) >= CODE_SCORE_FLOOR
            )
        ):
            hits = [h for h in hits if h["collection"] != CODE_TABLE]  # no file is about this question
        if not _relevant(hits, floor):
            return []
        if code_gate and not any(h["confidence"] >= min_confidence for h in hits):
            return []  # nothing is likely enough to answer: an empty answer is the right one
        best = max(h["score"] for h in hits)
        # The margin drops memories far below the best answer; files are ranked, not filtered.
        hits = [h for h in hits if h["collection"] == CODE_TABLE or h["score"] >= best - margin]
    else:
        hits = [h for h in hits if h["score"] >= LEXICAL_FLOOR]
    return _order(hits)[:limit]


def render_hit(hit: dict, mode: str, project: "Project | None" = None) -> dict:
    project = hit.get("project") or project
    if hit["collection"] == CODE_TABLE and project is not None:
        from contextware.codeindex.hits import render_code_hit

        return {**render_code_hit(project, hit, mode), "confidence": round(hit["confidence"], 3)}
    if hit["collection"] == OFFLOADS_TABLE and project is not None:
        from contextware.offload.table import public_offload

        out = {
            "collection": OFFLOADS_TABLE,
            "id": hit["row"]["id"],
            "score": round(hit["score"], 4),
            "confidence": round(hit["confidence"], 3),
            **public_offload(project, hit["row"]),
        }
        if mode == "summary" and isinstance(out.get("summary"), str):
            out["summary"] = cut_at_word(out["summary"], SUMMARY_CHARS * 3)
        return out
    row = public_row(hit["row"], hit["collection"])
    out = {
        "collection": hit["collection"],
        "id": row.pop("id"),
        "score": round(hit["score"], 4),
        "confidence": round(hit["confidence"], 3),
    }
    row.pop("collection", None)
    if mode == "summary":
        for key in ("text", "summary"):
            if isinstance(row.get(key), str):
                row[key] = cut_at_word(row[key], SUMMARY_CHARS)
        for key in ("source", "updated_at", "chunk_count"):
            row.pop(key, None)
    out.update({k: v for k, v in row.items() if v is not None})
    return out


def recall(
    project: "Project",
    query: str,
    *,
    scope: str = "all",
    limit: int = 5,
    mode: str = "summary",
    since: str | None = None,
    topic: str | None = None,
    kind: str | None = None,
    result: str | None = None,
    category: str | None = None,
    include_superseded: bool = False,
    refresh_stale: bool = False,
    max_chars: int | None = None,
    source: str | None = None,
    session: str | None = None,
    global_: bool = False,
    without: tuple[str, ...] = (),
    min_confidence: float | None = None,
) -> dict:
    """``without`` leaves collections out of the scope (the prompt hook searches no logs: past
    prompts would fill its slots and set the margin for the memories it shows).  ``min_confidence``
    (default: config ``recall_min_confidence``) is the confidence the best result must reach for
    the question to count as answerable; below it the answer is ``answerable: false`` and no
    results."""
    if query is None or not query.strip():
        raise UsageError("The query is empty; ask a question with --query.", code="empty_query")
    check_unicode(query, "query")
    if not 1 <= limit <= 100:
        raise UsageError("--limit must be between 1 and 100.", code="bad_limit")
    if mode not in ("summary", "exact"):
        raise UsageError(f"Unknown --mode {mode!r}: use summary or exact.", code="bad_mode")
    if max_chars is not None and max_chars < 1:
        raise UsageError("--max-chars must be a positive number of characters.", code="bad_max_chars")
    gate = (
        check_min_confidence(project.config["recall_min_confidence"], "recall_min_confidence in config.json")
        if min_confidence is None
        else check_min_confidence(min_confidence)
    )
    topics = parse_topics(topic)
    filters: dict[str, Any] = {
        "kind": check_choice(kind, FACT_KINDS, "--kind"),
        "result": check_choice(result, RESULTS, "--result"),
        "category": check_slug(category, "--category"),
        "topic": topics[0] if topics else None,
        "since": parse_since(since) if since else None,
        "include_superseded": include_superseded,
        "source": source.strip() if source and source.strip() else None,
        "session": session.strip() if session and session.strip() else None,
    }
    tables = _tables_for(
        scope,
        topic=filters["topic"],
        kind=filters["kind"],
        result=filters["result"],
        category=filters["category"],
        source=filters["source"],
        session=filters["session"],
    )
    tables = tuple(t for t in tables if t not in without)
    projects = [project]
    if global_:
        from contextware.offload.table import registered_projects

        known = {project.root.resolve()}
        for other in registered_projects(project.settings):
            if other.root.resolve() not in known:
                known.add(other.root.resolve())
                projects.append(other)

    text = query.strip()
    vectors: dict[str, Any] = {}  # the question is embedded once, for every project and a re-search

    def search() -> tuple[list[dict], str | None]:
        hits: list[dict] = []
        degraded = None
        vector = True
        for proj in projects:
            found, why = _candidates(proj, text, tables, limit, filters, vectors)
            degraded = degraded or why
            vector = vector and why is None
            for h in found:
                h["project"] = proj
            hits += found
        # --scope code ranks files; mixed with memories, files must first be about the question.
        found = select(hits, limit, vector=vector, code_gate=tables != (CODE_TABLE,), query=text, min_confidence=gate)
        return found, degraded

    hits, degraded = search()
    results = [render_hit(h, mode, project) for h in hits]
    refreshed: list[str] = []
    if refresh_stale and any(r.get("stale") for r in results) and not global_:
        from contextware.codeindex.indexer import index_files

        refreshed = [r["file_path"] for r in results if r.get("stale")]
        index_files(
            project, [project.root / p for p in refreshed], summarizer=str(project.config.get("summarizer") or "auto")
        )
        hits, degraded = search()
        results = [render_hit(h, mode, project) for h in hits]
    if global_:
        for h, r in zip(hits, results, strict=False):
            r["project"] = str(h["project"].root)
    if mode == "exact":
        from contextware.codeindex.hits import attach_content

        attach_content(project, results, text, max_chars or DEFAULT_MAX_CHARS)
    out: dict[str, Any] = {
        "query": query,
        "answerable": bool(results),
        "min_confidence": gate,
        "results": results,
        "degraded": degraded,
    }
    if refreshed:
        out["refreshed"] = refreshed
    return out


def _candidates(
    project: "Project", text: str, tables: tuple[str, ...], limit: int, filters: dict[str, Any], vectors: dict[str, Any]
) -> tuple[list[dict], str | None]:
    """Candidates of every table of one project, and why vectors were not used (None if they were).
    ``vectors`` caches the question's vectors (or why they failed) across calls."""
    embedder = project.embedder
    present = [t for t in tables if project.db.open_table(t) is not None]
    for name in present:
        project.db.check_model(name, project.db.open_table(name), embedder.model_id, embedder.dim)
    wide = expand_query(text)
    candidates = max(int(project.config["recall_candidates"]), limit * 3)
    wheres = {name: _filters(name, root=project.root, **filters) for name in present}

    def lexical(name: str) -> list[dict]:
        # Code is searched with the plain question: synonyms of the engineering thesaurus match
        # too many files' words (calibrated on bench/data/code_eval.json).
        if name == CODE_TABLE:
            from contextware.codeindex.search import file_lexical_rows

            return file_lexical_rows(project, text, wheres[name], candidates)
        return lexical_rows(project, name, wide, wheres[name], candidates)

    def embed() -> tuple[Any, Any, str | None]:
        """(search vector, plain vector, why there are none)."""
        if not present:
            return None, None, None
        if embedder.model_id not in vectors:
            try:
                vectors[embedder.model_id] = query_vectors(embedder, text, wide)
            except EmbeddingError as exc:
                vectors[embedder.model_id] = f"{exc.message} Answering from full-text search only."
        cached = vectors[embedder.model_id]
        return (None, None, cached) if isinstance(cached, str) else (*cached, None)

    def table_hits(name: str, lex: list[dict]) -> list[dict]:
        if name == CODE_TABLE:
            from contextware.codeindex.search import code_candidates

            return code_candidates(project, text, qvec, plain, wheres[name], candidates, lexical=lex)
        return search_table(project, name, wide, qvec, wheres[name], candidates, plain, lexical=lex)

    if len(present) < 2:
        qvec, plain, degraded = embed()
        return [h for name in present for h in table_hits(name, lexical(name))], degraded
    # The full-text searches run while the question is embedded (they need no vector), then the
    # vector searches; the tables at once: each search mostly waits in LanceDB's native code (or
    # numpy), so a question costs about its slowest table instead of their sum (the hooks ask every
    # table on every turn).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(present)) as pool:
        started = [pool.submit(lexical, name) for name in present]
        qvec, plain, degraded = embed()
        lexed = [f.result() for f in started]
        per_table = list(pool.map(table_hits, present, lexed))
    return [h for hits in per_table for h in hits], degraded
