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
# Memories injected at most, and the share of the best confidence a memory needs beside it: fitted
# on the engineering set's train split (bench/quality.py; docs/retrieval.md section 14): 8 and no
# share injected 4.3 memories a prompt; 4 and 0.1 inject 2.7 for 3 points of answers.
MAX_MEMORIES = 4
RELATIVE_CONFIDENCE = 0.1


def for_prompt(
    project: "Project", prompt: str, params: RecallParams = DEFAULT_PARAMS, gate: float | None = None
) -> "RecallResult":
    """The hook's recall for ``prompt`` (with its explanation, which feeds the turn's record), at
    ``gate`` or the project's ``hook_min_confidence`` (bench/quality.py sweeps it)."""
    if gate is None:
        gate = float(project.config["hook_min_confidence"])  # stricter than recall's: nobody asked
    margin = params.fusion.margin  # only memories close to the best: it injects unasked
    query = parse_query(
        prompt[:PROMPT_CHARS], scope="all", limit=CANDIDATES, without=("logs",), min_confidence=gate, margin=margin
    )
    return mostly_answers(recall(project, query, params, explain=True))


def mostly_answers(result: "RecallResult") -> "RecallResult":
    """Only the memories likely to answer: at most ``MAX_MEMORIES``, each at least
    ``RELATIVE_CONFIDENCE`` of the best one's confidence (files keep the hook's own rules)."""
    from dataclasses import replace

    from contextware.storage.schemas import CODE_TABLE

    memories = [h.confidence for h in result.hits if h.collection != CODE_TABLE]
    if not memories:
        return result
    least, kept, keep = RELATIVE_CONFIDENCE * max(memories), 0, []
    for h in result.hits:
        ok = h.collection == CODE_TABLE or (kept < MAX_MEMORIES and h.confidence >= least)
        kept += ok and h.collection != CODE_TABLE
        keep.append(ok)
    hits = tuple(h for h, ok in zip(result.hits, keep, strict=True) if ok)
    results = [r for r, ok in zip(result.results, keep, strict=True) if ok]
    return replace(result, hits=hits, results=results)
