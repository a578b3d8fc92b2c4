"""``--format text``: how results are shown to people.

Aligned columns, text wrapped to the terminal's width, and colour only when stdout is a terminal and
``NO_COLOR`` is unset (https://no-color.org).  ``generic`` renders any result, so no command ever
falls back to JSON in text mode; commands with a better view define ``render_text`` with these helpers.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence

_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}
MAX_WIDTH = 120


def use_color() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, *styles: str) -> str:
    """``text`` in the given styles (bold, dim, red, green, yellow, blue, cyan) when colour is on."""
    if not styles or not use_color():
        return text
    return f"\x1b[{';'.join(_STYLES[s] for s in styles)}m{text}\x1b[0m"


def width() -> int:
    return max(40, min(MAX_WIDTH, shutil.get_terminal_size((100, 24)).columns))


def wrap(text: str, indent: int = 0, first: int | None = None, columns: int | None = None) -> str:
    """``text`` wrapped to the terminal, each paragraph kept; ``first`` is the first line's indent."""
    total = columns or width()
    out = []
    for i, para in enumerate(str(text).splitlines() or [""]):
        lead = " " * (indent if (i or first is None) else first)
        out.append(
            textwrap.fill(para, total, initial_indent=lead, subsequent_indent=" " * indent, break_on_hyphens=False)
            or lead
        )
    return "\n".join(out)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return " ".join(str(value).split())


def table(rows: Sequence[Mapping[str, object]], columns: Sequence[str], headers: Sequence[str] | None = None) -> str:
    """Rows as aligned columns under upper-case headers; the last column takes the remaining width
    and wraps under itself; numbers are right-aligned."""
    if not rows:
        return ""
    heads = [h.upper() for h in (headers or columns)]
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    numeric = [
        all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows) for c in columns
    ]
    widths = [max(len(heads[i]), *(len(row[i]) for row in cells)) for i in range(len(columns) - 1)]
    lead = sum(w + 2 for w in widths)
    last = max(20, width() - lead)

    def line(values: Sequence[str], style: tuple[str, ...] = ()) -> str:
        parts = [v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values[:-1])]
        tail = textwrap.wrap(values[-1], last, break_on_hyphens=False) or [""]
        first = "  ".join([*parts, tail[0]]).rstrip()
        rest = [" " * lead + t for t in tail[1:]]
        return "\n".join([paint(first, *style) if style else first, *rest])

    return "\n".join([line(heads, ("bold",)), *(line(row) for row in cells)])


def fields(record: Mapping[str, object], keys: Sequence[str] | None = None, indent: int = 0) -> str:
    """``key  value`` lines, keys aligned, long values wrapped under themselves; nested objects
    indented below their key."""
    keys = [k for k in (keys or list(record)) if k in record]
    if not keys:
        return ""
    pad = max(len(k) for k in keys) + 2
    out = []
    for key in keys:
        value = record[key]
        label = " " * indent + paint(key.ljust(pad), "dim")
        if isinstance(value, Mapping) and value:
            out.append(" " * indent + paint(key, "dim"))
            out.append(fields(value, indent=indent + 2))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            out.append(" " * indent + paint(f"{key} ({len(value)})", "dim"))
            out.append(_indent(table(value, _columns(value)), indent + 2))
        else:
            text = wrap(_cell(value), indent=indent + pad, first=0, columns=width())
            out.append(label + text)
    return "\n".join(out)


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def _columns(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """Scalar fields shared by the rows, in first-seen order, the longest text last."""
    cols: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in cols and not isinstance(value, (dict,)):
                cols.append(key)
    long = [c for c in cols if any(isinstance(v := r.get(c), str) and len(v) > 40 for r in rows)]
    return [c for c in cols if c not in long] + long


def generic(result: Mapping[str, object]) -> str:
    """Any result, readable: scalars and nested objects as aligned fields, lists of objects as tables."""
    body = {k: v for k, v in result.items() if k != "ok"}
    return fields(body) or "Done."


def counts_line(counts: Mapping[str, object]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())
