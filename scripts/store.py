#!/usr/bin/env python3
"""Contextware `store` command: see `--help`."""

from contextware.cli import run_script

run_script("store")
