"""``offload.py``: hand a research task to Gemini and get back only a summary."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.offload import OFFLOAD, TASK_INPUTS

DESCRIPTION = OFFLOAD.summary

STDIN_WAIT_S = 2.0


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, OFFLOAD)
    add_common(p)
    return p


def _piped_stdin() -> str | None:
    """Standard input when it is a pipe or a file (never waits on a terminal; waits at most
    STDIN_WAIT_S for a pipe whose writer has not written yet)."""
    from contextware.core.errors import UsageError

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        import select

        ready, _, _ = select.select([sys.stdin], [], [], STDIN_WAIT_S)
        if not ready:
            return None
    elif not stat.S_ISREG(mode):
        return None
    from contextware.core.system import read_limited
    from contextware.offload.sources import MAX_STDIN_BYTES

    data = read_limited(sys.stdin.buffer, MAX_STDIN_BYTES, "Standard input")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("Standard input is not valid UTF-8 text.", code="bad_encoding") from None
    return text if text.strip() else None


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    values = values_of(args, OFFLOAD)
    if words := values["words"]:
        return _sessions(args, values, words)
    request = OFFLOAD.check(values)  # a prompt, and nothing of sessions, before stdin is read
    return OFFLOAD.run(open_project(args), replace(request, context=_piped_stdin()), values)


def _sessions(args: argparse.Namespace, values: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """``sessions list``, ``sessions show NAME``, ``sessions delete NAME [--keep-gemini]``."""
    from contextware.core.errors import UsageError

    if words[0] != "sessions" or len(words) > 3:
        raise UsageError(
            f"Unknown command {' '.join(words)!r}: use --prompt P, or sessions list|show NAME|delete NAME.",
            code="usage",
        )
    given = [p.cli_flag for p in OFFLOAD.cli_params if p.name in TASK_INPUTS and values[p.name]]
    if given:
        raise UsageError(f"{', '.join(given)} does not apply to sessions {' '.join(words[1:2])}.", code="bad_option")
    if len(words) < 2:
        raise UsageError("sessions needs an action: list, show NAME or delete NAME.", code="usage")
    from contextware.offload.run import sessions_command

    return sessions_command(
        open_project(args), words[1], words[2] if len(words) > 2 else None, keep_gemini=bool(values["keep_gemini"])
    )


def render_text(result: dict[str, Any]) -> str:
    if "sessions" in result:
        if not result["sessions"]:
            return "No offload sessions yet."
        return "\n".join(
            f"- {s['name']}{' [feature ' + s['feature'] + ']' if s.get('feature') else ''}: "
            f"{s['turns']} turn(s), {s['tokens']} tokens, updated {s.get('updated_at')}"
            for s in result["sessions"]
        )
    if "session" in result and isinstance(result["session"], dict):
        s = result["session"]
        lines = [
            f"Session {s['name']}: {len(s['turns'])} turn(s), {s['tokens']} tokens.",
            "",
            s.get("summary") or "",
            "",
        ]
        lines += [f"  {t['turn']}. {t['created_at']} {t['prompt']}  -> {t['full_response_path']}" for t in s["turns"]]
        return "\n".join(lines)
    if "deleted" in result:
        return f"Deleted session {result['deleted']} ({result['turns']} turn(s))."
    head = "Cached answer" if result.get("cached") else "New answer"
    if result.get("session"):
        head = f"Session {result['session']}, turn {result['turn']}"
    lines = [
        f"{head} ({result.get('tokens')} tokens). Full response: {result['full_response_path']}",
        "",
        result.get("summary") or "",
    ]
    if result.get("index_error"):
        lines.append(f"\nWarning: {result['index_error']}")
    return "\n".join(lines)
