"""The code index across a checkout: two branches that differ in 50 of 1,000 files.

    uv run bench/branch_switch.py                  # 1,000 files, 50 differ
    uv run bench/branch_switch.py --files 200 --differ 10

A real git repository gets FILES small Python modules on ``main`` and a branch ``feature`` that
changes DIFFER of them.  The index is crawled (local summariser) on main, then on feature (both
visited once), then main -> feature -> main again: each crawl's wall time, how many files it
summarised and how many summaries it re-used (``codeindex.by_content``).  Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def module(i: int, side: str) -> str:
    return (
        f'"""Part {i} of the {side} pipeline: parsing, checking and storing its records."""\n\n\n'
        f"class Record{i}:\n    def __init__(self, value):\n        self.value = value\n\n\n"
        f"def parse_{side}_{i}(text):\n    return [Record{i}(v) for v in text.split(',')]\n\n\n"
        f"def check_{i}(records):\n    return all(r.value for r in records)\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--differ", type=int, default=50)
    args = parser.parse_args()

    from contextware.codeindex.indexer import crawl
    from contextware.storage.project import Project

    root = Path(tempfile.mkdtemp(prefix="cw-switch-")) / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "bench")
    git(root, "config", "user.email", "bench@example.com")
    for i in range(args.files):
        (root / "src" / f"part{i}.py").write_text(module(i, "main"))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "main")
    git(root, "checkout", "-q", "-b", "feature")
    for i in range(args.differ):
        (root / "src" / f"part{i}.py").write_text(module(i, "feature"))
    git(root, "commit", "-q", "-am", "feature")
    git(root, "checkout", "-q", "main")

    project = Project.open(root)
    steps = []
    for label, branch in (
        ("main, first", "main"),
        ("feature, first", "feature"),
        ("main again", "main"),
        ("feature again", "feature"),
        ("main again", "main"),
    ):
        git(root, "checkout", "-q", branch)
        print(f"crawling {label} ...", file=sys.stderr)
        t0 = time.perf_counter()
        out = crawl(project, summarizer="local")
        steps.append(
            {
                "step": label,
                "seconds": round(time.perf_counter() - t0, 2),
                "summarised": sum(out["summarizers"].values()),
                "reused": out.get("reused_summaries", 0),
                "indexed": out["indexed"],
            }
        )
    print(json.dumps({"files": args.files, "differ": args.differ, "steps": steps}, indent=2))


if __name__ == "__main__":
    main()
