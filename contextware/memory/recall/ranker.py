"""The ranker of memories: one linear score over cheap features of each memory candidate
(``FEATURES``), with weights per family (captured turns, ``logs``; every other memory table,
``memory``) in ``RankerParams``, written into ``ranker_weights.py`` by
``uv run bench/fit_ranker.py``.  The turns' weights are fitted on every train split; the other
memories keep cosine + 0.2 x saturated BM25, which the fitted weights did not beat on the
engineering test split.  Code files keep ``codeindex.search``'s own fusion.

Every feature comes from what the search already returned (the two scores, the rows, the words of
the question): no embedding and no table read per candidate, about half a millisecond a question.
Scores are in a cosine's units (a fact's cosine weighs 1, a turn's 0.9), so recall's tie, margin
and code scale keep their meaning; turns meet other memories less the median of their own crowd
(``RankerParams.turn_baseline``).  docs/retrieval.md section 16 records the fit and what it
replaced."""

from __future__ import annotations

import calendar
import itertools
import math
import re
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contextware.core.words import STOP_WORDS, words

if TYPE_CHECKING:
    from contextware.memory.recall.params import FusionParams, RankerParams, RankerWeights
    from contextware.storage.candidate import Candidate

FEATURES = (
    "cosine",  # cosine of the search vector and the row
    "bm25",  # saturated full-text score, bm25 / (bm25 + BM25_HALF)
    "log_bm25",  # log(1 + bm25)
    "rr_cosine",  # 1 / rank by cosine among the question's candidates of the same table
    "rr_bm25",  # 1 / rank by BM25 among them (0 when the full-text search did not find it)
    "coverage",  # the IDF-weighted share of the question's content words the row holds
    "noise",  # the median cosine of the table's candidates for this question (how crowded it is)
    "length",  # log(1 + words in the row)
    "date",  # the question names a date (day, month, year) the row was written on
    "neighbour",  # captured turns: best cosine of another candidate turn next to it in its session
    "follows",  # captured turns: saturated BM25 of the candidate turn just before it (what it answers)
    "speaker",  # captured turns: the question names the turn's speaker (its ``speaker`` column)
    "echo",  # a captured user turn that asks rather than tells (``fusion.is_echo``)
    "restated",  # an older fact a newer candidate restates or supersedes
    "restates",  # a newer fact that restates or supersedes another candidate
)
COVERAGE = FEATURES.index("coverage")
BM25_HALF = 8.0
NEIGHBOUR_SECONDS = 600  # turns this close in one session are neighbours

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m and m.lower() != "may"}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATES = (  # most specific first
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(?P<year>(?:19|20)\d\d)\b", re.I),
    re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>(?:19|20)\d\d)\b", re.I),
    re.compile(rf"\b{_MONTH},?\s+(?P<year>(?:19|20)\d\d)\b", re.I),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<mon>\d\d)(?:-(?P<day>\d\d))?\b"),
    re.compile(rf"\b(?:in|during|since|until|of|early|late|mid)\s+{_MONTH}\b", re.I),
    re.compile(r"\b(?:in|during|since|until|of)\s+(?P<year>(?:19|20)\d\d)\b", re.I),
)


def named_date(question: str) -> tuple[int | None, int | None, int | None] | None:
    """(year, month, day) of the date the question names, each None when not named ("in June":
    month only; "on 1 February, 2023": all three); None when it names no date."""
    for pattern in _DATES:
        m = pattern.search(question)
        if m is None:
            continue
        found = m.groupdict()
        month = _MONTHS.get((found.get("month") or "").lower()) or (int(found["mon"]) if found.get("mon") else None)
        year = int(found["year"]) if found.get("year") else None
        day = int(found["day"]) if found.get("day") else None
        return year, month, day
    return None


def _date_match(named: tuple[int | None, int | None, int | None] | None, row: dict[str, Any]) -> float:
    created = row.get("created_at")
    if named is None or not isinstance(created, datetime):
        return 0.0
    year, month, day = named
    if year is not None and created.year != year:
        return 0.0
    if month is not None and created.month != month:
        return 0.0
    if day is not None and abs(created.day - day) > 1:
        return 0.0
    return 1.0


