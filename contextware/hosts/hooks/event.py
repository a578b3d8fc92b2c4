"""One host event as the hooks read it (``HookEvent``): Gemini CLI's and Claude Code's JSON on
stdin, the fields the handlers use, typed once at the door.  A missing field, or one of the wrong
type, reads as empty: a host that changes its payload degrades a hook, never breaks a turn.
Also the names of the events the hooks answer, which the hook process reads before it hands an
event on.  Standard library only, and no ``dataclasses`` (with ``inspect``, ~7 ms a process): this
runs on the hooks' warm path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

HOST_KEY = "contextware_host"  # added to the event by `hook.py --host NAME` (``with_host``)

# Every event a handler answers (``handlers.HANDLERS``), Gemini CLI's and Claude Code's.
EVENTS = frozenset(
    {"SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "UserPromptSubmit", "Stop", "PreCompact"}
)
# Events that only save (nothing to add to the turn): a caller may hand them on without waiting.
CAPTURE_EVENTS = frozenset({"AfterAgent", "PreCompress", "Stop", "PreCompact"})


def with_host(stdin: str, host: str | None) -> str:
    """The event with the host named by the hook's ``--host`` folded in (``HOST_KEY``), so that it
    travels with the event wherever the event is handled; unparsable input is left as it is."""
    if not host:
        return stdin
    try:
        payload = json.loads(stdin)
    except (ValueError, RecursionError):
        return stdin
    return json.dumps({**payload, HOST_KEY: host}) if isinstance(payload, dict) else stdin


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


class HookEvent(NamedTuple):
    """``name``: ``hook_event_name`` (SessionStart, BeforeAgent, UserPromptSubmit, AfterAgent, Stop,
    PreCompress, PreCompact); ``host``: who ran the hook when it was named (``--host``, or Gemini
    CLI's variables: ``entry.read_event``), else ''.  ``prompt`` is as the host sent it (Gemini
    CLI's carries earlier hooks' blocks: ``handlers.typed_prompt``); ``answer`` is Gemini CLI's
    ``prompt_response`` or Claude Code's ``last_assistant_message`` (text, or whatever the host
    sent: the handlers keep only text).  ``transcript_path`` is the host's own transcript;
    ``claude_transcript`` is set when a Claude Stop is handled as a turn end."""

    name: str
    session_id: str = ""
    cwd: str = ""
    host: str = ""
    prompt: str = ""
    answer: object = None
    transcript_path: str = ""
    claude_transcript: str = ""
    source: str = ""  # SessionStart: startup, resume or clear

    @classmethod
    def parse(cls, payload: Mapping[str, Any]) -> HookEvent:
        answer = payload.get("prompt_response")
        if answer is None:
            answer = payload.get("last_assistant_message")
        return cls(
            name=_text(payload, "hook_event_name"),
            session_id=_text(payload, "session_id"),
            cwd=_text(payload, "cwd"),
            host=_text(payload, HOST_KEY),
            prompt=_text(payload, "prompt"),
            answer=answer,
            transcript_path=_text(payload, "transcript_path"),
            source=_text(payload, "source"),
        )
