#!/usr/bin/env python3
"""Contextware `import` command: see `--help`."""

from contextware.cli import run_script

run_script("import")
