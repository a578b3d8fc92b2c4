"""A declared behaviour (``operations``) as command-line arguments, and the parsed arguments back as
the values of its inputs.

Types only are enforced here (``--limit x`` is a usage error); choices and bounds are the library
function's to check, so a bad value gets the same error code on the command line as through MCP.
A list input is one comma-separated argument (the library splits it).
"""

from __future__ import annotations

import argparse
from typing import Any

from contextware.core.errors import UsageError
from contextware.operations.spec import Operation, Param


def _positional_dest(p: Param) -> str:
    return p.name if p.positional_only else f"{p.name}__positional"


def add_params(parser: argparse.ArgumentParser, op: Operation) -> None:
    """Every command-line input of ``op`` as an argument of ``parser``, in the declared order, each
    in its help section (``Param.group``)."""
    groups: dict[str, Any] = {}
    for p in op.cli_params:
        if p.positional:
            if p.kind is list:
                nargs: str | None = "+" if p.required else "*"
            else:
                nargs = None if p.positional_only and p.required else "?"
            parser.add_argument(_positional_dest(p), nargs=nargs, metavar=p.positional, help=p.positional_help)
    for p in op.cli_params:
        if p.positional_only:
            continue
        where = parser
        if p.group:
            where = groups.get(p.group) or groups.setdefault(p.group, parser.add_argument_group(p.group))
        names = [p.cli_flag, *p.aliases, *([p.short] if p.short else [])]
        if p.kind is bool:
            where.add_argument(*names, dest=p.name, action="store_true", help=p.help)
            continue
        extra: dict[str, Any] = {"metavar": p.metavar} if p.metavar else {}
        if p.repeat:
            extra["action"] = "append"
        kind = str if p.kind in (list, object) else p.kind  # the library splits a list; the door parses JSON
        where.add_argument(*names, dest=p.name, type=kind, default=p.default, help=p.help, **extra)


def _noun(p: Param) -> str:
    """What the positional holds, from its help: 'the question, e.g. ...' -> 'question'."""
    return (p.positional_help or p.name).split(",")[0].removeprefix("the ")


def _example(p: Param) -> str:
    _, found, example = (p.positional_help or "").partition("e.g. ")
    return f" {example}" if found else ""


def values_of(args: argparse.Namespace, op: Operation) -> dict[str, Any]:
    """The value of each input of ``op`` (a positional and its flag given once, either way); inputs
    the command line does not offer take their declared defaults."""
    values = {**op.defaults(), **{p.name: getattr(args, p.name, None) for p in op.cli_params}}
    for p in op.cli_params:
        if not p.positional or p.positional_only:
            continue
        given = getattr(args, _positional_dest(p))
        if given is not None and values[p.name] is not None:
            raise UsageError(
                f"Give the {_noun(p)} once: as {p.positional} or with {p.cli_flag}, not both.", code="usage"
            )
        if given is not None:
            values[p.name] = given
        if p.required and values[p.name] is None:
            raise UsageError(f"Give a {_noun(p)}: {op.name}{_example(p)} (or {p.cli_flag}).", code="usage")
    return values
