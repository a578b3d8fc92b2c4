#!/usr/bin/env python3
"""Contextware `index` command: see `--help`."""

from contextware.cli import run_script

run_script("index")
