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
