"""Recall's middle stages: fuse each candidate's scores into one (``fuse_all``), judge how sure each
is (``confidence.assign``), then gate and order them (``gate``).  Pure functions of the candidates
and the parameters: the benchmarks call them with their own ``RecallParams``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from contextware.memory.recall.params import FusionParams, RecallParams
from contextware.memory.recall.signals import created, is_echo, restatements
from contextware.memory.recall.types import Hit
from contextware.storage.candidate import Candidate
from contextware.storage.schemas import CODE_TABLE


def fuse(similarity: float | None, bm25: float, weight: float, half: float) -> float:
    """A cosine plus a saturated BM25 term: shared words count without a long row winning on length."""
    lexical = weight * bm25 / (bm25 + half) if bm25 > 0 else 0.0
    return (similarity if similarity is not None else 0.0) + lexical


def fuse_code(c: Candidate, params: RecallParams) -> float:
    """A file's score in the memories' units: ``codeindex.search.fuse_code`` over its rankers'
    features, or, without them, its cosine plus its saturated BM25."""
    f = params.fusion
    if c.features is not None:
        from contextware.codeindex.search import fuse_code as fuse_files

        return fuse_files(c.features, params.code) * f.code_scale
    return fuse(c.similarity, c.bm25, f.code_bm25_weight, f.code_bm25_half) * f.code_scale


def fuse_all(found: Sequence[Candidate], query: str, params: RecallParams) -> list[Hit]:
    """Every candidate with its score: memories by the fitted ranker (``ranker.scores``, over the
    memories of this question together), files by ``fuse_code``."""
    from contextware.memory.recall.ranker import scores

    memories = [c for c in found if c.collection != CODE_TABLE]
    ranked = iter(scores(memories, query, params.fusion, params.ranker))
    out = []
    for c in found:
        score = fuse_code(c, params) if c.collection == CODE_TABLE else next(ranked)
        out.append(Hit(c, score, echo=is_echo(c, params.fusion)))
    return out


def _collapse_repeats(hits: list[Hit]) -> list[Hit]:
    """Captured turns with the same words (a question asked again, in any session) are one result:
    the first in order (best score, then newest), counting the others as ``repeats``."""
    from contextware.core.text import normalise

    first: dict[str, int] = {}
    out: list[Hit] = []
    for h in hits:
        if h.collection != "logs" or not isinstance(h.row.get("text"), str):
            out.append(h)
            continue
        key = f"{h.row.get('role')}:{normalise(h.row['text'])}"
        if key in first:
            kept = out[first[key]]
            out[first[key]] = replace(kept, repeats=kept.repeats + 1)
            continue
        first[key] = len(out)
        out.append(h)
    return out


def _one_part_per_turn(hits: list[Hit], held: dict[tuple[str, str, str], str]) -> list[Hit]:
    """A long turn is stored in parts (``log_chunk_chars``); the best-ranked part stands for it, so
    a question about one long answer gets other turns beside it, not five parts of the same one.
    The others are held, named (``memory get`` reads a part; ``--scope logs`` still ranks them)."""
    first: dict[tuple[str, str, str], str] = {}
    out: list[Hit] = []
    for h in hits:
        if h.collection == "logs" and int(h.row.get("chunk_count") or 1) > 1:
            created = h.row.get("created_at")
            turn = (str(h.row.get("session_id")), str(h.row.get("role")), str(created))
            if turn in first:
                held[hit_key(h)] = f"another part of the same turn, {first[turn]}, ranks above"
                continue
            first[turn] = h.id
        out.append(h)
    return out


def order(
    hits: list[Hit],
    tie: float,
    held: "dict[tuple[str, str, str], str] | None" = None,
    prior: "Mapping[str, float] | None" = None,
) -> list[Hit]:
    """Best score first; recency breaks ties; the use feedback (``prior``: id -> [-1, 1], in ties,
    ``usage.priors`` scaled by ``use_prior``) moves a memory among its near-ties only, to order:
    its score, confidence and the gate never see it; a superseding fact always precedes what it replaced,
    and so does a newer fact that restates an older one (its ``in_place_of``, set by ``judge``); a
    turn a fact was made from gives way to the fact.  With ``held`` (a
    dict), the older facts restated leave the list, each with its reason there (recall's default
    list: ``--include-superseded`` keeps them)."""
    nudge = prior or {}
    hits.sort(key=lambda h: (-math.floor((h.score + tie * nudge.get(h.id, 0.0)) / tie), -created(h), -h.score))
    follows = {h.id: h.in_place_of for h in hits if h.in_place_of}
    position = {h.id: i for i, h in enumerate(hits)}
    for h in list(hits):
        for old in (h.row.get("supersedes"), follows.get(h.id)):
            if old in position and position[old] < position[h.id]:
                hits.remove(h)
                hits.insert(hits.index(next(x for x in hits if x.id == old)), h)
                position = {x.id: i for i, x in enumerate(hits)}
    # A captured turn that a fact was made from ("please remember: ...", memory.remember) says what
    # the fact says: the fact answers, the turn leaves the list (``--scope logs`` still finds it).
    made = {
        str(h.row["source"])[len("turn:") :]: h.id
        for h in hits
        if h.collection == "facts" and str(h.row.get("source") or "").startswith("turn:")
    }
    if made:
        for h in hits:
            if h.collection == "logs" and h.id in made and held is not None:
                held[hit_key(h)] = f"saved as the fact {made[h.id]}"
        hits = [h for h in hits if not (h.collection == "logs" and h.id in made)]
    if held is not None and follows:  # the newer took the older's place above; the older leaves
        gone = {old: new for new, old in follows.items()}
        for h in hits:
            if h.id in gone:
                held[hit_key(h)] = f"restated by the newer fact {gone[h.id]} (--include-superseded shows it)"
        hits = [h for h in hits if h.id not in gone]
    return hits


def _relevant(hits: Sequence[Hit], floor: float) -> bool:
    """Does anything clear the floor?  A memory must resemble the question; code hits arrive
    already gated by the code floors."""
    return any(h.collection == CODE_TABLE or (h.relevance is not None and h.relevance >= floor) for h in hits)


def _about_the_question(code: Sequence[Hit], f: FusionParams) -> bool:
    """Is some file about the question at all (mixed with memories, files must be)?"""
    return max(h.relevance or 0.0 for h in code) >= f.code_floor or max(h.score for h in code) >= f.code_score_floor


@dataclass(frozen=True)
class Gated:
    """What the gate let through (``hits``, in order), why the answer is what it is (``verdict``,
    naming the number that decided it) and why each candidate left (``held``, by ``hit_key``)."""

    hits: list[Hit]
    verdict: str
    held: dict[tuple[str, str, str], str] = field(default_factory=dict)


def hit_key(h: Hit) -> tuple[str, str, str]:
    """A candidate's identity across the gate (ids repeat across projects in a global search)."""
    return (h.collection, h.id, str(h.project.root) if h.project is not None else "")


