#!/usr/bin/env python3
"""Contextware `service` command: see `--help`."""

from contextware.cli import run_script

run_script("service")
