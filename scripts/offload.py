#!/usr/bin/env python3
"""Contextware `offload` command: see `--help`."""

from contextware.cli import run_script

run_script("offload")
