"""What we tell an agent about reaching its memory, naming only what its host offers in that mode.

- Claude Code loads the ``contextware`` MCP server in interactive and ``-p`` runs alike (from
  ``.mcp.json``, the user's ``~/.claude.json`` or the plugin), so the note names its MCP tools, as
  Claude Code names them (``mcp__<server>__<tool>``; a plugin's are ``mcp__plugin_<plugin>_<server>__<tool>``).
- Gemini CLI offers no MCP tools in headless runs (``gemini -p``) and a hook cannot tell the modes
  apart, so the note names shell commands, which work in both: the ``contextware`` console command
  when the hook was started through it or it is on PATH, else this environment's Python on the
  skill's scripts.

Standard library only: this runs on the SessionStart hook's path.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

MCP_PREFIX = {"claude": "mcp__contextware__", "claude-plugin": "mcp__plugin_contextware_contextware__"}


def script_command(script: str, command: str) -> str:
    """How to run one of our commands from a shell: ``contextware <command>`` when this process was
    started through it or it is on PATH (what a project's installed hooks call), else this
    environment's Python on the skill's script (never a long interpreter path when a short name works)."""
    if Path(sys.argv[0]).name == "contextware" or shutil.which("contextware"):
        return f"contextware {command}"
    path = Path(__file__).resolve().parents[3] / "scripts" / script
    if not path.is_file():  # an installed package has no scripts/: its module runs the command
        return f"{shlex.quote(sys.executable)} -I -m contextware.cli {command}"
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def how_to_reach_memory(host: str) -> str:
    """One line for the session start: how to search and add to the memory in this host."""
    prefix = MCP_PREFIX.get(host)
    if prefix:
        return (
            f"Search this memory with the `{prefix}recall` tool before acting on how this project does "
            f"something; save what the next session needs with `{prefix}save_fact`."
        )
    recall = script_command("recall.py", "recall")
    save = script_command("save_fact.py", "save")
    return (
        f'Search this memory from the shell, in the project directory: `{recall} --query "..."` (`--scope code` '
        f'finds files); save what the next session needs: `{save} "..." --kind decision`.'
    )


def how_to_get_whole(host: str) -> str:
    """One line under the prompt hook's memories when one was cut short: how to fetch it whole."""
    prefix = MCP_PREFIX.get(host)
    how = f"`{prefix}get_memory` with its id" if prefix else f"`{script_command('memory.py', 'memory')} get ID`"
    return f"(A memory ending in … is cut short: {how} shows the whole of it.)"