def _ranks(values: Sequence[float]) -> list[float]:
    """The reciprocal rank of each positive value, highest first (0 for the others)."""
    order = sorted((i for i, v in enumerate(values) if v > 0), key=lambda i: -values[i])
    out = [0.0] * len(values)
    for r, i in enumerate(order, 1):
        out[i] = 1.0 / r
    return out


def _coverage(query: str, rows: Sequence[dict[str, Any]]) -> list[float]:
    """The share of the question's content words each row holds, each word weighted by its IDF
    among the candidates (a word every candidate holds tells nothing)."""
    from contextware.core.words import stem
    from contextware.memory.recall.confidence import content_words, row_text, word_stems

    stems = list(dict.fromkeys(stem(w) for w in content_words(query)))
    if not stems or not rows:
        return [0.0] * len(rows)
    held = [word_stems(row_text(r)) for r in rows]
    n = len(rows)
    idf = [math.log(1 + n / (1 + sum(s in h for h in held))) for s in stems]
    total = sum(idf) or 1.0
    return [sum(w for s, w in zip(stems, idf, strict=True) if s in h) / total for h in held]


def _timestamp(row: dict[str, Any]) -> float | None:
    created = row.get("created_at")
    return created.timestamp() if isinstance(created, datetime) else None


def _turns_by_session(found: Sequence["Candidate"]) -> list[list[tuple[float, int]]]:
    """The captured turns among the candidates, (time, index) in time order, one list a session."""
    by_session: dict[str, list[tuple[float, int]]] = {}
    for i, c in enumerate(found):
        t = _timestamp(c.row) if c.collection == "logs" else None
        if t is not None and c.row.get("session_id"):
            by_session.setdefault(str(c.row["session_id"]), []).append((t, i))
    return [sorted(members) for members in by_session.values()]


def _neighbours(sessions: list[list[tuple[float, int]]], cosine: Sequence[float]) -> list[float]:
    """For each captured turn, the best cosine of another candidate turn of its session written
    within ``NEIGHBOUR_SECONDS`` of it (what it answers or what answers it)."""
    out = [0.0] * len(cosine)
    for members in sessions:
        for ti, i in members:
            near = [cosine[j] for tj, j in members if j != i and abs(ti - tj) <= NEIGHBOUR_SECONDS]
            out[i] = max([0.0, *near])  # never below 0, as a turn without neighbours
    return out


def _follows(sessions: list[list[tuple[float, int]]], bm25: Sequence[float]) -> list[float]:
    """For each captured turn, the saturated BM25 of the candidate turn of its session written last
    before it, within ``NEIGHBOUR_SECONDS``: a reply is found by the words of what it answers."""
    out = [0.0] * len(bm25)
    for members in sessions:
        for (t0, before), (t1, i) in itertools.pairwise(members):
            if t1 - t0 <= NEIGHBOUR_SECONDS and bm25[before] > 0:
                out[i] = bm25[before] / (bm25[before] + BM25_HALF)
    return out


def speaker_named(asked: frozenset[str], row: dict[str, Any]) -> float:
    """1 when the question's words (``asked``, ``core.words.words``) name the turn's speaker ("what
    did Caroline research?" and a turn Caroline wrote): a chat of several people is asked about who
    said what.  A speaker called by a stop word ("me") names nobody."""
    speaker = row.get("speaker")
    if not speaker:
        return 0.0
    return float(any(len(p) > 1 and p not in STOP_WORDS and p in asked for p in words(str(speaker))))


