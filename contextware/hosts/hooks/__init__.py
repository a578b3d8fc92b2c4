"""Hooks: what Gemini CLI and Claude Code run on each session start, prompt and finished turn.

- ``entry``: the hook process (``scripts/hook.py``, ``contextware hook``); standard library only on its
  warm path: it asks the resident service and falls back to running the handler itself;
- ``handlers``: one handler per event (``run_hook``), what the service and the fallback run;
- ``event``: the host's event, typed once at the door (``HookEvent``), and the names of the events
  answered (``EVENTS``, ``CAPTURE_EVENTS``), which ``entry`` reads without importing the handlers;
- ``claude_transcript``: Claude Code's transcript reader; ``instructions``: the host-aware note on
  reaching memory; ``once``: an event answered once when two installs of a host both run the hook;
  ``briefed``: which Gemini CLI sessions had their briefing (it rides on the first
  prompt there, so that a resumed session keeps it).

May import memory, storage, the service client and the shared helpers, lazily inside functions
(``entry`` and what it imports at module level stay standard library only, and leave out the slow
standard modules ``dataclasses``, ``hashlib`` and ``tempfile``); not ``hosts.mcp`` or
``hosts.install``.
"""
