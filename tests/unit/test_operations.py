"""Each behaviour declared once (``contextware.operations``): the command line and the MCP tool are
built from the declaration, and the declaration agrees with the library function it calls."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver.tools import Tool

from contextware.cli import ArgumentParser
from contextware.cli.declared_args import add_params, values_of
from contextware.hosts.mcp.declared import DECLARED
from contextware.hosts.mcp.params import tool_function
from contextware.memory.recall import parse_query
from contextware.operations.recall import RECALL, RUN_OPTIONS
from contextware.operations.spec import Param


def _parser(op: Any) -> ArgumentParser:
    p = ArgumentParser(prog=op.name)
    add_params(p, op)
    return p


def _schema(op: Any) -> dict:
    return Tool.from_function(tool_function(op, lambda work, **_: work), name=op.name).parameters


def test_every_recall_input_reaches_the_library_function():
    asked = {p.name for p in RECALL.params} - set(RUN_OPTIONS) - {"query"}
    assert asked <= set(inspect.signature(parse_query).parameters)


def test_the_cli_and_the_mcp_tool_offer_the_same_inputs():
    flags = {a.dest for a in _parser(RECALL)._actions if a.dest not in ("help", "query__positional")}
    tool = next(t for t in DECLARED["tools"] if t["name"] == "recall")
    assert flags == {p.name for p in RECALL.params}
    assert set(tool["inputSchema"]["properties"]) == {p.mcp_argument for p in RECALL.params}
    assert tool["inputSchema"]["required"] == ["query"]


def test_adding_an_input_touches_the_declaration_and_the_function_only():
    """The issue's yardstick: a ``--branch`` filter added to recall's declaration (and its check)
    appears on the command line and in the MCP schema, and reaches the function, with no other edit."""
    seen: dict[str, Any] = {}

    def check(values: Mapping[str, Any]) -> Any:
        seen.update(values)
        return RECALL.check({k: v for k, v in values.items() if k != "branch"})

    branch = Param("branch", str, "only memories learned on this branch (current, any or a name)", default="current")
    op = dataclasses.replace(RECALL, params=(*RECALL.params, branch), check=check)

    args = _parser(op).parse_args(["where is the config?", "--branch", "feature/jwt"])
    values = values_of(args, op)
    assert values["branch"] == "feature/jwt" and values["query"] == "where is the config?"
    op.check(values)
    assert seen["branch"] == "feature/jwt"

    schema = _schema(op)
    assert schema["properties"]["branch"]["default"] == "current"
    assert schema["properties"]["branch"]["description"].startswith("only memories learned on this branch")
    called = tool_function(op, lambda work, **_: work)(query="where is the config?", branch="main")
    assert callable(called)  # the call is handed to the project runner with the values bound


def test_a_declared_choice_and_bound_are_published_to_mcp_and_checked_by_the_function():
    props = _schema(RECALL)["properties"]
    assert props["scope"]["enum"] == list(RECALL.param("scope").choices or ())
    assert props["limit"]["maximum"] == 100 and props["limit"]["minimum"] == 1
    from contextware.errors import FieldError

    for bad in ({"limit": 0}, {"scope": "everything"}, {"kind": "rumour"}):
        try:
            RECALL.check({**RECALL.defaults(), "query": "q", **bad})
        except FieldError as exc:
            assert exc.field == next(iter(bad)), exc.field
        else:
            raise AssertionError(f"{bad} was accepted")
