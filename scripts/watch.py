#!/usr/bin/env python3
"""Contextware `watch` command: see `--help`."""

from contextware.cli import run_script

run_script("watch")
