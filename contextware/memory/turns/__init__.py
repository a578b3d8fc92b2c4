"""Captured conversation turns over time: what becomes of a session after the hooks store it.

``digest`` (a session's digest episode, rebuilt from its turns), ``gemini_digest`` (one written
by headless Gemini under a daily token budget), ``retention`` (old sessions' turns folded into
their digests), ``archive`` (where those turns go, as a memory file) and ``decisions`` (the prompt
hook's bounded, redacted record of what it injected and held back). May import:
``memory.records``, ``memory.team``, ``storage``, ``gemini`` and ``core``.
"""
