"""``watch.py``: keep the code index fresh while files change."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Watch the project and keep the code index fresh: changed files are re-indexed, deleted
files removed, with the same ignore rules as crawl_project.py. A burst of changes (an editor's save,
a checkout) is debounced into one re-index. One line per action goes to stderr; Ctrl-C or SIGTERM
stops it, and the totals are printed as JSON. Run crawl_project.py first for the initial index."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("--summarizer", default=None, help="auto (default), gemini or local")
    p.add_argument(
        "--debounce-ms", type=int, default=1600, help="longest wait to group a burst of changes (default 1600)"
    )
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.codeindex.watch import watch
    from contextware.core.errors import UsageError

    if not 50 <= args.debounce_ms <= 60_000:
        raise UsageError("--debounce-ms must be between 50 and 60000.", code="bad_debounce")
    project = open_project(args)
    return watch(project, summarizer=str(args.summarizer or project.config.summarizer), debounce_ms=args.debounce_ms)
