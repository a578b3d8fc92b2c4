#!/usr/bin/env python3
"""Contextware `install` command: see `--help`."""

from contextware.cli import run_script

run_script("install")
