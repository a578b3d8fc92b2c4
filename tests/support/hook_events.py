"""The JSON that Gemini CLI sends to a hook for each event, and the context a hook answers with."""

from __future__ import annotations

import json
from pathlib import Path


def event(name: str, cwd: Path, **extra: str) -> str:
    payload = {
        "session_id": "sess_1",
        "transcript_path": str(cwd / "missing.json"),
        "cwd": str(cwd),
        "hook_event_name": name,
        "timestamp": "2026-11-21T07:00:00.000Z",
        **extra,
    }
    return json.dumps(payload)


def context_of(out: str, name: str) -> str:
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == name
    return data["hookSpecificOutput"]["additionalContext"]


# Claude Code's transcript lines
def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps(
        {"type": kind, "message": {"role": kind, "content": content}, "sessionId": "s-1", "uuid": "u", **extra}
    )


def write_transcript(path: Path, prompt: str, answer: str) -> Path:
    """A Claude Code transcript (JSON Lines) whose last turn is ``prompt`` and ``answer``, with the
    lines around it that the reader must skip (tool calls and results, meta lines, a half-written line)."""
    lines = [
        json.dumps({"type": "queue-operation", "operation": "enqueue", "content": "older prompt"}),
        _line("user", "an older prompt"),
        _line("assistant", [{"type": "text", "text": "an older answer"}]),
        _line("user", [{"type": "text", "text": prompt}]),
        json.dumps({"type": "attachment", "attachment": {"type": "hook_additional_context", "content": ["x"]}}),
        _line("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]),
        _line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "README.md"}]),
        _line("user", "<local-command-stdout>ok</local-command-stdout>", isMeta=True),
        _line("assistant", [{"type": "thinking", "thinking": "..."}, {"type": "text", "text": answer}]),
        '{"type": "user", "message": {"role": "user", "content": "half a li',  # being written
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
