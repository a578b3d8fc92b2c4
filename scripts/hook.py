#!/usr/bin/env python3
"""Gemini CLI hook entry point (SessionStart, BeforeAgent, AfterAgent, PreCompress): see contextware/hooks.py."""

from contextware.cli import run_hook

run_hook()
