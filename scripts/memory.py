#!/usr/bin/env python3
"""Contextware `memory` command: see `--help`."""

from contextware.cli import run_script

run_script("memory")
