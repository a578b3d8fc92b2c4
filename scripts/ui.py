#!/usr/bin/env python3
"""Contextware `ui` command: see `--help`."""

from contextware.cli import run_script

run_script("ui")
