"""What ``export`` and ``import`` share: the memory file they name (default
``.contextware/memory.jsonl`` in the project, ``-`` for standard output or input) and one flag."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser

if TYPE_CHECKING:
    from contextware.storage.project import Project


def memory_file_parser(
    prog: str, description: str, names: Sequence[str], role: str, stdio: str, flag: str, flag_help: str
) -> argparse.ArgumentParser:
    """A parser taking the file as ``names`` (an option such as ``--output``, or a positional that
    may be left out), ``flag`` and the common options."""
    from contextware.memory.team.share import DEFAULT_FILE

    p = new_parser(prog, description)
    help_text = f"{role} (default: {DEFAULT_FILE} in the project; - for {stdio})"
    if names[0].startswith("-"):
        p.add_argument(*names, metavar="FILE", help=help_text)
    else:  # a positional that may be left out
        p.add_argument(*names, nargs="?", metavar="FILE", help=help_text)
    p.add_argument(flag, action="store_true", help=flag_help)
    add_common(p)
    return p


def memory_file_path(project: "Project", value: str | None) -> Path | None:
    """The file named on the command line: None for ``-``, the default file when none was named."""
    from contextware.memory.team.share import DEFAULT_FILE

    if value == "-":
        return None
    return Path(value).expanduser().absolute() if value else project.root / DEFAULT_FILE
