"""Recall's last stage: each hit as the agent reads it (a public row with its score and
confidence; long texts shortened in summary mode; code hits with their freshness, and in exact mode
their files' content within a budget).  Reads files, never writes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from contextware.core.text import cut_at_word
from contextware.memory.code_links import stale_flag
from contextware.memory.records import public_row
from contextware.storage.candidate import RecalledItem
from contextware.storage.schemas import CODE_TABLE, OFFLOADS_TABLE

if TYPE_CHECKING:
    from contextware.memory.recall.query import RecallQuery
    from contextware.memory.recall.types import Hit
    from contextware.memory.results import LinkedRow, MemoryRow
    from contextware.storage.project import Project


def present_hit(hit: "Hit", mode: str, project: "Project", summary_chars: int) -> RecalledItem:
    project = hit.project or project
    if hit.collection == CODE_TABLE:
        from contextware.codeindex.hits import render_code_hit

        return {**render_code_hit(project, hit.candidate, hit.score, mode), "confidence": round(hit.confidence, 3)}
    if hit.collection == OFFLOADS_TABLE:
        from contextware.offload.table import public_offload

        offload = cast(RecalledItem, public_offload(project, hit.row))
        shown: RecalledItem = {
            "collection": OFFLOADS_TABLE,
            "id": hit.row["id"],
            "score": round(hit.score, 4),
            "confidence": round(hit.confidence, 3),
            **offload,
        }
        if mode == "summary" and isinstance(summary := shown.get("summary"), str):
            shown["summary"] = cut_at_word(summary, summary_chars * 3)
        return shown
    row = cast("dict[str, Any]", public_row(cast("MemoryRow", hit.row), hit.collection))
    out: RecalledItem = {
        "collection": hit.collection,
        "id": row.pop("id"),
        "score": round(hit.score, 4),
        "confidence": round(hit.confidence, 3),
    }
    row.pop("collection", None)
    if mode == "summary":
        for key in ("text", "summary", "prompt"):
            if isinstance(row.get(key), str):
                row[key] = cut_at_word(row[key], summary_chars)
        for key in ("source", "updated_at", "chunk_count"):
            row.pop(key, None)
    out.update(cast(RecalledItem, {k: v for k, v in row.items() if v is not None}))
    if hit.repeats:
        out["repeats"] = hit.repeats  # the same words were captured this many more times
    if stale := stale_flag(
        project, hit.collection, cast("LinkedRow", hit.row)
    ):  # memory.code_links: the code it names changed
        out["may_be_stale"] = stale["may_be_stale"]
    return out


def present(
    hits: list["Hit"], query: "RecallQuery", project: "Project", summary_chars: int, default_max_chars: int
) -> list[RecalledItem]:
    """The results of one recall, in order."""
    results = [present_hit(h, query.mode, project, summary_chars) for h in hits]
    if query.all_projects:
        for h, r in zip(hits, results, strict=False):
            r["project"] = str((h.project or project).root)
    if query.mode == "exact":
        from contextware.codeindex.hits import attach_content

        attach_content(project, results, query.question, query.max_chars or default_max_chars)
    return results
