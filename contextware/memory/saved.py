"""What a save answers (``records.save_fact``, ``save_episode``, ``save_log``): the memory's id, or
the one it duplicates, and what the agent should know about it, as the JSON every door prints."""

from __future__ import annotations

from typing import TypedDict


class SimilarMemory(TypedDict):
    """An active memory close to the one saved (cosine at least ``similar_threshold``)."""

    id: str
    text: str
    score: float


class _Saved(TypedDict):
    collection: str
    id: str
    written: int  # rows written: 0 for a duplicate, the chunks of a long log


class SavedMemory(_Saved, total=False):
    """A save's answer: ``duplicate_of`` when the same text was there already (nothing written),
    ``superseded`` the fact it replaced, ``similar`` memories to check, ``redacted`` the secrets
    replaced by kind; a log's ``ids`` and ``chunks``; ``degraded`` and ``vector`` when it was stored
    without its embedding for now."""

    duplicate_of: str
    superseded: str
    similar: list[SimilarMemory]
    redacted: dict[str, int]
    degraded: str
    vector: str
    ids: list[str]
    chunks: int
