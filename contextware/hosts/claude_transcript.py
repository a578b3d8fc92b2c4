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
from pathlib import Path

MAX_BYTES = 8 * 1024 * 1024  # read at most the transcript's tail


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


def _lines(path: Path) -> list[dict]:
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - MAX_BYTES))
        raw = f.read().decode("utf-8", errors="replace")
    out = []
    for line in raw.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # the first line of a tail, or one being written
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
