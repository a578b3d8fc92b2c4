"""Installers: hooks, the MCP server and the skill written into each host's files, and taken out again.

- ``dispatch``: ``install``/``uninstall`` (``scripts/install.py``), one module per host below it;
- ``gemini_cli``, ``claude_code`` (and the plugin under ``plugins/claude/``), ``mcp_hosts`` (Cursor,
  VS Code, Claude Desktop: the MCP server alone);
- ``shared``: how hooks and the server are started (from a clone or an installed package), the
  skill, the manifest; ``installed_files``: each file an install writes and its exact undo;
  ``settings_merge``: the one JSON settings merger (``jsonc``: files with comments, edited as
  text); ``doctor``: an install checked end to end; ``loop``: doctor's run of each installed
  host's hooks (sample events, duplicate installs, ``hooks.log``).
- ``git_merge``: the memory file's git merge driver (``.gitattributes``, the repository's config).

May import storage (layout), ``gemini`` (linking the extension) and the shared helpers; not
``hosts.hooks`` or ``hosts.mcp`` (it names them only in the commands it writes).
"""