def decide(
    hits: list[Hit],
    limit: int,
    f: FusionParams,
    *,
    vector: bool,
    code_gate: bool,
    min_confidence: float,
    margin: float | None = None,
    hide_restated: bool = False,
    prior: Mapping[str, float] | None = None,
) -> Gated:
    """What recall returns of the judged hits.  With vectors: files leave a mixed answer unless one
    is about the question, nothing answers unless a memory clears the floor and some hit reaches
    ``min_confidence`` (``code_gate`` False, ``--scope code``, only ranks files); with a ``margin``
    (the prompt hook's), memories that far below the best are dropped: a plain recall returns
    ``limit`` results whenever that many clear the floor.  Without vectors (degraded mode) any
    full-text match stays.  Repeated captured turns come back once, counted, and a long turn by its
    best part.  Each held-back candidate gets its reason (a few strings: cheap enough to make on
    every recall)."""
    if not hits:
        return Gated([], "Nothing answered: no candidate matched the question in any table searched.")
    held: dict[tuple[str, str, str], str] = {}
    verdict = "Answered from full-text matches only (no vectors)."
    if vector:
        code = [h for h in hits if h.collection == CODE_TABLE]
        if code and code_gate and not _about_the_question(code, f):
            why = (
                f"files left the mixed answer: none is about the question (best file cosine "
                f"{max(h.relevance or 0.0 for h in code):.3f} < {f.code_floor}, best file score "
                f"{max(h.score for h in code):.3f} < {f.code_score_floor})"
            )
            held.update({hit_key(h): why for h in code})
            hits = [h for h in hits if h.collection != CODE_TABLE]
        answers = [h for h in hits if not h.echo]  # a question repeated is not an answer to it
        if not _relevant(answers, f.floor):
            best = max((h.relevance or 0.0 for h in answers), default=0.0)
            verdict = f"Nothing answered: no memory resembles the question (best cosine {best:.3f} < floor {f.floor})."
            held.update({hit_key(h): verdict[len("Nothing answered: ") :].rstrip(".") for h in hits})
            return Gated([], verdict, held)
        top = max((h.confidence for h in answers), default=0.0)
        if code_gate and top < min_confidence:  # nothing is likely enough: an empty answer is the right one
            verdict = f"Nothing answered: the best confidence {top:.3f} is below the gate {min_confidence}."
            held.update({hit_key(h): f"below the gate: best confidence {top:.3f} < {min_confidence}" for h in hits})
            return Gated([], verdict, held)
        verdict = (
            f"Answered: the best confidence {top:.3f} reaches the gate {min_confidence}."
            if code_gate
            else "Files ranked by fused score (no confidence gate for --scope code)."
        )
        if margin is not None:  # files are ranked, not filtered
            best = max(h.score for h in hits)
            for h in hits:
                if h.collection != CODE_TABLE and h.score < best - margin:
                    held[hit_key(h)] = f"score {h.score:.3f} is more than {margin} below the best {best:.3f}"
            hits = [h for h in hits if h.collection == CODE_TABLE or h.score >= best - margin]
    else:
        for h in hits:
            if h.score < f.lexical_floor:
                held[hit_key(h)] = "no full-text match (vectors unavailable)"
        hits = [h for h in hits if h.score >= f.lexical_floor]
    nudge = {k: v * f.use_prior for k, v in prior.items()} if prior else None
    ordered = order(hits, f.tie, held if hide_restated else None, nudge)
    # Echoes go last: a question asked again is context, never ahead of anything that may answer it.
    ordered = [h for h in ordered if not h.echo] + [h for h in ordered if h.echo]
    parts = _one_part_per_turn(ordered, held)
    collapsed = _collapse_repeats(parts)
    kept = {hit_key(h) for h in collapsed}
    held.update(
        {
            hit_key(h): "the same words as a result shown (counted there as a repeat)"
            for h in parts
            if hit_key(h) not in kept
        }
    )
    for rank, h in enumerate(collapsed[limit:], limit + 1):
        held[hit_key(h)] = f"ranked {rank} by fused score, past the limit of {limit}"
    return Gated(collapsed[:limit], verdict, held)


