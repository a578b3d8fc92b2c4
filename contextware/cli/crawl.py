"""``crawl_project.py``: build or refresh the code index of the whole project."""

from __future__ import annotations

import argparse
from typing import Any

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Index the project's source files: a summary and the symbols of each file, searchable with
`recall.py --scope code`.

In a git repository the files are the tracked ones plus untracked files that are not ignored;
elsewhere .gitignore rules apply; .contextwareignore (gitignore syntax) excludes more. The data dir,
.git, virtualenvs, node_modules, build outputs and lock files are never indexed. Files whose mtime and
size (then content hash) are unchanged are skipped; rows of deleted files are removed. An interrupted
crawl keeps what it finished: run it again to continue."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("paths", nargs="*", metavar="PATH", help="only these files or folders (default: the whole project)")
    p.add_argument(
        "--summarizer",
        default=None,
        help="auto (default: Gemini when installed and authenticated, else local, per file), gemini or local",
    )
    p.add_argument(
        "--jobs", type=int, help="files (or Gemini batches) summarised in parallel (default: one per CPU, at most 8)"
    )
    p.add_argument("--force", action="store_true", help="re-index every file even if it is unchanged")
    p.add_argument("--upgrade", action="store_true", help="replace local summaries with Gemini ones")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from contextware.codeindex.indexer import crawl

    project = open_project(args)
    return crawl(
        project,
        args.paths or None,
        summarizer=str(args.summarizer or project.config["summarizer"]),
        jobs=args.jobs,
        force=args.force,
        upgrade=args.upgrade,
        progress=True,
    )


def render_text(result: dict[str, Any]) -> str:
    lines = [
        f"scanned {result['scanned']}, indexed {result['indexed']}, unchanged {result['unchanged']}, "
        f"removed {result['removed']}, skipped {result['skipped']}, failed {result['failed']} "
        f"in {result['elapsed_s']:.1f} s",
    ]
    if result.get("skipped_reasons"):
        lines.append("skipped: " + ", ".join(f"{r} {n}" for r, n in result["skipped_reasons"].items()))
    lines += [f"failed: {f['path']}: {f['error']}" for f in result.get("failures", [])]
    if result.get("gemini_error"):
        lines.append(f"gemini: {result['gemini_error']} ({result.get('gemini_fallbacks', 0)} files summarised locally)")
    return "\n".join(lines)
