#!/usr/bin/env python3
"""Contextware MCP server (stdio): see `--help`."""

from contextware.hosts.mcp.front import main

main()
