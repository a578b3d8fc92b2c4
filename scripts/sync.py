#!/usr/bin/env python3
"""Contextware `sync` command: see `--help`."""

from contextware.cli import run_script

run_script("sync")
