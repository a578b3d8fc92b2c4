#!/usr/bin/env python3
"""Gemini CLI hook entry point (SessionStart, BeforeAgent, AfterAgent, PreCompress): see contextware/hosts/hooks.py and contextware/hosts/hook_entry.py."""

from contextware.cli import run_hook

run_hook()
