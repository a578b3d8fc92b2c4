#!/usr/bin/env python3
"""Gemini CLI and Claude Code hook entry point (one event on stdin): see contextware/hosts/hook_entry.py."""

from contextware.hosts.hook_entry import main

main()
