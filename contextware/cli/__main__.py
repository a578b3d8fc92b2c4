"""``python -m contextware.cli <command>``: the ``contextware`` command, for an installed package's
hooks and MCP server started with its own Python (``install --python`` outside a clone)."""

from contextware.cli import main

main()
