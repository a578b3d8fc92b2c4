"""Recall's middle stages: fuse each candidate's scores into one (``fuse_all``), judge how sure each
is (``confidence.assign``), then gate and order them (``gate``).  Pure functions of the candidates
and the parameters: the benchmarks call them with their own ``RecallParams``."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextware.memory.recall.params import FusionParams, RecallParams
from contextware.memory.recall.types import Hit
from contextware.storage.candidate import Candidate
from contextware.storage.schemas import CODE_TABLE


def fuse(similarity: float | None, bm25: float, weight: float, half: float) -> float:
    """A cosine plus a saturated BM25 term: shared words count without a long row winning on length."""
    lexical = weight * bm25 / (bm25 + half) if bm25 > 0 else 0.0
    return (similarity if similarity is not None else 0.0) + lexical


_ASKING = re.compile(
    r"^\W*(what|how|why|where|when|which|who|whom|whose|can|could|should|shall|is|are|was|were|do|does|did|"
    r"will|would|may|might|have|has|any|anything)\b",
    re.I,
)


# What a question asked again starts with, before its own words ("again, what do we push built
# images to", "remind me where ...", "so what was ...", "quick reminder: ..."): stripped, repeatedly,
# before the asking word is looked for.
_ASKED_AGAIN = re.compile(
    r"^\W*(?:again|once more|one more time|so|ok(?:ay)?|hey|sorry|quick(?:ly)?|and|but|also|then|wait|"
    r"quick (?:question|reminder)|reminder|remind me(?: again)?(?: of)?|tell me(?: again)?|"
    r"(?:can|could) you (?:remind me|tell me)(?: again)?|i forgot|i forget|what was it again)\b[\s,:;.!-]*",
    re.I,
)
_LOOKUP = re.compile(
    r"^\W*(?:remind me|tell me|(?:quick )?reminder|i forg[eo]t|what's|whats|where's|wheres|how's|who's)\b", re.I
)


def asks(text: str) -> bool:
    """Does a short user turn ask rather than tell?  With or without "?", with or without a
    leading question word: "again, what do we push built images to", "remind me of the registry"."""
    text = text.strip()
    if text.endswith("?") or _ASKING.match(text) or _LOOKUP.match(text):
        return True
    for _ in range(4):  # "so, again, what was ..."
        rest = _ASKED_AGAIN.sub("", text, count=1)
        if rest == text:
            return False
        text = rest
        if _ASKING.match(text) or _LOOKUP.match(text):
            return True
    return False


def is_echo(c: Candidate, f: FusionParams) -> bool:
    """A captured user turn that asks rather than tells: a question (the one asked now, said again,
    or another).  It shows what was asked, never what the answer is, so asking the same thing five
    times must not bury the memory that answers it.  A user's statement ("we moved the export to
    S3") is kept as evidence, however close to the question."""
    if c.collection != "logs" or c.row.get("role") != "user":
        return False
    text = str(c.row.get("text") or "").strip()
    return len(text) <= f.question_chars and asks(text)


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
    from dataclasses import replace

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


def _created(h: Hit | Candidate) -> float:
    value = h.row.get("created_at")
    return value.timestamp() if value is not None else 0.0


# What a fact that replaces another says: parallel facts ("service 2 listens on 8002", "service 3
# on 8003") are as alike, and neither restates the other.
REPLACING = re.compile(
    r"\b(?:no longer|instead|replac(?:ed|es|ing)|remov(?:ed|es)|dropp(?:ed|s)|moved|migrat(?:ed|es)|"
    r"switch(?:ed|es)|deprecat(?:ed|es|ion)|retired|now|anymore|rather than|end[- ]of[- ]life|obsolete|"
    r"supersed(?:ed|es)|in favou?r of|successor)\b",
    re.I,
)
REPLACING_SLACK = 0.1  # a little less alike (cosine) when the newer fact repeats the older one's words
REPEATED_WORDS = 0.5  # ... at least this share of the older fact's content words
NAMED_ALIKE = 0.45  # ... or this alike when both name the same identifier (``--production``, ``url()``)
_IDENTIFIER = re.compile(r"(?<![\w.-])(?:--?)?[A-Za-z_][\w-]*(?:[.:/][A-Za-z_][\w-]*)*(?:\([^()\s]*\))?")


