"""The tuning of recall as values: how the searches are fused, floored and gated, and how sure a
result is.  One default instance (``DEFAULT_PARAMS``) is passed down by every front end; the
benchmarks pass their own, so calibrating never patches a module.  Each value was calibrated on
the tune split of bench/data/memory_eval.json (or the code sets); docs/retrieval.md records how and
what else was tried."""

from __future__ import annotations

from dataclasses import dataclass, field

from contextware.codeindex.search import DEFAULT_CODE_WEIGHTS, CodeWeights


@dataclass(frozen=True)
class FusionParams:
    """``score = cosine + bm25_weight * bm25 / (bm25 + bm25_half)`` per memory; files are fused by
    ``codeindex.search.fuse_code`` and scaled by ``code_scale`` into the memories' range."""

    expansion_weight: float = 0.3  # the widened question's share of the search vector
    expansion_words: int = 16  # added words the widened embedding sees at most (bounds its cost)
    bm25_weight: float = 0.2
    bm25_half: float = 8.0
    floor: float = 0.21  # some memory must resemble the plain question this much, or nothing answers
    margin: float = 0.2  # the prompt hook drops memories this far below the best (recall never: see gate)
    code_bm25_weight: float = 1.5  # code hits without rankers' features (fused like memories)
    code_bm25_half: float = 16.0
    code_floor: float = 0.25  # files answer a mixed question when one resembles it this much ...
    code_score_floor: float = 0.42  # ... or scores this high (fused and scaled)
    lexical_floor: float = 1e-9  # degraded mode (no vectors): any full-text match
    tie: float = 0.01  # scores this close are a tie, broken by recency (age never lowers a score)
    log_bm25_weight: float = 1.0  # captured turns: their own lexical weight and saturation (chat
    log_bm25_half: float = 8.0  # turns share words with a question more than a fact's paraphrase does)
    log_weight: float = 0.9  # a captured turn counts a little less than a curated fact or episode ...
    question_chars: int = 600  # ... and a user's question of at most this length asks, not answers (an echo):
    echo_weight: float = 0.3  # it ranks after every answer and never makes a question answerable
    restated: float = 0.7  # two active facts this alike (cosine): the newer restates the older, ranks first

    @property
    def code_scale(self) -> float:
        """Keeps code scores comparable with memories' (the largest possible fused scores meet)."""
        return (1 + self.bm25_weight) / (1 + self.code_bm25_weight)


@dataclass(frozen=True)
class ConfidenceWeights:
    """The logistic model of ``confidence.combine``: ``sigmoid(bias + sum(weight * signal))``.
    Fitted by ``uv run bench/recall_quality.py --tune-confidence``; refit when a signal changes."""

    bias: float = -2.912
    relevance: float = 2.495
    agreement: float = 1.738
    margin: float = 5.093
    gap: float = 3.45
    unknown: float = -0.242
    unknown_name: float = -0.498


@dataclass(frozen=True)
class ConfidenceParams:
    weights: ConfidenceWeights = field(default_factory=ConfidenceWeights)
    gap_field: int = 5  # runners-up that ``gap`` compares with
    echo_weight: float = 0.5  # the confidence of a turn that only repeats the question


@dataclass(frozen=True)
class RecallParams:
    fusion: FusionParams = field(default_factory=FusionParams)
    confidence: ConfidenceParams = field(default_factory=ConfidenceParams)
    code: CodeWeights = DEFAULT_CODE_WEIGHTS
    summary_chars: int = 320  # summary mode shortens stored texts to this
    default_max_chars: int = 20_000  # exact mode's budget for file content when none is given


DEFAULT_PARAMS = RecallParams()
