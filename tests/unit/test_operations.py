"""Each behaviour declared once (``contextware.operations``): the command line and the MCP tool are
built from the declaration, and the declaration agrees with the library function it calls."""

from __future__ import annotations

import inspect
from typing import Any

from mcp.server.mcpserver.tools import Tool

from contextware.cli import ArgumentParser
from contextware.cli.declared_args import add_params, values_of
from contextware.hosts.mcp.declared import DECLARED
from contextware.hosts.mcp.params import tool_function
from contextware.memory.recall import parse_query
from contextware.operations.recall import RECALL, RUN_OPTIONS


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


def test_the_branch_input_is_declared_once_and_reaches_every_door():
    """The issue's yardstick, now real: recall's ``--branch`` is one ``Param`` of the declaration
    (and its check): it appears on the command line and in the MCP schema, and reaches the query."""
    args = _parser(RECALL).parse_args(["where is the config?", "--branch", "feature/jwt"])
    values = values_of(args, RECALL)
    assert values["branch"] == "feature/jwt" and values["query"] == "where is the config?"
    assert RECALL.check(values).filters.branch == "feature/jwt"

    schema = _schema(RECALL)
    assert schema["properties"]["branch"]["default"] == "current"
    assert schema["properties"]["branch"]["description"].startswith("Whose memories")
    called = tool_function(RECALL, lambda work, **_: work)(query="where is the config?", branch="main")
    assert callable(called)  # the call is handed to the project runner with the values bound
    from contextware.errors import FieldError

    try:
        RECALL.check({**RECALL.defaults(), "query": "q", "branch": "a..b"})
    except FieldError as exc:
        assert exc.field == "branch"
    else:
        raise AssertionError("a..b was accepted as a branch")


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
