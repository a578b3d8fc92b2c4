"""The values recall's stages hand on: a ``Hit`` (a candidate with its fused score and, once judged,
its confidence and the ``Signals`` behind it) and the ``RecallResult`` every front end renders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

from contextware.storage.candidate import Candidate, RecalledItem, Row

if TYPE_CHECKING:
    from contextware.memory.recall.query import RecallQuery
    from contextware.storage.project import Project


@dataclass(frozen=True)
class Signals:
    """What is known about one candidate within its question's candidate set.

    ``relevance``: cosine of the plain question and the row; ``agreement``: mean reciprocal rank of
    the row in the vector and the BM25 rankings; ``margin``: its fused score above the best *other*
    candidate; ``gap``: above the mean of the runners-up (does anything stand out?); ``unknown``: the
    share of the question's content words no candidate holds; ``unknown_name``: 1 when the question
    names something no candidate mentions."""

    relevance: float
    agreement: float
    margin: float
    gap: float
    unknown: float
    unknown_name: float


@dataclass(frozen=True)
class Hit:
    candidate: Candidate
    score: float
    confidence: float = 0.0
    signals: Signals | None = None
    echo: bool = False  # a captured user turn that repeats the question (``fusion.is_echo``)
    repeats: int = 0  # other captured turns with the same words, folded into this one
    in_place_of: str | None = None  # the older fact it restates, whose score and confidence it took

    @property
    def row(self) -> Row:
        return self.candidate.row

    @property
    def collection(self) -> str:
        return self.candidate.collection

    @property
    def relevance(self) -> float | None:
        return self.candidate.relevance

    @property
    def bm25(self) -> float:
        return self.candidate.bm25

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def project(self) -> Project | None:
        return self.candidate.project


class ConsideredJson(TypedDict):
    """A ``Considered`` candidate as the JSON explanation shows it (numbers rounded)."""

    collection: str
    id: str
    label: str
    cosine: float | None
    cosine_rank: int | None
    bm25: float
    bm25_rank: int | None
    score: float
    confidence: float
    shown: int | None
    decided_by: str
    learned_on: str | None
    signals: dict[str, float] | None


class ExplanationJson(TypedDict):
    """``--explain``: the gate's verdict and the candidates."""

    verdict: str
    min_confidence: float
    floor: float
    total_candidates: int
    candidates: list[ConsideredJson]


class _Recalled(TypedDict):
    query: str
    answerable: bool
    min_confidence: float
    results: list[RecalledItem]
    degraded: str | None


class RecallJson(_Recalled, total=False):
    """What ``recall`` prints: the results, whether anything passed the gate, and, when asked or
    done, the explanation and the stale files refreshed first."""

    refreshed: list[str]
    explanation: ExplanationJson


@dataclass(frozen=True)
class Considered:
    """One candidate as the explanation shows it: its score and rank from each ranker (cosine of
    the search vector, BM25; rank 1 is best, None when that ranker did not find it), its fused
    ``score``, ``confidence`` and ``signals``, where it was shown (1-based, None when held back)
    and the sentence naming the number that decided it."""

    collection: str
    id: str
    label: str
    cosine: float | None
    cosine_rank: int | None
    bm25: float
    bm25_rank: int | None
    score: float
    confidence: float
    signals: Signals | None
    shown: int | None
    decided_by: str
    learned_on: str | None = None  # the branch (or commit) it was learned on; None: everyone's

    def to_dict(self) -> ConsideredJson:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "signals"}
        for k in ("cosine", "bm25", "score", "confidence"):
            if out[k] is not None:
                out[k] = round(out[k], 4)
        out["signals"] = (
            {k: round(v, 4) for k, v in self.signals.__dict__.items()} if self.signals is not None else None
        )
        return cast(ConsideredJson, out)  # every field, in declaration order


@dataclass(frozen=True)
class Explanation:
    """Why a recall answered what it did: the gate's ``verdict`` and the candidates (every one
    shown, then the best held back, at most ``MAX_EXPLAINED``) out of ``total`` considered."""

    verdict: str
    min_confidence: float
    floor: float
    total: int
    candidates: tuple[Considered, ...]

    def to_dict(self) -> ExplanationJson:
        return {
            "verdict": self.verdict,
            "min_confidence": self.min_confidence,
            "floor": self.floor,
            "total_candidates": self.total,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass(frozen=True)
class RecallResult:
    """``results`` are the hits as shown (``present``); ``min_confidence`` the gate applied;
    ``degraded`` why vectors were not used (None when they were)."""

    query: RecallQuery
    hits: tuple[Hit, ...]
    results: list[RecalledItem]
    min_confidence: float
    degraded: str | None = None
    refreshed: tuple[str, ...] = ()
    explanation: Explanation | None = None  # only when asked (``recall(..., explain=True)``)

    def to_dict(self) -> RecallJson:
        out: RecallJson = {
            "query": self.query.text,
            "answerable": bool(self.results),
            "min_confidence": self.min_confidence,
            "results": self.results,
            "degraded": self.degraded,
        }
        if self.refreshed:
            out["refreshed"] = list(self.refreshed)
        if self.explanation is not None:
            out["explanation"] = self.explanation.to_dict()
        return out
