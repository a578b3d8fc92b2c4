"""``context.py``: what a fresh session needs to know, in one call."""

from __future__ import annotations

import argparse

from contextware.cli import add_common, new_parser, open_project
from contextware.memory.briefing import DEFAULT_BUDGET

DESCRIPTION = """Brief a fresh session in one call, within a token budget, most important first: the
project, its active constraints, preferences, decisions, conventions and environment facts
(verbatim), open failures and their lessons, recent work, code-index coverage and the most central
files, offload sessions, and the session store's namespaces. Near-duplicates are shown once, as the
newest. --format text gives markdown to paste into a prompt, fenced as reference data."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument(
        "--budget-tokens",
        type=int,
        default=DEFAULT_BUDGET,
        metavar="N",
        help=f"most tokens the briefing may use (default {DEFAULT_BUDGET})",
    )
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.memory.briefing import session_context

    return session_context(open_project(args), args.budget_tokens)


def render_text(result: dict) -> str:
    from contextware.memory.briefing import render_fenced

    return render_fenced(result)
