"""Recall: the memories, files and offload answers that answer a question, as typed stages.

``query`` (the frozen ``RecallQuery``, checked once by each front end) -> ``search`` (candidates of
every table, cosine and BM25) -> ``fusion`` (one score each; the gate and the order) with
``confidence`` (how sure each result is) -> ``present`` (what the agent reads); ``explain`` says
why, from the same values, when asked.  ``params`` holds every tuned value; ``pipeline`` runs the
stages.  May import offload, codeindex, storage and the
shared helpers; a read never writes."""

from contextware.memory.recall.params import DEFAULT_PARAMS, RecallParams
from contextware.memory.recall.pipeline import ask, recall, recall_refreshing_stale
from contextware.memory.recall.query import SCOPES, RecallFilters, RecallQuery, parse_query
from contextware.memory.recall.types import Hit, RecallResult

__all__ = [
    "DEFAULT_PARAMS",
    "SCOPES",
    "Hit",
    "RecallFilters",
    "RecallParams",
    "RecallQuery",
    "RecallResult",
    "ask",
    "parse_query",
    "recall",
    "recall_refreshing_stale",
]
