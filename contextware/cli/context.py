"""``context.py``: what a fresh session needs to know, in one call."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextware.memory.results import Briefing

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params
from contextware.operations.context import CONTEXT

DESCRIPTION = CONTEXT.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, CONTEXT)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    values = {p.name: getattr(args, p.name) for p in CONTEXT.cli_params}
    return CONTEXT.run(open_project(args), CONTEXT.check(values), values)


def render_text(result: "Briefing") -> str:
    from contextware.memory.briefing import render_fenced

    return render_fenced(result)
