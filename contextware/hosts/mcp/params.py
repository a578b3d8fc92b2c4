"""What the MCP tools share: their parameter types and their annotations.

A parameter type is ``Annotated[...]`` with the published JSON schema (enums, bounds), read by pydantic
when the SDK builds a tool; validation stays the plain functions' job, so a bad choice gets the same
error code as on the command line.  The annotations say what a tool does to the world, as clients show
and weigh it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, WithJsonSchema

from contextware.core.json_types import JsonObject
from contextware.core.text import split_list
from contextware.hosts.mcp.calls import call, under_root
from contextware.operations.spec import Absent, Operation, Param, texts

if TYPE_CHECKING:
    from contextware.storage.project import Project


# -- parameter types ------------------------------------------------------------------------------
def choice(values: Sequence[str], description: str) -> object:
    return Annotated[str, WithJsonSchema({"type": "string", "enum": list(values)}), Field(description=description)]


def opt_choice(values: Sequence[str], description: str) -> object:
    return Annotated[
        str | None, WithJsonSchema({"type": "string", "enum": list(values)}), Field(description=description)
    ]


def opt_text(description: str) -> object:
    return Annotated[str | None, WithJsonSchema({"type": "string"}), Field(description=description)]


def strings(description: str, min_items: int = 0) -> object:
    schema: JsonObject = {"type": "array", "items": {"type": "string"}}
    if min_items:
        schema["minItems"] = min_items
    return Annotated[list[str] | str | None, WithJsonSchema(schema), Field(description=description)]


def bounded_int(description: str, minimum: int, maximum: int | None = None) -> object:
    bounds: JsonObject = {"minimum": minimum, **({"maximum": maximum} if maximum is not None else {})}
    return Annotated[int, Field(description=description, json_schema_extra=bounds)]


def opt_int(description: str, minimum: int) -> object:
    return Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": minimum}), Field(description=description)
    ]


def flag(description: str) -> object:
    return Annotated[bool, Field(description=description)]


def opt_number(description: str, minimum: float | None, maximum: float | None) -> object:
    schema: JsonObject = {"type": "number"}
    schema.update({k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None})
    return Annotated[float | None, WithJsonSchema(schema), Field(description=description)]


def annotation(p: Param) -> object:
    """The MCP parameter type of a declared input: its published schema and description."""
    text = p.mcp_description
    if p.kind is object:  # any JSON value; not given: an ``Absent`` (null is a value)
        return Annotated[Any, Field(default_factory=Absent, description=text)]
    if p.kind is list:
        return strings(text, min_items=1 if p.required else 0)
    if p.required and p.choices:
        return choice(p.choices, text)
    if p.required:
        return Annotated[p.kind, Field(description=text)]
    if p.kind is bool:
        return flag(text)
    if p.kind is str and p.choices:
        return choice(p.choices, text) if p.default is not None else opt_choice(p.choices, text)
    if p.kind is str:
        return opt_text(text)
    if p.kind is int and p.default is not None:
        return bounded_int(text, int(p.minimum or 0), None if p.maximum is None else int(p.maximum))
    if p.kind is int:
        return opt_int(text, int(p.minimum or 0))
    return opt_number(text, p.minimum, p.maximum)


def tool_function(op: Operation, call: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """The MCP tool of a declared behaviour: a function whose signature the SDK reads (each input
    under its MCP name, with its schema) and whose call checks and runs the behaviour through
    ``call`` on the current project, errors naming MCP parameters."""
    by_argument = {p.mcp_argument: p for p in op.mcp_params}

    paths = [p for p in op.mcp_params if p.path]

    def tool(**arguments: Any) -> CallToolResult:
        values = {**op.defaults(), **{by_argument[k].name: v for k, v in arguments.items()}}
        text = op.tool_text(values) if op.tool_text else None

        def work(project: "Project") -> Mapping[str, object]:
            # Paths are relative to the project root: the server's cwd may be anywhere.
            given = {**values, **{p.name: _under_root(project, p, values[p.name]) for p in paths}}
            return op.run(project, op.check(given), given)

        return call(work, embeds=op.embeds, serialise=op.serialise, retry=op.retry, text=text)

    tool.__name__ = tool.__qualname__ = op.name
    tool.__doc__ = op.tool_summary
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                p.mcp_argument,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=annotation(p),
                **({} if p.required or p.kind is object else {"default": p.default}),
            )
            for p in op.mcp_params
        ],
        return_annotation=CallToolResult,
    )
    return tool


def declared_tool(op: Operation) -> tuple[Callable[..., CallToolResult], str, ToolAnnotations]:
    """A declared behaviour's MCP tool: its function, title and annotations."""
    return tool_function(op, call), op.title, tool_annotations(op)


def _under_root(project: "Project", p: Param, given: Any) -> list[str] | None:
    if given is None:
        return None
    return under_root(project, split_list(given) if p.split else texts(given), existing_only=p.path_existing)


# -- annotations ----------------------------------------------------------------------------------
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def tool_annotations(op: Operation) -> ToolAnnotations:
    """What a declared behaviour's tool does to the world."""
    if op.read_only:
        return READS
    return writes(destructive=op.destructive, idempotent=op.idempotent, open_world=op.open_world)


def writes(*, destructive: bool, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    """A tool that changes memory; ``open_world``: it may call Gemini's API, outside this machine."""
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=open_world
    )
