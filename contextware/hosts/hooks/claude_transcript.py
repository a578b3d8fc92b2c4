"""Reading a Claude Code transcript (``~/.claude/projects/<mangled-cwd>/<session>.jsonl``) for the hooks.

Claude Code's Stop hook gets the answer (``last_assistant_message``) but not the prompt of the turn:
the prompt is the last user message of the transcript.  One JSON object a line; a message line is
``{"type": "user"|"assistant", "message": {"role", "content"}, ...}`` where ``content`` is a string
or a list of blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``, ...).  Tool results also
arrive as ``user`` lines and are not prompts; ``isMeta`` lines (command output, reminders) and
compaction summaries are not either.  Standard library only: this runs on the hook's path.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

MAX_BYTES = 8 * 1024 * 1024  # read at most the transcript's tail
# Claude Code appends to its transcript asynchronously: its Stop hook can start before the file exists
# or before the turn's lines are in it (seen 15-60 ms late on a loaded machine).  How long Stop waits.
TRANSCRIPT_WAIT_S = 2.0


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def read_tail(path: Path, limit: int = MAX_BYTES) -> str:
    """The last ``limit`` bytes of a transcript, decoded; "" for anything but a regular file (a named
    pipe or a device named by the event would block or never end the hook).  Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return ""
        f.seek(max(0, st.st_size - limit))
        return f.read(limit).decode("utf-8", errors="replace")


def _lines(path: Path) -> list[dict[str, Any]]:
    raw = read_tail(path)
    out = []
    for line in raw.split("\n"):  # "\n" only: a message may hold U+2028 raw
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the first line of a tail, one being written, or one nested past the parser's depth
        if isinstance(doc, dict):
            out.append(doc)
    return out


def turns(path: Path) -> list[tuple[str, str]]:
    """(role, text) of the person's prompts ("user") and the model's text answers ("agent"), in order."""
    out: list[tuple[str, str]] = []
    for doc in _lines(path):
        kind = doc.get("type")
        message = doc.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict) or doc.get("isSidechain"):
            continue
        if doc.get("isMeta") or doc.get("isCompactSummary"):
            continue
        content = message.get("content")
        if (
            kind == "user"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        ):
            continue
        text = _text(content).strip()
        if text:
            out.append(("user" if kind == "user" else "agent", text))
    return out


def last_prompt(path: Path) -> str | None:
    """The last prompt the person typed in this transcript, or None."""
    for role, text in reversed(turns(path)):
        if role == "user":
            return text
    return None


def _same(a: str, b: str) -> bool:
    a, b = " ".join(a.split()), " ".join(b.split())
    return bool(a and b) and (a == b or a.endswith(b) or b.endswith(a))


def prompt_of_turn(path: Path, answer: object, wait_s: float = TRANSCRIPT_WAIT_S) -> str | None:
    """The prompt of the turn that ends with ``answer`` (Stop's ``last_assistant_message``): the last
    prompt before that answer in the transcript.  The transcript may not hold the turn yet (or not
    exist yet) when Stop runs: read again until the answer is in it, up to ``wait_s``; then the last
    prompt there is, as when no answer is given.  An older turn's prompt is never taken for this one
    while the transcript is catching up."""
    deadline = time.monotonic() + wait_s
    target = answer if isinstance(answer, str) else ""
    while True:
        try:
            found = turns(path) if path.is_file() else []
        except OSError:
            found = []
        for i in range(len(found) - 1, -1, -1):
            if target and found[i][0] == "agent" and _same(found[i][1], target):
                return next((text for role, text in reversed(found[:i]) if role == "user"), None)
        if not target or path.is_dir() or time.monotonic() >= deadline:
            return next((text for role, text in reversed(found) if role == "user"), None)
        time.sleep(0.02)


MAX_TOOL_BYTES = 512 * 1024  # of the tail read for the last turn's tool calls


def tool_inputs(path: Path) -> list[str]:
    """The inputs of the tool calls (``tool_use`` blocks) after the last prompt the person typed,
    each as JSON; [] when the transcript cannot be read.  Read from the end, back to that prompt."""
    try:
        raw = read_tail(path, MAX_TOOL_BYTES) if path.is_file() else ""
    except OSError:
        return []
    calls: list[str] = []
    for line in reversed(raw.split("\n")):
        if '"tool_use"' not in line and '"user"' not in line:  # neither a call nor a prompt: not parsed
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            continue
        message = doc.get("message") if isinstance(doc, dict) else None
        if not isinstance(message, dict) or doc.get("isSidechain") or doc.get("isMeta"):
            continue
        content = message.get("content")
        if doc.get("type") == "user":
            typed = isinstance(content, str) or (
                isinstance(content, list)
                and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
            )
            if typed and not doc.get("isCompactSummary"):
                break  # the turn's prompt: calls before it were another turn's
            continue
        if doc.get("type") == "assistant" and isinstance(content, list):
            calls.extend(
                json.dumps(b.get("input"), ensure_ascii=False)
                for b in reversed(content)
                if isinstance(b, dict) and b.get("type") == "tool_use"
            )
    return calls[::-1]
