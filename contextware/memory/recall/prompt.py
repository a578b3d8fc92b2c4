"""What the prompt hook injects for a prompt nobody asked about: recall of the memories and files
likely to answer it, at the stricter ``hook_min_confidence``, only those close to the best.  The
selection lives here (not in the hook's renderer) so that bench/quality.py measures exactly what
the hook injects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextware.memory.recall.params import DEFAULT_PARAMS, HookParams, RecallParams
from contextware.memory.recall.pipeline import recall
from contextware.memory.recall.query import parse_query

if TYPE_CHECKING:
    from contextware.memory.recall.types import RecallResult
    from contextware.storage.project import Project


def for_prompt(
    project: "Project", prompt: str, params: RecallParams = DEFAULT_PARAMS, gate: float | None = None
) -> "RecallResult":
    """The hook's recall for ``prompt`` (with its explanation, which feeds the turn's record), at
    ``gate`` or the project's ``hook_min_confidence`` (bench/quality.py sweeps it)."""
    if gate is None:
        gate = project.config.hook_min_confidence  # stricter than recall's: nobody asked
    margin = params.fusion.margin  # only memories close to the best: it injects unasked
    hook = params.hook
    query = parse_query(
        prompt[: hook.prompt_chars],
        scope="all",
        limit=hook.candidates,
        without=("logs",),
        min_confidence=gate,
        margin=margin,
    )
    return mostly_answers(recall(project, query, params, explain=True), hook)


def mostly_answers(result: "RecallResult", hook: HookParams) -> "RecallResult":
    """Only the memories likely to answer: at most ``hook.max_memories``, each at least
    ``hook.relative_confidence`` of the best one's confidence (files keep the hook's own rules)."""
    from dataclasses import replace

    from contextware.storage.schemas import CODE_TABLE

    memories = [h.confidence for h in result.hits if h.collection != CODE_TABLE]
    if not memories:
        return result
    least, kept, keep = hook.relative_confidence * max(memories), 0, []
    for h in result.hits:
        ok = h.collection == CODE_TABLE or (kept < hook.max_memories and h.confidence >= least)
        kept += ok and h.collection != CODE_TABLE
        keep.append(ok)
    hits = tuple(h for h, ok in zip(result.hits, keep, strict=True) if ok)
    results = [r for r, ok in zip(result.results, keep, strict=True) if ok]
    return replace(result, hits=hits, results=results)
