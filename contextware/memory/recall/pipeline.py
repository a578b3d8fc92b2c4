"""Recall as stages: search every table a query covers (``search``), fuse and judge the candidates
and gate them (``fusion``, ``confidence``), present what passes (``present``).  A read never
writes: refreshing stale files is the separate step ``recall_refreshing_stale`` of the callers that
ask for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from contextware.memory.branches import mark_unmerged
from contextware.memory.recall.fusion import decide, judge
from contextware.memory.recall.params import DEFAULT_PARAMS, RecallParams
from contextware.memory.recall.present import present
from contextware.memory.recall.query import check_min_confidence, parse_query
from contextware.memory.recall.search import CandidateSet, Vectors, candidates
from contextware.memory.recall.types import RecallResult
from contextware.memory.turns.usage import priors
from contextware.storage.schemas import CODE_TABLE

if TYPE_CHECKING:
    from contextware.memory.recall.query import RecallQuery
    from contextware.memory.recall.types import RecallJson
    from contextware.memory.results import MemoryRow
    from contextware.memory.trust import TrustNote
    from contextware.storage.project import Project


def _projects(project: "Project", everywhere: bool) -> list["Project"]:
    """The project, and with ``everywhere`` every other project registered on this machine."""
    projects = [project]
    if everywhere:
        from contextware.storage.project import registered_projects

        known = {project.root.resolve()}
        for other in registered_projects(project.settings):
            if other.root.resolve() not in known:
                known.add(other.root.resolve())
                projects.append(other)
    return projects


def _search(projects: list["Project"], query: "RecallQuery", params: RecallParams) -> CandidateSet:
    vectors: Vectors = {}  # the question is embedded once, for every project
    found, degraded = [], None
    for proj in projects:
        one = candidates(proj, query, params.fusion, vectors, tag=len(projects) > 1)
        found += one.candidates
        degraded = degraded or one.degraded
    return CandidateSet(found, degraded)


def recall(
    project: "Project", query: "RecallQuery", params: RecallParams = DEFAULT_PARAMS, *, explain: bool = False
) -> RecallResult:
    """The memories, files and offloads that answer ``query``, best first, each with its
    confidence; none (``answerable: false``) unless one reaches the gate.  ``explain``: the result
    also carries why (``explain.explain``, made from the same judged candidates and gate)."""
    gate = (
        check_min_confidence(project.config.recall_min_confidence, "recall_min_confidence in config.json")
        if query.min_confidence is None
        else query.min_confidence
    )
    found = _search(_projects(project, query.all_projects), query, params)
    judged = judge(found.candidates, query.question, params)
    gated = decide(
        judged,
        query.limit,
        params.fusion,
        vector=found.degraded is None,
        code_gate=query.tables != (CODE_TABLE,),  # --scope code ranks files; mixed, they must be about it
        min_confidence=gate,
        margin=query.margin,
        hide_restated=not query.filters.include_superseded,  # an older fact a newer one restates leaves the list
        prior=priors(project.data_dir),  # the use feedback: reorders near-ties only
    )
    hits = gated.hits
    results = present(hits, query, project, params.summary_chars, params.default_max_chars)
    mark_unmerged(project, query.filters.branch, cast("list[MemoryRow]", [h.row for h in hits]), results)
    from contextware.memory.trust import annotate

    annotate(
        project, cast("list[TrustNote]", list(results)), cast("dict[str, MemoryRow]", {h.id: h.row for h in hits})
    )  # whose, when not the user's; why quarantined
    why = None
    if explain:
        from contextware.memory.recall.explain import explain as explanation

        why = explanation(judged, gated, gate, params.fusion.floor)
    return RecallResult(query, tuple(hits), results, gate, found.degraded, explanation=why)


def recall_refreshing_stale(
    project: "Project", query: "RecallQuery", params: RecallParams = DEFAULT_PARAMS, *, explain: bool = False
) -> RecallResult:
    """Recall; when code results are stale, re-index their files (a write, possibly a Gemini
    summary) and recall again.  Not across projects: another project's files are not ours to index."""
    first = recall(project, query, params, explain=explain)
    stale = [r["file_path"] for r in first.results if r.get("stale")]
    if not stale or query.all_projects:
        return first
    from dataclasses import replace

    from contextware.codeindex.indexer import index_files

    summarizer = project.config.summarizer
    index_files(project, [project.root / p for p in stale], summarizer=summarizer)
    return replace(recall(project, query, params, explain=explain), refreshed=tuple(stale))


def ask(
    project: "Project", text: str, *, refresh_stale: bool = False, explain: bool = False, **inputs: Any
) -> "RecallJson":
    """From loose inputs to the JSON answer in one call (library users, tests, benchmarks); the
    inputs are ``parse_query``'s."""
    query = parse_query(text, **inputs)
    return (recall_refreshing_stale if refresh_stale else recall)(project, query, explain=explain).to_dict()
