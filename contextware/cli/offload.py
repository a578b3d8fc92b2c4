"""``offload.py``: hand a research task to Gemini and get back only a summary."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from contextware.cli import add_common, new_parser, open_project

DESCRIPTION = """Hand a context-heavy research task to Gemini (1M-token context) and get back only a
summary; the full answer is saved under contextware_data/offloads/ and indexed for recall.

  offload.py --prompt P [--files a,b] [--include-dirs d,e]     one-shot, cached
  offload.py --session NAME --prompt P                        a named multi-turn session
  offload.py --feature F --prompt P                           the feature's current session
  offload.py --resume-id ID --prompt P                        continue any Gemini session
  offload.py sessions list | show NAME | delete NAME

Piped standard input is extra context. A cached answer is reused while its files are unchanged and it
is younger than cache_ttl_days (config.json); --refresh asks again."""

STDIN_WAIT_S = 2.0


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument(
        "words",
        nargs="*",
        metavar="sessions ACTION [NAME]",
        help="manage sessions: sessions list, sessions show NAME, sessions delete NAME",
    )
    p.add_argument("--prompt", "-p", help="the research question or task for Gemini")
    p.add_argument(
        "--files",
        metavar="F,G",
        action="append",
        help="comma-separated files whose content Gemini reads (sent on its standard input)",
    )
    p.add_argument(
        "--include-dirs",
        metavar="A,B",
        action="append",
        help="comma-separated folders Gemini may read itself (--include-directories)",
    )
    p.add_argument("--model", "-m", help="Gemini model for the research (default: offload_model in config.json)")
    p.add_argument(
        "--topic", "--topics", dest="topic", metavar="T", help="topic(s) to file the answer under, comma-separated"
    )
    p.add_argument("--refresh", action="store_true", help="ignore a cached answer and ask Gemini again")
    s = p.add_argument_group("sessions")
    s.add_argument("--session", metavar="NAME", help="create or continue the named multi-turn session")
    s.add_argument(
        "--feature",
        metavar="F",
        help="reuse the feature's current Gemini session (its first prompt carries [Feature: F])",
    )
    s.add_argument(
        "--resume-id",
        metavar="ID",
        help="continue this existing Gemini session by its id (overrides --session/--feature session choice)",
    )
    s.add_argument(
        "--keep-gemini", action="store_true", help="sessions delete: keep the Gemini CLI sessions, delete only ours"
    )
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


def handle(args: argparse.Namespace) -> dict[str, Any]:
    from contextware.core.errors import UsageError

    words = args.words
    if words:
        if words[0] != "sessions" or len(words) > 3:
            raise UsageError(
                f"Unknown command {' '.join(words)!r}: use --prompt P, or sessions list|show NAME|delete NAME.",
                code="usage",
            )
        given = [
            f
            for f, v in (
                ("--prompt", args.prompt),
                ("--files", args.files),
                ("--include-dirs", args.include_dirs),
                ("--model", args.model),
                ("--topic", args.topic),
                ("--refresh", args.refresh),
                ("--session", args.session),
                ("--feature", args.feature),
                ("--resume-id", args.resume_id),
            )
            if v
        ]
        if given:
            raise UsageError(
                f"{', '.join(given)} does not apply to sessions {' '.join(words[1:2])}.", code="bad_option"
            )
        if len(words) < 2:
            raise UsageError("sessions needs an action: list, show NAME or delete NAME.", code="usage")
        from contextware.offload.run import sessions_command

        return sessions_command(
            open_project(args), words[1], words[2] if len(words) > 2 else None, keep_gemini=args.keep_gemini
        )
    if args.keep_gemini:
        raise UsageError("--keep-gemini applies to sessions delete only.", code="bad_option")
    if args.prompt is None:
        raise UsageError(
            "Give the research task with --prompt (or use sessions list|show|delete).", code="empty_prompt"
        )
    from contextware.offload.run import offload

    return offload(
        open_project(args),
        args.prompt,
        files=args.files,
        include_dirs=args.include_dirs,
        model=args.model,
        topic=args.topic,
        refresh=args.refresh,
        stdin_text=_piped_stdin(),
        session=args.session,
        feature=args.feature,
        resume_id=args.resume_id,
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
