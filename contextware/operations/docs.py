"""The docs' lines for each declared behaviour, generated from its declaration: the README's command
table row.  ``uv run python -m contextware.operations.docs`` rewrites them in place;
tests/unit/test_operations.py fails when the README holds another text (as sqlite-utils' cog does).
"""

from __future__ import annotations

import re
from pathlib import Path

from contextware.operations.registry import OPERATIONS
from contextware.operations.spec import Operation, Param

README = Path(__file__).resolve().parents[2] / "README.md"


def _flag(p: Param) -> str:
    if p.positional_only:
        return f"`{p.positional}` or `-` (stdin)" if "standard input" in p.help else f"`{p.positional}`"
    if p.positional:
        return f'`"{p.positional.lower()}"` or `{p.cli_flag}`'
    shown = p.cli_flag
    if p.choices and len(p.choices) <= 3:
        shown += " " + "\\|".join(p.choices)
    elif p.metavar and p.kind is not bool:
        shown += f" {p.metavar}"
    return f"`{shown}`"


def readme_row(op: Operation) -> str:
    """``| `contextware NAME` | `scripts/SCRIPT.py` | what it does (every flag) |``."""
    flags = ", ".join(_flag(p) for p in op.cli_params)
    return f"| `contextware {op.name}` | `scripts/{op.script}.py` | {op.doc} ({flags}) |"


def with_rows(text: str) -> str:
    """``text`` (the README) with each declared behaviour's row replaced by its generated one."""
    for op in OPERATIONS.values():
        pattern = re.compile(rf"^\| `contextware {re.escape(op.name)}` \|.*$", re.M)
        row = readme_row(op).replace("\\", "\\\\")  # a replacement string: its backslashes escaped
        text = pattern.sub(row, text, count=1)
    return text


if __name__ == "__main__":
    README.write_text(with_rows(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {README}")
