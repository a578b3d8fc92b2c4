"""How sure recall is that a result answers the question: a confidence in [0, 1] per result, and
the gate that turns "nothing is sure enough" into ``answerable: false``.

A single cosine cannot tell an unanswerable question *about the project* ("which message broker do
we use?") from a hard paraphrase of one it can answer: with a small embedding model their
similarities overlap.  The confidence therefore combines several signals of one candidate within its
candidate set:

* ``relevance``: cosine similarity of the plain question and the row;
* ``lexical``: the row's BM25 score, saturated (``bm25 / (bm25 + BM25_HALF)``);
* ``agreement``: whether the lexical and the vector rankers agree: the mean reciprocal rank of the
  row in the BM25 ranking and in the vector ranking of all candidates;
* ``margin``: how far the row's fused score is above the best *other* candidate (negative below it);
* ``coverage``: the share of the question's content words (stop words dropped, crude stems, a word
  of the engineering thesaurus also matched by its family) found in the row's text;
* ``unknown``: the share of the question's content words found in *no* candidate at all: a question
  about a thing memory never mentions names it in words no memory has;
* ``recency``, logs only: a conversation chunk fades with age (half-life LOG_HALF_LIFE_DAYS); facts
  and episodes stay true until superseded, so their age says nothing.

They are combined by a logistic model, ``confidence = sigmoid(b + sum(w_i * x_i))``, whose weights
are fitted on the tune split of bench/data/memory_eval.json (``uv run bench/recall_quality.py
--tune-confidence`` prints them and the gate curve): the first three candidates of every tune
question, answers as positives, the other candidates and every candidate of an unanswerable
question as negatives; so a confidence reads as the probability that the row is an answer.  The
gates (config ``recall_min_confidence``, ``hook_min_confidence``) are the highest that cost at
most 2.5 and 5 points of recall@3 on the tune split.  Measured there: the margin and the
similarity carry the model; the word signals help a little; with this embedding model a gate that
silences 8 of 10 unanswerable questions costs a third of recall@3 (the bench prints the curve).
Code files have no labelled set here: their confidence uses the same model among files only.
Standard library only: this runs on every recall and every prompt hook.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from contextware.storage.embedded_text import related_words
from contextware.storage.schemas import CODE_TABLE

# Fitted by ``bench/recall_quality.py --tune`` (logistic regression on the tune split).
WEIGHTS: dict[str, float] = {
    "bias": -2.98,
    "relevance": 4.191,
    "lexical": -0.794,  # BM25 already counts in the margin (the fused score): alone it adds little
    "agreement": 0.539,
    "margin": 11.705,
    "coverage": 2.282,
    "unknown": -0.162,
}
FEATURES = ("relevance", "lexical", "agreement", "margin", "coverage", "unknown")
BM25_HALF = 8.0
LOG_HALF_LIFE_DAYS = 30.0

_WORD = re.compile(r"[a-z0-9][a-z0-9_+#.-]*[a-z0-9+#]|[a-z0-9]")
_STOP_TEXT = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just let me more most my myself no nor not now of off on once only or other our ours ourselves
    out over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours yourself yourselves ok okay fine also still ever
    anything something thing things way ways use used using want need needs go goes going get got make
    made know tell say said right good best really much many one two new like may might must shall
    else whether instead anymore currently actually again usually supposed allowed okay please
    """
STOP_WORDS = frozenset(_STOP_TEXT.split())


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stem: enough for "deploys"/"deploying"/"deployed" to meet."""
    for suffix in ("ational", "ation", "ings", "ing", "ies", "ied", "edly", "ed", "ers", "er", "ly", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def content_words(text: str) -> list[str]:
    """The question's words that carry its meaning, lower case, stop words dropped, each once."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w not in STOP_WORDS and len(w) > 1 and w not in out:
            out.append(w)
    return out


@functools.lru_cache(maxsize=8192)
def word_stems(text: str) -> frozenset[str]:
    """The stems of a text (cached: the same rows come back question after question)."""
    return frozenset(map(stem, _WORD.findall(text.lower())))


