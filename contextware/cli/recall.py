"""``recall.py``: search the project's memory."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.recall import RECALL

if TYPE_CHECKING:
    from contextware.memory.recall.types import ExplanationJson, RecallJson
    from contextware.storage.candidate import RecalledItem

DESCRIPTION = RECALL.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, RECALL)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    values = values_of(args, RECALL)
    query = RECALL.check(values)  # checked before the model loads: exiting under its loading thread can abort
    from contextware.storage.embeddings import preload_in_background

    project = open_project(args)
    preload_in_background(project.embedder)
    return RECALL.run(project, query, values)


def render_hit(hit: "RecalledItem") -> str:
    """One result as text: stored texts on one line (``inline``), file content indented (``block``)."""
    from contextware.core.fence import block, inline

    c = hit["collection"]
    if c == "episodes":
        line = (
            f"[{inline(hit.get('result', '')).upper()}] [{inline(hit.get('category', '')).upper()}] "
            f"Goal: {inline(hit.get('goal'))} | Summary: {inline(hit.get('summary'))}"
        )
    elif c == "facts":
        flag = " (superseded)" if hit.get("status") == "superseded" else ""
        line = f"[{inline(hit.get('kind', 'note')).upper()}]{flag} {inline(hit.get('text'))}"
    elif c == "code_index":
        stale = " [STALE]" if hit.get("stale") else ""
        symbols = inline(", ".join(hit.get("symbols") or []))
        line = f"{inline(hit['file_path'])}{stale}: {inline(hit.get('summary'))}" + (
            f"\n    symbols: {symbols}" if symbols else ""
        )
        if hit.get("content") is not None:
            line += "\n" + block(hit["content"])
        for e in hit.get("excerpts") or []:
            line += f"\n    --- lines {inline(e['lines'])} ---\n{block(e['text'])}"
        if hit.get("content_note"):
            line += f"\n    ({inline(hit['content_note'])})"
    elif c == "offloads":
        where = f" [session {inline(hit['session_name'])}]" if hit.get("session_name") else ""
        line = (
            f"[OFFLOAD]{where} {inline(hit.get('summary'))}\n    full answer: {inline(hit.get('full_response_path'))}"
        )
    elif c == "logs":
        asked = f"(asked: {inline(hit['prompt'])}) " if hit.get("prompt") else ""
        again = f" (asked {hit['repeats'] + 1} times)" if hit.get("repeats") else ""
        line = (
            f"[LOG {inline(hit.get('session_id'))} {inline(hit.get('role'))}] {asked}{inline(hit.get('text'))}{again}"
        )
    else:
        line = inline(str({k: v for k, v in hit.items() if k not in ("collection", "id", "score")}))
    if hit.get("may_be_stale"):  # the code it names changed since it was saved (memory.code_links)
        line += f" (may be stale: {inline(hit['may_be_stale'])})"
    if hit.get("branch_note"):  # branch_memory: "show" (memory.branches)
        line += f" ({inline(hit['branch_note'])})"
    elif hit.get("branch") and hit.get("collection") in ("facts", "episodes", "logs"):
        line += f" [on {inline(hit['branch'])}]"
    project = f" [{inline(hit['project'])}]" if hit.get("project") and hit.get("collection") != "offloads" else ""
    conf = f", confidence {hit['confidence']:.2f}" if hit.get("confidence") is not None else ""
    return f"- {line}  ({hit['id']}, {hit['score']:.2f}{conf}){project}"


def render_text(result: "RecallJson") -> str:
    """Results fenced as reference data (a stored text can neither close the fence nor start a line),
    each hit's first line wrapped to the terminal."""
    from contextware.cli.render import paint, wrap
    from contextware.core.fence import fence, inline

    lines = []
    if result.get("degraded"):
        lines.append(paint(f"(degraded: {inline(result['degraded'])})", "yellow"))
    why = render_explanation(result["explanation"]) if result.get("explanation") else ""
    if not result["results"]:
        return "\n".join([*lines, "Nothing relevant in memory.", *([why] if why else [])])
    for hit in result["results"]:
        text = render_hit(hit)
        head, _, rest = text.partition("\n")
        # Code excerpts and file contents keep their lines; the one-line summary wraps.
        lines.append(wrap(head, indent=4, first=0) + (f"\n{rest}" if rest else ""))
    return fence("\n".join(lines)) + (f"\n{why}" if why else "")


def render_explanation(why: "ExplanationJson") -> str:
    """The explanation as a table: one candidate a row (ids and numbers, the labels fenced apart)."""
    from contextware.cli.render import paint, table
    from contextware.core.fence import fence, inline

    def num(value: float | None, rank: int | None = None) -> str:
        text = "-" if value is None else f"{value:.3f}"
        return text + (f" #{rank}" if rank else "")

    rows = [
        {
            "shown": str(c["shown"] or "-"),
            "id": c["id"],
            "cosine": num(c["cosine"], c["cosine_rank"]),
            "bm25": num(c["bm25"], c["bm25_rank"]),
            "fused": num(c["score"]),
            "confidence": num(c["confidence"]),
            "decided by": inline(c["decided_by"]),
            "learned on": inline(c.get("learned_on") or "-"),
        }
        for c in why["candidates"]
    ]
    head = paint(f"Why: {inline(why['verdict'])}", "bold")
    count = f"{len(rows)} of {why['total_candidates']} candidates (gate {why['min_confidence']}, floor {why['floor']}):"
    labels = fence("\n".join(f"- {c['id']}: {inline(c['label'])}" for c in why["candidates"])) if rows else ""
    return "\n".join([head, count, table(rows, list(rows[0])) if rows else "(none)", labels]).rstrip()
