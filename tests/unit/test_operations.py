"""Each behaviour declared once (``contextware.operations``): the command line and the MCP tool are
built from the declaration, and the declaration agrees with the library function it calls."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from mcp.server.mcpserver.tools import Tool

from contextware.cli import ArgumentParser
from contextware.cli.declared_args import add_params, values_of
from contextware.hosts.mcp.declared import DECLARED
from contextware.hosts.mcp.params import tool_function
from contextware.memory.recall import parse_query
from contextware.operations.recall import RECALL, RUN_OPTIONS
from contextware.operations.registry import OPERATIONS
from contextware.operations.save import SAVE
from contextware.operations.spec import Operation


def _parser(op: Any) -> ArgumentParser:
    p = ArgumentParser(prog=op.name)
    add_params(p, op)
    return p


def _schema(op: Any) -> dict:
    return Tool.from_function(tool_function(op, lambda work, **_: work), name=op.name).parameters


def test_every_recall_input_reaches_the_library_function():
    asked = {p.name for p in RECALL.params} - set(RUN_OPTIONS) - {"query"}
    assert asked <= set(inspect.signature(parse_query).parameters)


@pytest.mark.parametrize("op", OPERATIONS.values(), ids=list(OPERATIONS))
def test_the_cli_and_the_mcp_tool_offer_the_declared_inputs(op: Operation):
    flags = {a.dest for a in _parser(op)._actions if a.dest != "help" and not a.dest.endswith("__positional")}
    tool = next(t for t in DECLARED["tools"] if t["name"] == op.tool)
    assert flags == {p.name for p in op.cli_params}
    assert set(tool["inputSchema"]["properties"]) == {p.mcp_argument for p in op.mcp_params}
    assert tool["inputSchema"].get("required", []) == [p.mcp_argument for p in op.mcp_params if p.required]
    assert tool["title"] == op.title and tool["description"] == " ".join(op.tool_summary.split())


def test_a_cli_only_input_stays_off_the_mcp_tool_and_a_list_is_one_argument():
    values = values_of(_parser(SAVE).parse_args(["x", "--topics", "ci,testing", "--speaker", "ana"]), SAVE)
    assert values["topics"] == "ci,testing" and values["speaker"] == "ana"
    assert "speaker" not in _schema(SAVE)["properties"]
    assert _schema(SAVE)["properties"]["topics"]["type"] == "array"


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
    from contextware.core.errors import FieldError

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
    from contextware.core.errors import FieldError

    for bad in ({"limit": 0}, {"scope": "everything"}, {"kind": "rumour"}):
        try:
            RECALL.check({**RECALL.defaults(), "query": "q", **bad})
        except FieldError as exc:
            assert exc.field == next(iter(bad)), exc.field
        else:
            raise AssertionError(f"{bad} was accepted")


@pytest.mark.parametrize("op", OPERATIONS.values(), ids=list(OPERATIONS))
def test_the_warm_paths_routing_lists_agree_with_the_declarations(op: Operation):
    """The service client and the MCP front are standard library only (a hook's process start is
    paid every turn), so they keep their own lists; these must say what the declarations say."""
    from contextware.hosts.mcp.front import IN_PROCESS_TOOLS, REPEATABLE
    from contextware.service.client import QUICK

    assert (op.name in QUICK) is op.quick
    assert (op.tool in IN_PROCESS_TOOLS) is op.in_process
    if op.read_only:
        assert op.tool in REPEATABLE


def test_the_readme_rows_are_generated_from_the_declarations():
    """Stale? Run ``uv run python -m contextware.operations.docs``."""
    from contextware.operations.docs import README, readme_row, with_rows

    text = README.read_text(encoding="utf-8")
    assert with_rows(text) == text
    for op in OPERATIONS.values():
        if op.subcommand:  # the command's written row names each of its subcommands
            row = next(line for line in text.splitlines() if line.startswith(f"| `contextware {op.command}` |"))
            assert f"`{op.subcommand}`" in row
            continue
        assert readme_row(op) in text and all(
            p.cli_flag in readme_row(op) for p in op.cli_params if not p.positional_only
        )


def test_the_architecture_rows_are_generated_and_name_real_functions():
    """ARCHITECTURE.md's "one behaviour, four names": a declared behaviour's row is generated, and
    every function the table names (declared or not) exists, so a moved module fails here."""
    import importlib

    from contextware.operations.docs import ARCHITECTURE, architecture_row, with_architecture_rows

    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert with_architecture_rows(text) == text
    assert all(architecture_row(op) in text for op in OPERATIONS.values())
    section = text.split("## One behaviour, four names", 1)[1].split("\n## ", 1)[0]
    named = re.findall(
        r"`((?:[a-z_]+\.)+[a-z_]+)`",
        "\n".join(line.split("|")[-2] for line in section.splitlines() if line.startswith("| ")),
    )
    assert len(named) > 20
    missing = []
    for dotted in named:
        module, _, attr = dotted.rpartition(".")
        try:
            found = hasattr(importlib.import_module(f"contextware.{module}"), attr)
        except ImportError:
            found = importlib.util.find_spec(f"contextware.{dotted}") is not None
        if not found:
            missing.append(dotted)
    assert missing == []


def test_library_errors_name_inputs_not_command_line_flags():
    """Issue 31: 0 CLI flag names raised from library code.  An error raised outside the command
    line's own modules names an input with ``FieldError``'s ``{field}``, which each door words (a
    command to run, in backticks, may name its options)."""
    import ast

    from tests.support.repo import REPO

    door_only = ("contextware/cli/", "contextware/hosts/install/")  # the command line's own words
    found = []
    for path in sorted((REPO / "contextware").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(door_only):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            for arg in node.exc.args[:1]:
                parts = [arg] if isinstance(arg, ast.Constant) else getattr(arg, "values", [])
                text = "".join(str(p.value) for p in parts if isinstance(p, ast.Constant))
                text = re.sub(r"`[^`]*`", "", text)  # a command to run (`gemini --list-sessions`) is no input
                if re.search(r"(?<![\w-])--[a-z]", text):
                    found.append(f"{rel}:{node.lineno}: {text[:80]}")
    assert found == []


def test_an_offload_input_is_named_by_each_door(project):
    """The same bad file: ``--files`` on the command line, ``files`` through MCP."""
    from contextware.cli import flag_name
    from contextware.core.errors import FieldError
    from contextware.offload.sources import resolve_sources

    try:
        resolve_sources(project, files=["missing.txt"])
    except FieldError as exc:
        assert exc.to_dict(flag_name)["message"].startswith("--files: ")
        assert exc.to_dict()["message"].startswith("files: ") and exc.code == "file_not_found"
    else:
        raise AssertionError("a missing file was accepted")


@pytest.mark.slow
def test_a_path_input_is_relative_to_the_cwd_on_the_command_line_and_to_the_root_through_mcp(
    project, tmp_path, monkeypatch
):
    """``index``'s paths are one declared ``Param(path=True)``: the command line reads them from the
    working directory, the MCP tool from the project root (its server may run anywhere)."""
    from contextware.operations.index import INDEX

    (project.root / "src").mkdir()
    (project.root / "src" / "app.py").write_text("def serve():\n    return 1\n")
    (project.root / "src" / "util.py").write_text("def helper():\n    return 2\n")
    config = {"summarizer": "local"}

    monkeypatch.chdir(project.root / "src")
    values = values_of(_parser(INDEX).parse_args(["app.py", "--summarizer", "local"]), INDEX)
    assert INDEX.run(project, INDEX.check(values), values)["indexed_files"] == ["src/app.py"]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    tool = tool_function(INDEX, lambda work, **_: work(project))
    result = tool(paths=["src/util.py"], **config)
    assert result["indexed_files"] == ["src/util.py"]
    assert tool(paths="src/util.py", **config)["unchanged"] == 1  # one path as a text is one path


def test_the_memory_subcommands_and_tools_are_one_declaration_each():
    """``memory list|get|update|delete|history|confirm|stats`` and their MCP tools are built from
    ``operations.memory``."""
    from contextware.cli.memory import build_parser
    from contextware.operations.memory import MEMORY_OPERATIONS

    parser = build_parser("memory.py")
    for op in MEMORY_OPERATIONS:
        args = parser.parse_args(
            [op.subcommand, *(["fact-1a2b3c4d5e6f"] if op.params and op.params[0].name == "id" else [])]
        )
        assert values_of(args, op).keys() == {p.name for p in op.params}
    args = parser.parse_args(["update", "fact-1a2b3c4d5e6f", "--topics", "ci,testing"])
    assert values_of(args, OPERATIONS["memory update"])["topics"] == "ci,testing"


def test_a_store_input_an_action_does_not_take_is_named_by_each_door():
    """``store load --data x``: '--data does not apply' on the command line, 'data' through MCP; a
    JSON null is a value to save, a missing value is not."""
    from contextware.cli import flag_name
    from contextware.core.errors import FieldError
    from contextware.operations.spec import ABSENT
    from contextware.operations.store import STORE

    values = values_of(_parser(STORE).parse_args(["load", "--namespace", "n", "--key", "k", "--data", "1"]), STORE)
    try:
        STORE.check(values)
    except FieldError as exc:
        assert exc.to_dict(flag_name)["message"] == "--data does not apply to action load."
        assert exc.to_dict()["message"] == "data does not apply to action load." and exc.code == "bad_option"
    else:
        raise AssertionError("--data was accepted by load")
    assert STORE.check({"action": "save", "namespace": "n", "key": "k", "data": None}).data is None
    try:
        STORE.check({"action": "save", "namespace": "n", "key": "k", "data": ABSENT})
    except FieldError as exc:
        assert exc.code == "bad_data"
    else:
        raise AssertionError("a save without data was accepted")


def test_offload_keeps_its_repeated_flags_its_alias_and_refuses_sessions_inputs():
    """``--files`` may be given more than once (each a comma-separated list), ``--topics`` is
    ``--topic``; ``--keep-gemini`` belongs to ``sessions delete``, worded per door."""
    from contextware.cli import flag_name
    from contextware.core.errors import FieldError
    from contextware.operations.offload import OFFLOAD

    args = _parser(OFFLOAD).parse_args(["-p", "why?", "--files", "a.py,b.py", "--files", "c.py", "--topics", "x,y"])
    values = values_of(args, OFFLOAD)
    request = OFFLOAD.check(values)
    assert request.files == ["a.py,b.py", "c.py"] and request.topic == "x,y" and request.prompt == "why?"
    assert "topics" in _schema(OFFLOAD)["properties"] and "keep_gemini" not in _schema(OFFLOAD)["properties"]
    try:
        OFFLOAD.check({**values, "keep_gemini": True})
    except FieldError as exc:
        assert exc.to_dict(flag_name)["message"] == "--keep-gemini applies to sessions delete only."
    else:
        raise AssertionError("--keep-gemini was accepted without sessions delete")
