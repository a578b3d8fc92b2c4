"""``contextware merge-driver %O %A %B``: git's merge driver for the memory file (``.gitattributes``
``.contextware/memory.jsonl merge=contextware``, set up by ``contextware install ... --project``)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextware.cli import add_common, new_parser

DESCRIPTION = """Merge three versions of a memory file the way git asks a merge driver to: BASE (%O, the
common ancestor), OURS (%A, where the result is written) and THEIRS (%B). Memories are merged by id: the
later version of each wins (updated_at, a tombstone's deleted_at), a line one side removed and the other
left alone stays removed; the result is written in the file's own order, so there is never a conflict.
Prints nothing and exits 0 on success. A side that is not a memory file exits 1 and leaves OURS with
both sides between conflict markers, which `contextware import` reads. Registered by
`contextware install ... --project` (see docs/memory-file.md)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("base", metavar="BASE", help="the common ancestor's version (%%O)")
    p.add_argument("ours", metavar="OURS", help="our version, overwritten with the result (%%A)")
    p.add_argument("theirs", metavar="THEIRS", help="their version (%%B)")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.core.errors import UsageError
    from contextware.memory.team.memfile import merge_files, with_markers

    base, ours, theirs = Path(args.base), Path(args.ours), Path(args.theirs)
    try:
        return merge_files(base, ours, theirs)
    except UsageError:
        with_markers(ours, theirs)  # git reports a conflict; `import` merges both sides
        raise


def raw_output(result: dict[str, Any]) -> str | None:
    """Git shows a driver's output to the user: a merge that worked says nothing."""
    return ""
