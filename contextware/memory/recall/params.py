"""The tuning of recall as values: how the searches are fused, floored and gated, and how sure a
result is.  One default instance (``DEFAULT_PARAMS``) is passed down by every front end; the
benchmarks pass their own, so calibrating never patches a module.  Each value was calibrated on
the train splits of the public sets (``bench/fit_ranker.py``: the ranker, the confidence) or the
code sets; docs/retrieval.md records how and what else was tried."""

from __future__ import annotations

from dataclasses import dataclass, field

from contextware.codeindex.search import DEFAULT_CODE_WEIGHTS, CodeWeights


@dataclass(frozen=True)
class FusionParams:
    """Memories are scored by the fitted ranker (``RankerParams``, ``ranker.py``); files are fused
    by ``codeindex.search.fuse_code`` and scaled by ``code_scale`` into the memories' range."""

    expansion_weight: float = 0.3  # the widened question's share of the search vector
    expansion_words: int = 16  # added words the widened embedding sees at most (bounds its cost)
    floor: float = 0.21  # some memory must resemble the plain question this much, or nothing answers
    margin: float = 0.2  # the prompt hook drops memories this far below the best (recall never: see gate)
    code_bm25_weight: float = 1.5  # code hits without rankers' features (fused like memories)
    code_bm25_half: float = 16.0
    code_scale: float = 0.48  # code scores into the memories' range (a cosine's units)
    code_floor: float = 0.25  # files answer a mixed question when one resembles it this much ...
    code_score_floor: float = 0.42  # ... or scores this high (fused and scaled)
    lexical_floor: float = 1e-9  # degraded mode (no vectors): any full-text match
    tie: float = 0.01  # scores this close are a tie, broken by recency (age never lowers a score)
    use_prior: float = 1.0  # the use feedback moves a score by at most this many ties, to order only
    question_chars: int = 600  # a user's turn of at most this length that asks is an echo (``is_echo``)
    restated: float = 0.7  # two active facts this alike (cosine): the newer restates the older, ranks first
    next_turns: int = 8  # the turn after each of this many best full-text turns joins the candidates


def _fitted(name: str) -> dict[str, float]:
    from contextware.memory.recall import ranker_weights

    return dict(getattr(ranker_weights, name))


@dataclass(frozen=True)
class RankerWeights:
    """One family's weights of the fitted ranker: ``score = sum(weight * feature)`` over
    ``ranker.FEATURES`` (and ``bias``, which only sets captured turns against other memories)."""

    cosine: float = 1.0
    bm25: float = 0.0
    log_bm25: float = 0.0
    rr_cosine: float = 0.0
    rr_bm25: float = 0.0
    coverage: float = 0.0
    noise: float = 0.0
    length: float = 0.0
    date: float = 0.0
    neighbour: float = 0.0
    follows: float = 0.0
    speaker: float = 0.0
    echo: float = 0.0
    restated: float = 0.0
    restates: float = 0.0
    bias: float = 0.0


@dataclass(frozen=True)
class RankerParams:
    """The fitted ranker's weights: captured turns (``logs``) and every other memory (``memory``).
    Written by ``uv run bench/fit_ranker.py`` into ``ranker_weights.py``; never edited by hand."""

    memory: RankerWeights = field(default_factory=lambda: RankerWeights(**_fitted("MEMORY")))
    logs: RankerWeights = field(default_factory=lambda: RankerWeights(**_fitted("LOGS")))
    # Turns against other memories (not fitted: fit_ranker's train sets hold no turns that resemble
    # a question without answering it; swept by hand beside a project's history): the hand-set
    # score turn_weight x (cosine + turn_bm25 x saturated BM25 x coverage, the IDF-weighted share
    # of the question's words the turn holds), minus turn_baseline x the median of the turn
    # candidates' (docs/retrieval.md sections 14 and 20); the fitted weights decide only the
    # turns' order among themselves.  A larger turn_bm25 lifts a "Noted." reply past the fact.
    turn_weight: float = 0.9
    turn_bm25: float = 0.5
    turn_baseline: float = 0.7


@dataclass(frozen=True)
class ConfidenceWeights:
    """The logistic model of ``confidence.combine``: ``sigmoid(bias + sum(weight * signal))``.
    The defaults here are the older fit of ``bench/recall_quality.py --tune-confidence``; recall uses
    the refit of ``bench/fit_ranker.py`` (``ranker_weights.CONFIDENCE``, on the fitted scores)."""

    bias: float = -2.912
    relevance: float = 2.495
    agreement: float = 1.738
    margin: float = 5.093
    gap: float = 3.45
    unknown: float = -0.242
    unknown_name: float = -0.498


def _confidence() -> ConfidenceWeights:
    fitted = _fitted("CONFIDENCE")
    return ConfidenceWeights(**fitted) if fitted else ConfidenceWeights()


@dataclass(frozen=True)
class ConfidenceParams:
    weights: ConfidenceWeights = field(default_factory=_confidence)
    gap_field: int = 5  # runners-up that ``gap`` compares with
    echo_weight: float = 0.5  # the confidence of a turn that only repeats the question


@dataclass(frozen=True)
class HookParams:
    """What the prompt hook injects unasked (``prompt.for_prompt``): of the best ``candidates``
    results, at most ``max_memories`` memories, each at least ``relative_confidence`` of the best
    one's confidence.  Fitted on the engineering set's train split (bench/quality.py;
    docs/retrieval.md section 14): 8 and no share injected 4.3 memories a prompt; 4 and 0.1 inject
    2.7 for 3 points of answers.  The gate itself is ``hook_min_confidence`` in config.json."""

    prompt_chars: int = 2000  # a prompt is searched by its beginning
    candidates: int = 8  # results considered before the hook's own budget
    max_memories: int = 4
    relative_confidence: float = 0.1


@dataclass(frozen=True)
class RecallParams:
    hook: HookParams = field(default_factory=HookParams)
    fusion: FusionParams = field(default_factory=FusionParams)
    ranker: RankerParams = field(default_factory=RankerParams)
    confidence: ConfidenceParams = field(default_factory=ConfidenceParams)
    code: CodeWeights = DEFAULT_CODE_WEIGHTS
    summary_chars: int = 320  # summary mode shortens stored texts to this
    default_max_chars: int = 20_000  # exact mode's budget for file content when none is given


DEFAULT_PARAMS = RecallParams()