@functools.lru_cache(maxsize=4096)
def _forms(word: str) -> frozenset[str]:
    """The stems that count as the word: its own and its thesaurus family's."""
    return frozenset([stem(word), *map(stem, related_words(word))])


def _matches(word: str, stems: frozenset[str]) -> bool:
    return not _forms(word).isdisjoint(stems)


def row_text(row: dict) -> str:
    """The words of a row that a question can share with it, whatever its collection."""
    parts: list[Any] = [row.get(k) for k in ("text", "goal", "summary", "prompt", "file_path", "kind", "category")]
    parts += list(row.get("topics") or []) + list(row.get("symbols") or [])
    return " ".join(str(p) for p in parts if p)


def _ranks(hits: Sequence[dict], key: str) -> dict[int, int]:
    """1-based rank of each hit (by index) when ordered by ``key``; hits without it get none."""
    scored = [(i, h[key]) for i, h in enumerate(hits) if h.get(key) is not None and h[key] > 0]
    scored.sort(key=lambda p: -p[1])
    return {i: r for r, (i, _) in enumerate(scored, 1)}


def features(hits: Sequence[dict], query: str) -> list[dict[str, float]]:
    """The signals of every candidate of one question (hits carry ``row``, ``score``, ``relevance``,
    ``similarity`` and ``bm25``, as ``recall.select`` has them after fusion)."""
    words = content_words(query)
    stems = [word_stems(row_text(h["row"])) for h in hits]
    known = frozenset().union(*stems)
    unknown = sum(not _matches(w, known) for w in words) / len(words) if words else 0.0
    by_vec, by_lex = _ranks(hits, "relevance"), _ranks(hits, "bm25")
    scores = [h["score"] for h in hits]
    best, second = [*sorted(scores, reverse=True), 0.0, 0.0][:2]  # for the best *other* score
    out = []
    for i, h in enumerate(hits):
        others = second if scores[i] == best else best
        rr_vec = 1.0 / by_vec[i] if i in by_vec else 0.0
        rr_lex = 1.0 / by_lex[i] if i in by_lex else 0.0
        bm25 = float(h.get("bm25") or 0.0)
        cov = sum(_matches(w, stems[i]) for w in words) / len(words) if words else 0.0
        out.append(
            {
                "relevance": float(h["relevance"] if h.get("relevance") is not None else 0.0),
                "lexical": bm25 / (bm25 + BM25_HALF) if bm25 > 0 else 0.0,
                "agreement": (rr_vec + rr_lex) / 2,
                "margin": scores[i] - others,
                "coverage": cov,
                "unknown": unknown,
            }
        )
    return out


def combine(feats: dict[str, float], weights: dict[str, float] | None = None) -> float:
    w = WEIGHTS if weights is None else weights
    z = w["bias"] + sum(w[k] * feats[k] for k in FEATURES)
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def recency(created_at: datetime | None, now: datetime | None = None) -> float:
    """1.0 for a log written now, 0.5 after LOG_HALF_LIFE_DAYS, and so on."""
    if created_at is None:
        return 1.0
    if created_at.tzinfo is None:
        created_at = created_at.replace(tzinfo=timezone.utc)
    age = ((now or datetime.now(timezone.utc)) - created_at).total_seconds() / 86400
    return 0.5 ** (max(age, 0.0) / LOG_HALF_LIFE_DAYS)


def assign(hits: list[dict], query: str, weights: dict[str, float] | None = None) -> None:
    """Set ``confidence`` on every candidate of one question (in place).  Files and memories are
    scored on different scales, so each is judged among its own kind."""
    for group in (
        [h for h in hits if h["collection"] != CODE_TABLE],
        [h for h in hits if h["collection"] == CODE_TABLE],
    ):
        for h, f in zip(group, features(group, query), strict=True):
            conf = combine(f, weights)
            if h["collection"] == "logs":
                conf *= recency(h["row"].get("created_at"))
            h["confidence"] = conf


def check_min_confidence(value: Any, what: str = "--min-confidence") -> float:
    from contextware.errors import UsageError

    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not 0.0 <= v <= 1.0:
        raise UsageError(f"{what} must be a number from 0 to 1, not {value!r}.", code="bad_min_confidence")
    return v
