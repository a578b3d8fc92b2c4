"""Signals about one memory candidate that both the fitted ranker (``ranker``) and the final
ordering (``fusion.order``) read: whether a captured user turn asks rather than tells (an echo of
a question), and whether a newer fact restates an older one (``restatements``, by cosine and by
the words and identifiers they share).  Pure functions of the candidates and their rows."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from contextware.memory.recall.params import FusionParams
from contextware.memory.recall.types import Hit
from contextware.storage.candidate import Candidate

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


def created(h: Hit | Candidate) -> float:
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
    # Only a pair whose newer fact says it replaces something can be a restatement: each fact's
    # text is read once and the pairs are sifted as arrays (a store of many alike facts offered
    # thousands of pairs, each read in Python).
    times = np.asarray([created(h) for h in facts])
    says = np.asarray([_says_replacing(str(h.row.get("text"))) for h in facts])
    later = times[:, None] > times[None, :]  # i is newer than j
    newer_says = (later & says[:, None]) | (times[:, None] < times[None, :]) & says[None, :]
    out: dict[str, str] = {}
    for i, j in np.argwhere((sims >= min(alike - REPLACING_SLACK, NAMED_ALIKE)) & newer_says):
        newer, older = (facts[i], facts[j]) if later[i, j] else (facts[j], facts[i])
        text, old_text = str(newer.row.get("text")), str(older.row.get("text"))
        if (
            sims[i, j] >= alike
            or (sims[i, j] >= alike - REPLACING_SLACK and _repeats_words(text, old_text))
            or not identifiers(text).isdisjoint(identifiers(old_text))
        ):
            out.setdefault(newer.id, older.id)
    return out


@functools.lru_cache(maxsize=4096)
def _says_replacing(text: str) -> bool:
    return REPLACING.search(text) is not None
