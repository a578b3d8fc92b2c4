"""Gemini CLI: the one adapter to the external ``gemini`` command (headless turns, sessions, setup).

Used by the code summariser (codeindex), research offloads (offload) and the Gemini CLI installer
(hosts).  Behaviour verified against Gemini CLI 0.61.0; the integration tests run the real CLI against
a local fake of its API (``tests/fake_gemini_api.py``).

- ``availability``: finding the binary, its home folder, whether it looks signed in; the work folder.
- ``process``: running it in its own process group with a timeout and a cancel event; ``run_cli``
  for management subcommands; the rate limit shared by every process.
- ``output``: parsing its ``-o json`` result, and its failures as one ``GeminiError`` with a ``code``.
- ``headless``: one ``gemini -p`` turn (``run_gemini``), with retries of a rate-limited call.
- ``sessions``: listing and deleting the CLI's sessions.

May import the shared helpers below it (errors, system, text) and nothing else of the package.
"""
