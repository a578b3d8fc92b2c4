"""How sure recall is that a result answers the question: a confidence in [0, 1] per result, and
the gate that turns "nothing is sure enough" into ``answerable: false``.

A single cosine cannot tell an unanswerable question *about the project* ("which message broker do
we use?") from a hard paraphrase of one it can answer: with a small embedding model their
similarities overlap.  The confidence therefore combines several signals of one candidate within its
candidate set:

* ``relevance``: cosine similarity of the plain question and the row;
* ``agreement``: whether the lexical and the vector rankers agree: the mean reciprocal rank of the
  row in the BM25 ranking and in the vector ranking of all candidates;
* ``margin``: how far the row's fused score is above the best *other* candidate (negative below it);
* ``gap``: how far the row's fused score is above the mean of the runners-up (the 2nd to 6th best):
  the shape of the list; when nothing stands out of a flat list, nothing answers;
* ``unknown``: the share of the question's content words found in *no* candidate at all (crude
  stems, a word of the engineering thesaurus also matched by its family);
* ``unknown_name``: 1 when the question names something (``GraphQL``, ``S3``, ``Storybook`` in
  mid-sentence: inner capitals, digits, a capital past the first word) that no candidate mentions by
  its own stems: an unanswerable question about the project often names a thing memory never saw;
* ``recency``, logs only: a conversation chunk fades with age (half-life LOG_HALF_LIFE_DAYS); facts
  and episodes stay true until superseded, so their age says nothing.

They are combined by a logistic model, ``confidence = sigmoid(b + sum(w_i * x_i))``, whose weights
are fitted on the tune split of bench/data/memory_eval.json (``uv run bench/recall_quality.py
--tune-confidence`` prints them and the gate curve): the first three candidates of every tune
question, answers as positives, the other candidates and every candidate of an unanswerable
question as negatives; so a confidence reads as the probability that the row is an answer.  The
gates are the highest that cost at most 2.5 points of recall@3 on the tune split for recall
(``recall_min_confidence``, lenient: the agent asked) and 10 points for the prompt hook
(``hook_min_confidence``, strict: it injects unasked, and an empty injection is a good answer).

Measured on the tune split, 5-fold cross-validated by question (so not the fit's own numbers;
``--tune-confidence`` prints it): unanswerable questions silenced at a cost of 2 / 5 / 10 / 20 / 30
points of recall@3: this model 10 / 13 / 43 / 60 / 70 %, the previous one (relevance, BM25 level,
agreement, margin, word coverage, unknown words) 3 / 27 / 27 / 50 / 63 % (30 questions: one is
3 points).  The score shape carries it (``gap``, ``margin``, ``relevance``); the
words help a little: ``unknown_name`` fires for 1 in 3 unanswerable questions and 1 in 10
answerable ones; a rarity-weighted share of unknown words (rarity from the tokenizer's
frequency-ordered vocabulary) scored AUC 0.69 alone but added nothing beside ``gap``, and loading
that vocabulary costs 110 ms, so it is not used; ``coverage`` and ``lexical`` (still computed, for
the fit to try) did not carry over across folds.  Token alignment from the same model
(BERTScore-style, ``--token-alignment``: each content word of the question scored by its best
cosine against a memory's contextual token vectors, ``BundledEmbedder.token_states``) did not help
either: pooled against each of the three best candidates by the minimum, the lowest quartile, the
mean or a corpus-IDF-weighted mean, cross-validated 3-7 / 10-13 / 33-40 / 60-70 / 80-87 %; against
the union of the three (minimum, lowest quartile or IDF mean) 13 / 13 / 50 / 60-63 / 73-77 %, i.e.
one or two questions of 30; on the test split (fitted and gated on tune) it silenced exactly what
today's model does (1 of 24 at recall's gate, 7 of 24 at the hook's).  Unanswerable questions'
weakest words are as often generic ("week", "front", "production") as the missing thing
("broker"), and paraphrases have weak words too.  It would also cost a second model run over the
question and three memories on every prompt: ~5x the query's own embedding (median 107-119 ms
against 20 ms on 2 loaded cores).  Silencing 8 of 10 unanswerable questions still
costs about a third of recall@3: with this embedding model, such questions about the project look
like hard paraphrases.

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

# Fitted by ``uv run bench/recall_quality.py --tune-confidence`` (``fit_confidence``: logistic
# regression with a little L2, on the top three candidates of the 97 answerable and 30 unanswerable
# questions of the tune split of bench/data/memory_eval.json); refit whenever a feature changes.
WEIGHTS: dict[str, float] = {
    "bias": -2.912,
    "relevance": 2.495,
    "agreement": 1.738,
    "margin": 5.093,
    "gap": 3.45,
    "unknown": -0.242,
    "unknown_name": -0.498,
}
FEATURES = ("relevance", "agreement", "margin", "gap", "unknown", "unknown_name")  # of ``features``: the model's
BM25_HALF = 8.0
GAP_FIELD = 5  # runners-up that ``gap`` compares with
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


_NAME = re.compile(r"(?<![\w-])[A-Za-z0-9][\w.+#-]*")
_PARTS = re.compile(r"[-_/.]+")


def named_things(query: str) -> list[str]:
    """What the question names, lower case: words written as names (``GraphQL``, ``S3``, ``RDS``,
    ``Storybook`` inside a sentence), the things a memory would have to mention by name.  The
    first word of the question and the stop words are not names."""
    out: list[str] = []
    for i, token in enumerate(_NAME.findall(query)):
        word = token.strip(".-")
        lower = word.lower()
        if not word or lower in STOP_WORDS or lower in out:
            continue
        inner_caps = any(c.isupper() for c in word[1:])
        if inner_caps or any(c.isdigit() for c in word) or (i > 0 and word[0].isupper() and word != "I"):
            out.append(lower)
    return out


def _mentioned(name: str, stems: frozenset[str]) -> bool:
    """Does some row say this name?  By its own stems only: the thesaurus makes "Kubernetes" a
    relative of "docker", but a memory about Docker says nothing about Kubernetes."""
    parts = [p for p in _PARTS.split(name) if p]
    return bool(parts) and all(stem(p) in stems for p in parts)


def features(hits: Sequence[dict], query: str) -> list[dict[str, float]]:
    """The signals of every candidate of one question (hits carry ``row``, ``score``, ``relevance``,
    ``similarity`` and ``bm25``, as ``recall.select`` has them after fusion)."""
    words = content_words(query)
    stems = [word_stems(row_text(h["row"])) for h in hits]
    known = frozenset().union(*stems)
    unknown = sum(not _matches(w, known) for w in words) / len(words) if words else 0.0
    unknown_name = float(any(not _mentioned(n, known) for n in named_things(query)))
    by_vec, by_lex = _ranks(hits, "relevance"), _ranks(hits, "bm25")
    scores = [h["score"] for h in hits]
    ordered = sorted(scores, reverse=True)
    best, second = [*ordered, 0.0, 0.0][:2]  # for the best *other* score
    field = ordered[1 : 1 + GAP_FIELD]  # the runners-up: does anything stand out of them?
    level = sum(field) / len(field) if field else 0.0
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
                "gap": scores[i] - level,
                "coverage": cov,
                "unknown": unknown,
                "unknown_name": unknown_name,
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
