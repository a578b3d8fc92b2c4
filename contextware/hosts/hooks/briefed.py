"""Which sessions have had their briefing, so that each gets it once: at SessionStart
(``handlers.session_start``, every host), or, when that gave nothing, on the session's first
BeforeAgent (Gemini CLI, whose prompt hook context is appended after the user's words).

One small text file in the data dir, ``briefed_sessions``: one session id a line, the newest last,
at most ``KEEP`` lines.  Standard library only: this runs on the prompt hook's path.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE = "briefed_sessions"
KEEP = 500
MAX_ID = 200  # a session id longer than this is kept by its head (ids are short uuids)


def _key(session_id: str) -> str:
    return "".join(c for c in session_id if c.isprintable() and not c.isspace())[:MAX_ID]


def _read(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(KEEP * (MAX_ID + 1) * 2).splitlines()
    except OSError:
        return []


def was_briefed(data_dir: Path, session_id: str) -> bool:
    """Whether this session already received its briefing (an unknown session id never has)."""
    key = _key(session_id)
    return bool(key) and key in _read(data_dir / FILE)


def mark_briefed(data_dir: Path, session_id: str) -> None:
    """Record the session as briefed (rewritten whole, through a temporary file, within ``KEEP``)."""
    key = _key(session_id)
    if not key or not data_dir.is_dir():
        return
    path = data_dir / FILE
    lines = [*[x for x in _read(path) if x and x != key][-(KEEP - 1) :], key]
    tmp = path.with_name(f".{FILE}.{os.getpid()}")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
