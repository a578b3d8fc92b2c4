"""Why this, why not that: the explanation of one recall, made from the values the pipeline
already holds (the judged candidates and the gate's decision), never by searching again.

For each candidate: its rank and score from each ranker (cosine and BM25), the fused score, the
confidence and its signals, and which side of the gate it fell with the number that decided it."""

from __future__ import annotations

from collections.abc import Sequence

from contextware.core.text import cut_at_word
from contextware.memory.recall.fusion import Gated, hit_key
from contextware.memory.recall.types import Considered, Explanation, Hit

MAX_EXPLAINED = 30  # candidates listed: every result shown, then the best held back
LABEL_CHARS = 140


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """1-based rank of each value, highest first; None for a missing or non-positive value."""
    order = sorted((i for i, v in enumerate(values) if v is not None and v > 0), key=lambda i: -(values[i] or 0.0))
    ranks: list[int | None] = [None] * len(values)
    for rank, i in enumerate(order, 1):
        ranks[i] = rank
    return ranks


def label(h: Hit) -> str:
    """A candidate in a few words: its text, goal or file, shortened."""
    row = h.row
    text = row.get("text") or row.get("goal") or row.get("file_path") or row.get("prompt") or row.get("summary") or ""
    return cut_at_word(" ".join(str(text).split()), LABEL_CHARS)


def explain(judged: Sequence[Hit], gated: Gated, min_confidence: float, floor: float) -> Explanation:
    """The explanation of one recall: ``judged`` are every candidate after fusion and confidence,
    ``gated`` what the gate made of them."""
    cosine = _ranks([h.candidate.similarity for h in judged])
    bm25 = _ranks([h.bm25 for h in judged])
    shown = {hit_key(h): i for i, h in enumerate(gated.hits, 1)}
    out = []
    for i, h in enumerate(judged):
        key = hit_key(h)
        position = shown.get(key)
        if position is not None:
            why = f"shown at {position}: fused score {h.score:.3f}, confidence {h.confidence:.3f}"
            if h.in_place_of:
                why += f" (taken from the older fact {h.in_place_of} it restates)"
        else:
            why = gated.held.get(key, "held back")
        out.append(
            Considered(
                collection=h.collection,
                id=h.id,
                label=label(h),
                cosine=h.candidate.similarity,
                cosine_rank=cosine[i],
                bm25=h.bm25,
                bm25_rank=bm25[i],
                score=h.score,
                confidence=h.confidence,
                signals=h.signals,
                shown=position,
                decided_by=why,
                learned_on=h.row.get("branch") or (str(h.row["commit"])[:12] if h.row.get("commit") else None),
            )
        )
    out.sort(key=lambda c: (c.shown is None, c.shown or 0, -c.score))
    return Explanation(gated.verdict, min_confidence, floor, len(out), tuple(out[:MAX_EXPLAINED]))
