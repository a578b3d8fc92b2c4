#!/usr/bin/env python3
"""Contextware `save` command: see `--help`."""

from contextware.cli import run_script

run_script("save")
