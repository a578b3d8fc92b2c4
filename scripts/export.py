#!/usr/bin/env python3
"""Contextware `export` command: see `--help`."""

from contextware.cli import run_script

run_script("export")
