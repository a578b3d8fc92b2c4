"""``sync.py``: keep the offloads index in step with the offload files."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """The offload files (contextware_data/offloads/) are the source of truth; the offloads table
is an index of them.

  check     report drift: missing rows, orphan rows, changed entries, stale cached answers
  rebuild   re-index every offload from the files (replaces the table; restores a damaged one)
  prune     delete rows whose files are gone"""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("action", choices=("check", "rebuild", "prune"), help="check, rebuild or prune")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.offload.sync import sync

    project = open_project(args)
    return sync(project, args.action)


def render_text(result: dict[str, Any]) -> str:
    action = result["action"]
    if action == "rebuild":
        return f"Re-indexed {result['indexed']} offload(s) from the files."
    if action == "prune":
        return f"Pruned {result['pruned']} orphan row(s)."
    if result.get("in_sync"):
        return f"In sync: {result['files']} offload(s) indexed." + (
            f" {result['counts']['stale']} cached answer(s) are stale." if result["counts"]["stale"] else ""
        )
    lines = [f"Drift: {result['files']} file entries, {result['rows']} rows."]
    for key in ("missing", "orphans", "changed", "incomplete", "stale"):
        for item in result.get(key) or []:
            lines.append(f"  {key}: {item.get('file') or item.get('path')} {item.get('reason') or ''}".rstrip())
    if result.get("index_error"):
        lines.append(f"  index: {result['index_error']}")
    if result.get("hint"):
        lines.append(result["hint"])
    return "\n".join(lines)