def features(
    found: Sequence["Candidate"], query: str, f: "FusionParams", restatement: bool = True
) -> list[list[float]]:
    """The ``FEATURES`` of every memory candidate of one question (code candidates: zeros).
    ``restatement`` False leaves ``restated`` and ``restates`` 0 (the pairwise comparison of the
    facts costs a few milliseconds: skipped when their weights are 0; ``fusion.order`` still
    puts a restating fact first)."""
    from contextware.memory.recall.signals import is_echo, restatements
    from contextware.storage.schemas import CODE_TABLE

    n = len(found)
    cosine = [float(c.similarity) if c.similarity is not None else 0.0 for c in found]
    bm25 = [float(c.bm25) for c in found]
    rr_cos, rr_lex, noise = [0.0] * n, [0.0] * n, [0.0] * n
    tables: dict[str, list[int]] = {}
    for i, c in enumerate(found):
        if c.collection != CODE_TABLE:
            tables.setdefault(c.collection, []).append(i)
    for members in tables.values():
        for i, r in zip(members, _ranks([cosine[i] + 2.0 for i in members]), strict=True):
            rr_cos[i] = r
        for i, r in zip(members, _ranks([bm25[i] for i in members]), strict=True):
            rr_lex[i] = r
        median = statistics.median(cosine[i] for i in members)
        for i in members:
            noise[i] = median
    memory = [c for c in found if c.collection != CODE_TABLE]
    covered = iter(_coverage(query, [c.row for c in memory]))
    coverage = [next(covered) if c.collection != CODE_TABLE else 0.0 for c in found]
    named = named_date(query)
    sessions = _turns_by_session(found)
    neighbour = _neighbours(sessions, cosine)
    after_match = _follows(sessions, bm25)
    asked = frozenset(words(query))
    follows = restatements(memory, f.restated) if restatement and f.restated <= 1.0 else {}
    ids = {c.id for c in memory}
    older, newer = set(follows.values()), set(follows)
    for c in memory if restatement else ():
        old = c.row.get("supersedes")
        if old and old in ids:
            older.add(str(old))
            newer.add(c.id)
    out = []
    for i, c in enumerate(found):
        if c.collection == CODE_TABLE:
            out.append([0.0] * len(FEATURES))
            continue
        text = str(c.row.get("text") or c.row.get("summary") or "")
        out.append(
            [
                cosine[i],
                bm25[i] / (bm25[i] + BM25_HALF) if bm25[i] > 0 else 0.0,
                math.log1p(max(bm25[i], 0.0)),
                rr_cos[i],
                rr_lex[i],
                coverage[i],
                noise[i],
                math.log1p(len(text.split())),
                _date_match(named, c.row),
                neighbour[i],
                after_match[i],
                speaker_named(asked, c.row) if c.collection == "logs" else 0.0,
                float(is_echo(c, f)),
                float(c.id in older),
                float(c.id in newer),
            ]
        )
    return out


def weights_for(c: "Candidate", ranker: "RankerParams") -> "RankerWeights":
    return ranker.logs if c.collection == "logs" else ranker.memory


def dot(x: Sequence[float], w: "RankerWeights") -> float:
    return w.bias + sum(v * getattr(w, k) for k, v in zip(FEATURES, x, strict=True))


def scores(found: Sequence["Candidate"], query: str, f: "FusionParams", ranker: "RankerParams") -> list[float]:
    """The fitted score of every memory candidate (code candidates: 0, fused elsewhere).  Without
    vectors (degraded mode) a memory scores its saturated BM25 alone: any full-text match counts."""
    if not found:
        return []
    if all(c.similarity is None for c in found):
        return [c.bm25 / (c.bm25 + BM25_HALF) if c.bm25 > 0 else 0.0 for c in found]
    restatement = any(getattr(w, k) for w in (ranker.memory, ranker.logs) for k in ("restated", "restates"))
    xs = features(found, query, f, restatement)
    out = [dot(x, weights_for(c, ranker)) for c, x in zip(found, xs, strict=True)]
    turns = [i for i, c in enumerate(found) if c.collection == "logs"]
    if turns:
        # Turns among themselves: the fitted order.  Turns against other memories: the hand-set
        # scores' values (``turn_weight`` x (cosine + ``turn_bm25`` x saturated BM25 x coverage),
        # less ``turn_baseline`` x their median), handed out in the fitted order.  The fit saw no
        # turns that resemble a question without answering it, so its scale must not decide whether
        # a turn outranks a fact (a reply "Noted." to "please remember X" outranked the fact X).
        # The BM25 counts as far as the turn covers the question: among thousands of turns one
        # rare shared word scores high ("[ft] Add missing lock ..." for "why does locking take
        # forever?") and outranked the fact that answers.
        hand = sorted(
            (ranker.turn_weight * (xs[i][0] + ranker.turn_bm25 * xs[i][1] * xs[i][COVERAGE]) for i in turns),
            reverse=True,
        )
        noise = ranker.turn_baseline * statistics.median(hand) if len(turns) > 1 else 0.0
        for i, value in zip(sorted(turns, key=lambda i: -out[i]), hand, strict=True):
            out[i] = value - noise
    return out
