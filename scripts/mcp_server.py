#!/usr/bin/env python3
"""Contextware MCP server (stdio): see `--help`."""
from contextware.mcp_server import main

main()
