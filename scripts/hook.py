#!/usr/bin/env python3
"""Gemini CLI and Claude Code hook entry point (one event on stdin): see contextware/hosts/hooks/entry.py."""

from contextware.hosts.hooks.entry import main

main()
