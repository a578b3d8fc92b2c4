"""What the MCP tools share: their parameter types and their annotations.

A parameter type is ``Annotated[...]`` with the published JSON schema (enums, bounds), read by pydantic
when the SDK builds a tool; validation stays the plain functions' job, so a bad choice gets the same
error code as on the command line.  The annotations say what a tool does to the world, as clients show
and weigh it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema


# -- parameter types ------------------------------------------------------------------------------
def choice(values: Sequence[str], description: str) -> Any:
    return Annotated[str, WithJsonSchema({"type": "string", "enum": list(values)}), Field(description=description)]


def opt_choice(values: Sequence[str], description: str) -> Any:
    return Annotated[
        str | None, WithJsonSchema({"type": "string", "enum": list(values)}), Field(description=description)
    ]


def opt_text(description: str) -> Any:
    return Annotated[str | None, WithJsonSchema({"type": "string"}), Field(description=description)]


def strings(description: str, min_items: int = 0) -> Any:
    schema: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if min_items:
        schema["minItems"] = min_items
    return Annotated[list[str] | str | None, WithJsonSchema(schema), Field(description=description)]


def bounded_int(description: str, minimum: int, maximum: int | None = None) -> Any:
    bounds: dict[str, Any] = {"minimum": minimum, **({"maximum": maximum} if maximum is not None else {})}
    return Annotated[int, Field(description=description, json_schema_extra=bounds)]


def opt_int(description: str, minimum: int) -> Any:
    return Annotated[
        int | None, WithJsonSchema({"type": "integer", "minimum": minimum}), Field(description=description)
    ]


def flag(description: str) -> Any:
    return Annotated[bool, Field(description=description)]


# -- annotations ----------------------------------------------------------------------------------
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def writes(*, destructive: bool, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    """A tool that changes memory; ``open_world``: it may call Gemini's API, outside this machine."""
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=open_world
    )
