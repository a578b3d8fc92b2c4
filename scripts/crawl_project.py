#!/usr/bin/env python3
"""Contextware `crawl` command: see `--help`."""

from contextware.cli import run_script

run_script("crawl")
