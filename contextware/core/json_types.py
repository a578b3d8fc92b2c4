"""The shape of JSON values, for documents whose keys are not ours to declare (a host's settings
file, a user's stored value, a JSON-RPC message's params): every value JSON can hold, nothing else.
A document with keys we own gets its own ``TypedDict`` instead."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"
