#!/usr/bin/env python3
"""Contextware `recall` command: see `--help`."""

from contextware.cli import run_script

run_script("recall")