@functools.lru_cache(maxsize=4096)
def identifiers(text: str) -> frozenset[str]:
    """What a text names as code: flags, dotted or hyphenated names, calls (``--production``,
    ``docker-compose``, ``df.append(other)``, ``tool.uv.dev-dependencies``), lower case, each also
    by its last dotted part (``df.append`` and ``DataFrame.append`` both name ``append``)."""
    out: set[str] = set()
    for token in _IDENTIFIER.findall(text):
        call = "(" in token
        name = token.split("(")[0].rstrip(".-:/")
        mixed = any(c.isupper() for c in name[1:]) and any(c.islower() for c in name)  # DataFrame, not CI
        bare = name.lstrip("-")
        named = call or mixed or any(ch in bare for ch in "._-/:") or (name.startswith("--") and len(bare) > 2)
        if len(bare) < 3 or not named:
            continue
        name = name.lower()
        out.add(name)
        last = re.split(r"[.:/]", name)[-1]
        if last and (call or last != name):
            out.add(last)
    return frozenset(out)


def _repeats_words(newer: str, older: str) -> bool:
    """Does ``newer`` hold most of ``older``'s content words ("Format money with numeral.js" and
    "Format money with Intl.NumberFormat ...; numeral.js was removed")?"""
    from contextware.core.words import STOP_WORDS, stem, words

    old = {stem(w) for w in words(older) if w not in STOP_WORDS}
    new = {stem(w) for w in words(newer) if w not in STOP_WORDS}
    return bool(old) and len(old & new) >= REPEATED_WORDS * len(old)


def restatements(hits: Sequence[Hit | Candidate], alike: float) -> dict[str, str]:
    """newer fact id -> the id of the older active fact it restates: it says it replaces something
    (``REPLACING``), and the two are ``alike`` (cosine), or a little less with most of the older
    one's words: a fact saved later without naming the one it replaces ("we moved to httpx" after
    "we use requests").  Unlinked, the older,
    shorter one ranked first for 8 of 10 such questions (bench/recall_quality.py --unlinked)."""
    facts = [h for h in hits if h.collection == "facts" and h.row.get("vector") is not None]
    if len(facts) < 2:
        return {}
    import numpy as np

    vectors = np.asarray([h.row["vector"] for h in facts], dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = np.triu(vectors @ vectors.T, k=1)
    out: dict[str, str] = {}
    for i, j in np.argwhere(sims >= min(alike - REPLACING_SLACK, NAMED_ALIKE)):
        older, newer = sorted((facts[i], facts[j]), key=_created)
        text, old_text = str(newer.row.get("text")), str(older.row.get("text"))
        replacing = REPLACING.search(text) is not None and (
            sims[i, j] >= alike
            or (sims[i, j] >= alike - REPLACING_SLACK and _repeats_words(text, old_text))
            or not identifiers(text).isdisjoint(identifiers(old_text))
        )
        if _created(newer) > _created(older) and replacing:
            out.setdefault(newer.id, older.id)
    return out


def order(
    hits: list[Hit], tie: float, restated: float = 2.0, held: "dict[tuple[str, str, str], str] | None" = None
) -> list[Hit]:
    """Best score first; recency breaks ties; a superseding fact always precedes what it replaced,
    and so does a newer fact that restates an older one (``restatements``).  With ``held`` (a
    dict), the older facts restated leave the list, each with its reason there (recall's default
    list: ``--include-superseded`` keeps them)."""
    hits.sort(key=lambda h: (-math.floor(h.score / tie), -_created(h), -h.score))  # code: no created_at
    follows = restatements(hits, restated) if restated <= 1.0 else {}
    position = {h.id: i for i, h in enumerate(hits)}
    for h in list(hits):
        for old in (h.row.get("supersedes"), follows.get(h.id)):
            if old in position and position[old] < position[h.id]:
                hits.remove(h)
                hits.insert(hits.index(next(x for x in hits if x.id == old)), h)
                position = {x.id: i for i, x in enumerate(hits)}
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
) -> Gated:
    """What recall returns of the judged hits.  With vectors: files leave a mixed answer unless one
    is about the question, nothing answers unless a memory clears the floor and some hit reaches
    ``min_confidence`` (``code_gate`` False, ``--scope code``, only ranks files); with a ``margin``
    (the prompt hook's), memories that far below the best are dropped: a plain recall returns
    ``limit`` results whenever that many clear the floor.  Without vectors (degraded mode) any
    full-text match stays.  Repeated captured turns come back once, counted.  Each held-back
    candidate gets its reason (a few strings: cheap enough to make on every recall)."""
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
    ordered = order(hits, f.tie, f.restated, held if hide_restated else None)
    # Echoes go last: a question asked again is context, never ahead of anything that may answer it.
    ordered = [h for h in ordered if not h.echo] + [h for h in ordered if h.echo]
    collapsed = _collapse_repeats(ordered)
    kept = {hit_key(h) for h in collapsed}
    held.update(
        {
            hit_key(h): "the same words as a result shown (counted there as a repeat)"
            for h in ordered
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

    return assign(fuse_all(found, query, params), query, params.confidence) if found else []


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
