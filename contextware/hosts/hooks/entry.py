"""The hook process (``scripts/hook.py``, run by the host's settings with the environment's Python).

Host-agnostic: it reads one event on stdin and leaves the event -> handler mapping to ``handlers``.
Its warm path imports only the standard library: it asks the project's resident service, which
runs ``handlers.run_hook`` on a warm database and model, and prints the answer.

- Events that add context (SessionStart, BeforeAgent, ...) wait for the service's answer, starting
  the service when none runs; when no service can answer they run in this process, as before.
- Capture events (``event.CAPTURE_EVENTS``: AfterAgent, PreCompress, Stop, PreCompact) never
  wait: the event is appended to the data dir's spool and the service is poked (or started) to
  save it; the hook returns at once.
- ``CONTEXTWARE_SERVICE=off``, a project without a data dir yet, or a spool that cannot be written
  (read-only data dir) run everything in this process.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.settings import Settings, current_settings
from contextware.hosts.hooks.event import CAPTURE_EVENTS, EVENTS, with_host

if TYPE_CHECKING:
    from contextware.service.messages import ServiceRequest

HOOK_TIMEOUT_S = 30.0
MAX_EVENT_BYTES = 64 * 1024 * 1024  # an event read from stdin (a turn is cut far below: hook_turn_chars)

USAGE = """usage: hook.py [--host gemini|claude|claude-plugin] < EVENT_JSON

Gemini CLI and Claude Code hook for Contextware: reads one event (SessionStart, BeforeAgent,
AfterAgent, PreCompress; Claude Code's UserPromptSubmit, Stop, PreCompact) as JSON on stdin and
prints the hook output, or nothing. --host names the tools the session-start note points to.
Always exits 0; errors go to contextware_data/hooks.log. Installed by scripts/install.py."""


def read_event(settings: Settings | None = None) -> str:
    """The event on standard input with the host named by ``--host`` folded in (see ``event.with_host``);
    ``settings``: the hook process's (by default read now)."""
    try:
        raw = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
        # over the limit: cut, so unparsable, so only noted in hooks.log (the turn goes on)
        data = raw[:MAX_EVENT_BYTES].decode("utf-8", errors="replace")
    except Exception:  # noqa: BLE001
        data = ""
    args = sys.argv[1:]
    named = args[args.index("--host") + 1] if "--host" in args[:-1] else None
    # Gemini CLI's hooks are installed without --host; it sets its own variables for every hook it
    # runs (Settings.gemini_hook), which an event piped in by hand lacks.
    gemini = (settings or current_settings()).gemini_hook
    return with_host(data, named or ("gemini" if gemini else None))


def replay(entry: dict[str, Any], settings: Settings | None = None) -> None:
    """Save one spooled event as the hook that spooled it would have (never raises): with the
    settings it sent (``settings``, the drainer's own, by default this process's, fills in what it
    did not)."""
    from contextware.service.context import caller_context

    stdin = entry.get("stdin")
    if not isinstance(stdin, str):
        return
    env = entry.get("env")
    settings = settings or current_settings()
    with caller_context(entry.get("cwd")):
        _run_hook(stdin, settings.for_caller(env) if isinstance(env, dict) else settings)


def _run_hook(data: str, settings: Settings) -> str:
    """``handlers.run_hook`` in this process: imported only here, since the warm path hands the event
    to the service."""
    from contextware.hosts.hooks.handlers import run_hook

    return run_hook(data, settings)


def _in_process(data: str, data_dir: Path | None, event: str, settings: Settings) -> str:
    if event in CAPTURE_EVENTS and data_dir is not None and data_dir.is_dir():
        from contextware.service import spool

        try:  # turns a missing service left behind, saved before this one
            spool.drain(data_dir, lambda entry: replay(entry, settings))
        except OSError:
            pass
    return _run_hook(data, settings)


def answer(data: str, settings: Settings | None = None) -> str:
    """The hook's stdout for one event (empty when there is nothing to add).  Never raises.
    ``settings``: the hook process's (``main``), by default read here."""

    settings = settings or current_settings()
    try:
        payload = json.loads(data) if data.strip() else {}
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        return _run_hook(data, settings)  # reports the bad input in hooks.log
    event = str(payload.get("hook_event_name") or "")
    if event not in EVENTS:
        return ""
    from contextware.hosts.hooks.once import first_answer, release

    if not first_answer(data, event, settings.temp_dir):
        return ""  # a second install of this host runs us for the same event: answered once already
    out = _answer(data, payload, event, settings)
    if not out:
        release(data, event, settings.temp_dir)  # nothing said: the same event sent again later is answered
    return out


def _answer(data: str, payload: dict[str, Any], event: str, settings: Settings) -> str:
    from contextware.service import client, spool

    cwd = payload.get("cwd")
    if isinstance(cwd, str) and os.path.isdir(cwd):
        os.chdir(cwd)  # the project is resolved from here, as a command run there would
    data_dir = client.data_dir_for(None, settings)
    if client.mode(settings) == "off" or data_dir is None or not data_dir.is_dir():
        return _in_process(data, data_dir, event, settings)
    env = client.forwarded_env(settings)
    here = os.getcwd()
    if event in CAPTURE_EVENTS:
        try:
            spool.append(data_dir, {"id": os.urandom(8).hex(), "stdin": data, "cwd": here, "env": env})
        except OSError:
            return _in_process(data, data_dir, event, settings)
        ep = client.endpoint(data_dir, settings)
        try:
            try:
                client.exchange(ep, {"op": "drain"}, timeout=5.0)  # acknowledged at once, saved afterwards
            except client.Unavailable as exc:
                if isinstance(exc, client.VersionMismatch):
                    client.replace_older(ep, exc)  # after an upgrade, once; a newer one: Unavailable
                client.start_detached(ep)  # it drains the spool as it starts
        except (client.Unavailable, client.ServiceUnsafe):
            return _in_process("", data_dir, event, settings)  # no service can be had: save the spool here
        return ""
    try:
        message: ServiceRequest = {"op": "hook", "stdin": data, "cwd": here, "env": env}
        reply = client.call(data_dir, message, HOOK_TIMEOUT_S, settings)
    except client.Unavailable:
        return _run_hook(data, settings)
    return str(reply.get("stdout") or "") if reply.get("ok") else _run_hook(data, settings)


def main() -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        sys.stdout.write(USAGE + "\n")
        raise SystemExit(0)
    if "--version" in sys.argv[1:]:
        from contextware import __version__

        sys.stdout.write(f"contextware {__version__}\n")
        raise SystemExit(0)
    try:
        settings = Settings.from_env(os.environ)  # the hook's composition root: the environment read once
        out = answer(read_event(settings), settings)
    except Exception:  # noqa: BLE001 - a memory hook must never break the turn
        out = ""
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    raise SystemExit(0)


if __name__ == "__main__":  # ``python -I -m contextware.hosts.hooks.entry``: an installed package's hooks
    main()
