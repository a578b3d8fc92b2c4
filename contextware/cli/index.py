"""``index_file.py``: (re)index a few files, e.g. in the background after editing them."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.crawl import render_text  # noqa: F401 - same report as a crawl
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.index import INDEX

DESCRIPTION = INDEX.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, INDEX)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    values = values_of(args, INDEX)
    request = INDEX.check(values)  # a bad --summarizer is refused before the project opens
    return INDEX.run(open_project(args), request, values)
