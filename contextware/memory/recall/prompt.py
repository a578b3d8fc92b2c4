"""What the prompt hook injects for a prompt nobody asked about: recall of the memories and files
likely to answer it, at the stricter ``hook_min_confidence``, only those close to the best.  The
selection lives here (not in the hook's renderer) so that bench/quality.py measures exactly what
the hook injects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextware.memory.recall.params import DEFAULT_PARAMS, RecallParams
from contextware.memory.recall.pipeline import recall
from contextware.memory.recall.query import parse_query

if TYPE_CHECKING:
    from contextware.memory.recall.types import RecallResult
    from contextware.storage.project import Project

PROMPT_CHARS = 2000  # a prompt is searched by its beginning
CANDIDATES = 8  # results considered before the hook's own budget


def for_prompt(project: "Project", prompt: str, params: RecallParams = DEFAULT_PARAMS) -> "RecallResult":
    """The hook's recall for ``prompt`` (with its explanation, which feeds the turn's record)."""
    gate = float(project.config["hook_min_confidence"])  # stricter than recall's: nobody asked
    margin = params.fusion.margin  # only memories close to the best: it injects unasked
    query = parse_query(
        prompt[:PROMPT_CHARS], scope="all", limit=CANDIDATES, without=("logs",), min_confidence=gate, margin=margin
    )
    return recall(project, query, params, explain=True)
