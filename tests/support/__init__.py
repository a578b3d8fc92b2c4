"""What the tests share.  Test modules import helpers from here, never from ``conftest`` or from one
another (tests/unit/test_test_layout.py checks it); the modules holding fixtures are registered as
plugins in tests/conftest.py, so a test names those fixtures as parameters without importing them.

- ``repo``: REPO, SCRIPTS and SCRIPT_NAMES, NETGUARD_DIR, and HEAVY (libraries imported lazily).
- ``scripts``: ``run_script`` runs ``scripts/<name>.py`` as an agent does; ``ScriptResult.json``.
- ``netguard/``: the ``sitecustomize`` put on every test process's PYTHONPATH; it refuses and
  records connections to non-loopback addresses.
- ``fake_gemini_api`` and ``fake_anthropic_api``: local fakes of the two model APIs that the real
  CLIs talk to (replies scripted per test, requests recorded).
- ``host_cli_fixtures``: the pinned real CLIs (where installed, skip or fail when missing).
- ``gemini_fixtures`` and ``claude_fixtures`` (fixtures): the real Gemini CLI and Claude Code run
  offline against those fakes: ``fake_gemini_api``, ``gemini_cli_env``, ``gemini_bin``,
  ``gemini_process_env``, ``fake_anthropic_api``, ``claude_env``, ``claude_bin``.
- ``offload_helpers`` (fixtures): ``real_gemini``, ``fake_gemini`` (a tiny fake ``gemini``
  executable), ``make_project``; sources, table rows and long texts for the offload tests.
- ``service_helpers`` (fixture ``services``): scripts and hook.py run with the resident service on,
  its status, log and pid, waiting, and stopping every service a test started.
- ``briefing`` (fixture ``briefed``): a project with something in every section of the briefing.
- ``hook_events``: the JSON Gemini CLI sends to a hook, and the context a hook answers with.
- ``mcp_client``: the MCP server's pinned tool contract, the ``mcp`` client over stdio, raw
  JSON-RPC lines on a server's pipes.
- ``code_index``: a small polyglot source tree and the rows the code index holds.
- ``source_trees``: project trees in git or walk mode (``MODES``) for the file-listing tests.
- ``session_store``: a project with store settings, the store's rows, a store full to its limit.
- ``savers``: processes that save facts at once, each as its own machine or all in one project.
- ``secret_corpus``: planted secrets of every shape the redaction must mask.
- ``browser``: the memory browser served in a thread (``served_browser``), raw HTTP requests to
  it with any Host, Origin or cookie (``request``), its form token, the real ``ui.py`` process.
- ``bit_rot``: flip stored bits in a table's data files, as a failing disk would.
"""
