"""``recall.py``: search the project's memory."""

from __future__ import annotations

import argparse

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Search the project's memory with a question in plain words.

Retrieval is hybrid (meaning plus exact words); each result carries a confidence (0-1) combined
from several signals. A question with no answer in memory returns "answerable": false and no results
rather than the nearest junk. Superseded facts are hidden unless --include-superseded."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("question", nargs="?", metavar="QUESTION", help='the question, e.g. "how do we run the tests?"')
    p.add_argument("--query", "-q", help="the question (same as QUESTION)")
    p.add_argument("--scope", default="all", help="all (default), memory (facts), episodes, logs, code or offloads")
    p.add_argument("--limit", type=int, default=5, help="most results to return (default 5)")
    p.add_argument(
        "--mode",
        default="summary",
        help="summary (default: long texts shortened) or exact (full texts; code results carry their files' content)",
    )
    p.add_argument(
        "--max-chars",
        type=int,
        metavar="N",
        help="exact mode: budget for file content over all code results (default 20000); a file too large gets its most relevant line ranges",
    )
    p.add_argument(
        "--refresh-stale",
        action="store_true",
        help="re-index code results whose file changed since it was indexed, then answer",
    )
    p.add_argument(
        "--since", metavar="DATE", help="only memories saved since DATE (YYYY-MM-DD, ISO 8601, or an age: 7d, 12h)"
    )
    p.add_argument("--topic", help="only facts and episodes with this topic")
    p.add_argument("--kind", help="only facts of this kind")
    p.add_argument("--result", help="only episodes with this result: success, failure or partial")
    p.add_argument("--category", help="only episodes of this category")
    p.add_argument(
        "--min-confidence",
        type=float,
        metavar="C",
        help="answer only when the best result's confidence (0-1) reaches C, else answerable: false and no results (default: recall_min_confidence in config.json, 0.15); 0 turns the gate off",
    )
    p.add_argument("--include-superseded", action="store_true", help="also return facts that were superseded")
    p.add_argument(
        "--explain",
        action="store_true",
        help="also say why: each candidate's cosine and BM25 rank and score, fused score, confidence and its signals, and which side of the gate it fell",
    )
    p.add_argument("--source", metavar="PATH", help="only offloads whose sources include this file or folder")
    p.add_argument("--session", metavar="NAME", help="only offloads of this named or feature session")
    p.add_argument(
        "--global",
        dest="global_",
        action="store_true",
        help="search every project registered on this machine; each result names its project",
    )
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.errors import UsageError
    from contextware.memory.recall import parse_query, recall, recall_refreshing_stale

    if args.question is not None and args.query is not None:
        raise UsageError("Give the question once: as QUESTION or with --query, not both.", code="usage")
    if args.question is None and args.query is None:
        raise UsageError('Give a question: recall "how do we run the tests?" (or --query).', code="usage")
    # Checked before the model loads: exiting under its loading thread can abort.
    query = parse_query(
        args.question if args.question is not None else args.query,
        scope=args.scope,
        limit=args.limit,
        mode=args.mode,
        since=args.since,
        topic=args.topic,
        kind=args.kind,
        result=args.result,
        category=args.category,
        include_superseded=args.include_superseded,
        max_chars=args.max_chars,
        source=args.source,
        session=args.session,
        all_projects=args.global_,
        min_confidence=args.min_confidence,
    )
    from contextware.storage.embeddings import preload_in_background

    project = open_project(args)
    preload_in_background(project.embedder)
    run = recall_refreshing_stale if args.refresh_stale else recall
    return run(project, query, explain=args.explain).to_dict()


def render_hit(hit: dict) -> str:
    """One result as text: stored texts on one line (``inline``), file content indented (``block``)."""
    from contextware.fence import block, inline

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
    project = f" [{inline(hit['project'])}]" if hit.get("project") and hit.get("collection") != "offloads" else ""
    conf = f", confidence {hit['confidence']:.2f}" if hit.get("confidence") is not None else ""
    return f"- {line}  ({hit['id']}, {hit['score']:.2f}{conf}){project}"


def render_text(result: dict) -> str:
    """Results fenced as reference data (a stored text can neither close the fence nor start a line),
    each hit's first line wrapped to the terminal."""
    from contextware.cli.render import paint, wrap
    from contextware.fence import fence, inline

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


def render_explanation(why: dict) -> str:
    """The explanation as a table: one candidate a row (ids and numbers, the labels fenced apart)."""
    from contextware.cli.render import paint, table
    from contextware.fence import fence, inline

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
        }
        for c in why["candidates"]
    ]
    head = paint(f"Why: {inline(why['verdict'])}", "bold")
    count = f"{len(rows)} of {why['total_candidates']} candidates (gate {why['min_confidence']}, floor {why['floor']}):"
    labels = fence("\n".join(f"- {c['id']}: {inline(c['label'])}" for c in why["candidates"])) if rows else ""
    return "\n".join([head, count, table(rows, list(rows[0])) if rows else "(none)", labels]).rstrip()
