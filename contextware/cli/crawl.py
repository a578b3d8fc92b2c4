"""``crawl_project.py``: build or refresh the code index of the whole project."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.crawl import CRAWL

DESCRIPTION = CRAWL.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, CRAWL)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    values = values_of(args, CRAWL)
    request = replace(CRAWL.check(values), progress=True)  # progress on standard error
    return CRAWL.run(open_project(args), request, values)


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
