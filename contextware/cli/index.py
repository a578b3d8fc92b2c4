"""``index_file.py``: (re)index a few files, e.g. in the background after editing them."""

from __future__ import annotations

import argparse
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.crawl import render_text  # noqa: F401 - same report as a crawl

DESCRIPTION = """(Re)index the given files in the code index. Safe to run many at once in the background
(`uv run scripts/index_file.py src/app.py &`). Binary, too large (over max_file_bytes, default 1 MB),
ignored and out-of-project files are skipped and reported; a given file that no longer exists is
removed from the index."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("paths", nargs="+", metavar="PATH", help="files to index (relative to the working directory)")
    p.add_argument("--summarizer", default=None, help="auto (default), gemini or local")
    p.add_argument("--force", action="store_true", help="re-index even if the content is unchanged")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from contextware.codeindex.indexer import index_files

    project = open_project(args)
    return index_files(
        project, args.paths, summarizer=str(args.summarizer or project.config["summarizer"]), force=args.force
    )
