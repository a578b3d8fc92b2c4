"""How sure recall is that a result answers the question: a confidence in [0, 1] per result, and
the check of the gate that turns "nothing is sure enough" into ``answerable: false``.

A single cosine cannot tell an unanswerable question *about the project* from a hard paraphrase of
one it can answer, so the confidence combines several signals of a candidate within its candidate
set (``Signals``) in a logistic model (``ConfidenceWeights``) fitted on the tune split; a confidence
reads as the probability that the row is an answer.  docs/retrieval.md records the fit, the gates'
trade-off and the signals tried and left out.  Standard library only: this runs on every recall.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from contextware.core.words import STOP_WORDS, stem, words
from contextware.memory.recall.params import ConfidenceParams, ConfidenceWeights
from contextware.memory.recall.types import Hit, Signals
from contextware.storage.embedded_text import related_words
from contextware.storage.schemas import CODE_TABLE


def content_words(text: str) -> list[str]:
    """The question's words that carry its meaning, lower case, stop words dropped, each once."""
    out: list[str] = []
    for w in words(text):
        if w not in STOP_WORDS and len(w) > 1 and w not in out:
            out.append(w)
    return out


@functools.lru_cache(maxsize=8192)
def word_stems(text: str) -> frozenset[str]:
    """The stems of a text (cached: the same rows come back question after question)."""
    return frozenset(map(stem, words(text)))


@functools.lru_cache(maxsize=4096)
def _forms(word: str) -> frozenset[str]:
    """The stems that count as the word: its own and its thesaurus family's."""
    return frozenset([stem(word), *map(stem, related_words(word))])


def _matches(word: str, stems: frozenset[str]) -> bool:
    return not _forms(word).isdisjoint(stems)


def row_text(row: dict[str, Any]) -> str:
    """The words of a row that a question can share with it, whatever its collection."""
    parts: list[Any] = [row.get(k) for k in ("text", "goal", "summary", "prompt", "file_path", "kind", "category")]
    parts += list(row.get("topics") or []) + list(row.get("symbols") or [])
    return " ".join(str(p) for p in parts if p)


def _ranks(values: Sequence[float | None]) -> dict[int, int]:
    """1-based rank of each value (by index), highest first; missing or non-positive ones get none."""
    scored = [(i, v) for i, v in enumerate(values) if v is not None and v > 0]
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


FEATURES = tuple(f.name for f in fields(Signals))


def signals(hits: Sequence[Hit], query: str, gap_field: int = 5) -> list[Signals]:
    """The signals of every candidate of one question (fused: each hit has its ``score``)."""
    words = content_words(query)
    stems = [word_stems(row_text(h.row)) for h in hits]
    known = frozenset().union(*stems)
    unknown = sum(not _matches(w, known) for w in words) / len(words) if words else 0.0
    unknown_name = float(any(not _mentioned(n, known) for n in named_things(query)))
    by_vec, by_lex = _ranks([h.relevance for h in hits]), _ranks([h.bm25 for h in hits])
    scores = [h.score for h in hits]
    ordered = sorted(scores, reverse=True)
    best, second = [*ordered, 0.0, 0.0][:2]  # for the best *other* score
    field = ordered[1 : 1 + gap_field]  # the runners-up: does anything stand out of them?
    level = sum(field) / len(field) if field else 0.0
    out = []
    for i, h in enumerate(hits):
        others = second if scores[i] == best else best
        rr_vec = 1.0 / by_vec[i] if i in by_vec else 0.0
        rr_lex = 1.0 / by_lex[i] if i in by_lex else 0.0
        out.append(
            Signals(
                relevance=float(h.relevance if h.relevance is not None else 0.0),
                agreement=(rr_vec + rr_lex) / 2,
                margin=scores[i] - others,
                gap=scores[i] - level,
                unknown=unknown,
                unknown_name=unknown_name,
            )
        )
    return out


def combine(s: Signals, weights: ConfidenceWeights) -> float:
    z = weights.bias + sum(getattr(weights, k) * getattr(s, k) for k in FEATURES)
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def assign(hits: list[Hit], query: str, params: ConfidenceParams) -> list[Hit]:
    """Every candidate of one question with its ``confidence`` and ``signals``.  Files and
    memories are scored on different scales, so each is judged among its own kind; echoes of the
    question (``fusion.is_echo``) among themselves, their confidence cut by ``echo_weight``."""
    out: dict[int, Hit] = {}
    for group in (  # echoes apart: a question repeated must not rank above what may answer it
        [(i, h) for i, h in enumerate(hits) if h.collection != CODE_TABLE and not h.echo],
        [(i, h) for i, h in enumerate(hits) if h.collection == CODE_TABLE],
        [(i, h) for i, h in enumerate(hits) if h.echo],
    ):
        group_hits = [h for _, h in group]
        for (i, h), s in zip(group, signals(group_hits, query, params.gap_field), strict=True):
            conf = combine(s, params.weights) * (params.echo_weight if h.echo else 1.0)  # an echo answers nothing
            out[i] = replace(h, confidence=conf, signals=s)
    return [out[i] for i in range(len(hits))]