def gate(
    hits: list[Hit],
    limit: int,
    f: FusionParams,
    *,
    vector: bool,
    code_gate: bool,
    min_confidence: float,
    margin: float | None = None,
) -> list[Hit]:
    """The hits ``decide`` lets through, in order."""
    return decide(hits, limit, f, vector=vector, code_gate=code_gate, min_confidence=min_confidence, margin=margin).hits


def judge(found: Sequence[Candidate], query: str, params: RecallParams) -> list[Hit]:
    """Every candidate fused and judged (its score, confidence and signals), before the gate."""
    from contextware.memory.recall.confidence import assign

    if not found:
        return []
    return take_restated_places(assign(fuse_all(found, query, params), query, params.confidence), params.fusion)


def take_restated_places(hits: list[Hit], f: FusionParams) -> list[Hit]:
    """A newer fact that restates an older candidate (``restatements``) answers what the older one
    answered, up to date: it takes the older one's score and confidence when they are higher.
    Otherwise the prompt hook's margin and share dropped the newer fact while the older, outdated
    one stayed, and recall showed the newer in the older's place with a confidence near zero."""
    follows = restatements(hits, f.restated) if f.restated <= 1.0 else {}
    if not follows:
        return hits
    older = set(follows.values())
    by_id = {h.id: h for h in hits if h.id in older}
    out = []
    for h in hits:
        old = by_id.get(follows.get(h.id, ""))
        if old is not None:
            score, confidence = max(h.score, old.score), max(h.confidence, old.confidence)
            h = replace(h, score=score, confidence=confidence, in_place_of=old.id)
        out.append(h)
    return out


def select(
    found: Sequence[Candidate],
    query: str,
    limit: int,
    params: RecallParams,
    *,
    vector: bool = True,
    code_gate: bool = True,
    min_confidence: float = 0.0,
    margin: float | None = None,
) -> list[Hit]:
    """Fuse, judge, gate and order the candidates of all tables: the hits recall shows."""
    return gate(
        judge(found, query, params),
        limit,
        params.fusion,
        vector=vector,
        code_gate=code_gate,
        min_confidence=min_confidence,
        margin=margin,
    )
