"""The docs' lines for each declared behaviour, generated from its declaration: the README's command
table row and ARCHITECTURE.md's "one behaviour, four names" row.  ``uv run python -m
contextware.operations.docs`` rewrites them in place; tests/unit/test_operations.py fails when a
file holds another text (as sqlite-utils' cog does).
"""

from __future__ import annotations

import re
from pathlib import Path

from contextware.operations.registry import OPERATIONS
from contextware.operations.spec import Operation, Param

README = Path(__file__).resolve().parents[2] / "README.md"
ARCHITECTURE = README.with_name("ARCHITECTURE.md")


def _flag(p: Param) -> str:
    if p.positional_only and p.kind is list:
        return f"`{p.positional}...`" if p.required else f"`[{p.positional}...]`"
    if p.positional_only:
        return f"`{p.positional}` or `-` (stdin)" if "standard input" in p.help else f"`{p.positional}`"
    if p.positional:
        return f'`"{p.positional.lower()}"` or `{p.cli_flag}`'
    shown = p.cli_flag
    if p.choices and len(p.choices) <= 3:
        shown += " " + "\\|".join(p.choices)
    elif p.metavar and p.kind is not bool:
        shown += " " + p.metavar.replace("|", "\\|")
    return f"`{shown}`"


def readme_row(op: Operation) -> str:
    """``| `contextware NAME` | `scripts/SCRIPT.py` | what it does (every flag) |``."""
    flags = ", ".join(_flag(p) for p in op.cli_params)
    return f"| `contextware {op.name}` | `scripts/{op.script}.py` | {op.doc} ({flags}) |"


def architecture_row(op: Operation) -> str:
    """``| what it does | `SCRIPT.py` | `NAME` | `TOOL` | `FUNCTION` |``."""
    what = op.title[0].lower() + op.title[1:]
    script = f"{op.script}.py" + (f" {op.subcommand}" if op.subcommand else "")
    return f"| {what} | `{script}` | `{op.name}` | `{op.tool}` | `{op.function}` |"


def _replace_rows(text: str, pattern: str, row: str) -> str:
    row = row.replace("\\", "\\\\")  # a replacement string: its backslashes escaped
    return re.compile(pattern, re.M).sub(row, text, count=1)


def with_rows(text: str) -> str:
    """``text`` (the README) with each declared command's row replaced by its generated one (a
    command of subcommands, such as ``memory``, keeps its written row)."""
    for op in OPERATIONS.values():
        if op.subcommand:
            continue
        text = _replace_rows(text, rf"^\| `contextware {re.escape(op.name)}` \|.*$", readme_row(op))
    return text


def with_architecture_rows(text: str) -> str:
    """``text`` (ARCHITECTURE.md) with each declared behaviour's row (found by its command)
    replaced by its generated one."""
    for op in OPERATIONS.values():
        text = _replace_rows(text, rf"^\|[^|\n]*\|[^|\n]*\| `{re.escape(op.name)}` \|.*$", architecture_row(op))
    return text


if __name__ == "__main__":
    for path, rewrite in ((README, with_rows), (ARCHITECTURE, with_architecture_rows)):
        path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path}")
