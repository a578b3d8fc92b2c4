#!/usr/bin/env python3
"""Contextware `context` command: see `--help`."""

from contextware.cli import run_script

run_script("context")
