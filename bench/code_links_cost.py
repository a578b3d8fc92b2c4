"""What tying memories to code costs (memory.code_links): the may-be-stale check per recall, and
linking per save.

A temporary project: FILES generated source files crawled with the local summariser, FACTS facts
(two thirds naming a file and a symbol), then one file in ten edited and crawled again.  For each of
100 recalls (limit 8) the check recall's present stage runs on every hit is timed on its own
(``stale_flag`` on each hit's row; recall_ms includes it, as recall runs it too), once in a one-shot
process (LanceDB searches) and once with the resident service's in-memory snapshots.  The first check
after the code index changed (and the first of a process) reads the index's state (path, hash and
time per file) once: ``index_state_load_ms``.  Prints one JSON document.

    uv run bench/code_links_cost.py [--files 400] [--facts 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from contextware.memory.results import LinkedRow
    from contextware.storage.schemas import FactRow

TOPICS = ["deploy", "retry", "cache", "billing", "auth", "search", "queue", "logging", "metrics", "storage"]


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered) * 1000, 3),
        "p95": round(ordered[int(len(ordered) * 0.95)] * 1000, 3),
        "max": round(ordered[-1] * 1000, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--facts", type=int, default=300)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cw-code-links-"))
    os.environ["CONTEXTWARE_HOME"] = str(work / "home")
    root = work / "proj"
    for i in range(args.files):
        path = root / f"pkg{i % 20}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}: handles widget case {i}."""\n\n\ndef handler_{i}(x):\n    return x + {i}\n')

    from contextware.codeindex.indexer import crawl
    from contextware.memory import records
    from contextware.memory.code_links import _cache, link_row, stale_flag
    from contextware.memory.recall import parse_query, recall
    from contextware.storage import table_search
    from contextware.storage.project import Project

    project = Project.open(root)
    crawl(project, summarizer="local")
    sys.stderr.write(f"crawled {args.files} files\n")
    save_link: list[float] = []
    for i in range(args.facts):
        topic = TOPICS[i % len(TOPICS)]
        named = f" See pkg{i % 20}/mod{i % args.files}.py and `handler_{(i * 7) % args.files}`." if i % 3 else ""
        row: "FactRow" = {"text": f"The {topic} rule {i}: widgets of kind {i} go through the {topic} path.{named}"}
        started = time.perf_counter()
        link_row(project, "facts", row)
        save_link.append(time.perf_counter() - started)
        records.save_fact(project, row["text"], kind="decision")
    for i in range(0, args.files, 10):
        path = root / f"pkg{i % 20}" / f"mod{i}.py"
        path.write_text(path.read_text() + "\n# changed\n")
    crawl(project, summarizer="local")
    sys.stderr.write(f"saved {args.facts} facts, edited {args.files // 10} files\n")
    questions = [f"how are {t} widgets of kind {k} handled?" for t in TOPICS for k in (3, 17, 42, 120, 199)] * 2

    probe: "FactRow" = {"code_links": ["pkg0/mod0.py"], "code_hashes": ["?"]}

    def run() -> dict[str, Any]:
        loads = []
        for _ in range(5):  # what the first check after a change of the code index costs
            _cache.clear()
            started = time.perf_counter()
            stale_flag(project, "facts", probe)
            loads.append(time.perf_counter() - started)
        checks: list[float] = []
        totals: list[float] = []
        linked = flagged = 0
        for q in questions:
            started = time.perf_counter()
            hits = recall(project, parse_query(q, limit=8)).hits
            totals.append(time.perf_counter() - started)
            started = time.perf_counter()
            flags = [stale_flag(project, h.collection, cast("LinkedRow", h.row)) for h in hits]
            checks.append(time.perf_counter() - started)
            linked += sum(1 for h in hits if h.row.get("code_links"))
            flagged += sum(1 for f in flags if f)
        return {
            "recall_ms": _ms(totals),
            "check_ms_per_recall": _ms(checks),
            "index_state_load_ms": _ms(loads),
            "linked_hits": linked,
            "flagged_hits": flagged,
        }

    one_shot = run()
    table_search.keep_snapshots()
    run()  # load the snapshots
    warm = run()
    print(
        json.dumps(
            {
                "files": args.files,
                "facts": args.facts,
                "recalls": len(questions),
                "one_shot": one_shot,
                "snapshots": warm,
                "link_at_save_ms": _ms(save_link[1:]),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
