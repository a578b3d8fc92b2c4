"""The MCP server's door: every tool call's arguments bounded before any tool sees them (standard
library only: the ``front`` checks them as it parses a message, ``server`` again for calls that reach
it another way, the resident service's included).

A message is at most ``MAX_MESSAGE_BYTES`` (the front reads no more of a line); each string argument
at most ``MAX_STRING_CHARS`` (a few, by name, more: a log's text, an offload's context); a list at
most ``MAX_ITEMS`` items; a parameter declared integer or number is never a JSON ``true``/``false``
(pydantic would read ``true`` as 1).  A 300 MB query once grew the front to 18 GB: now it is one error
naming the parameter, and the front's memory stays within a message's bound.
"""

from __future__ import annotations

from contextware.core.json_types import JsonObject, JsonValue

MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # one JSON-RPC line; a session_store value is at most 10 MB
MAX_STRING_CHARS = 100_000  # a query, a topic, a path, an id: far above any real one
MAX_ITEMS = 10_000  # a list of paths, topics, ...
LONGER = {
    ("save_fact", "content"): 2_000_000,  # a log chunk: max_log_chars' default
    ("offload", "context"): 8_000_000,  # Gemini CLI's stdin limit (8 MB)
}
UNBOUNDED_STRINGS = {("session_store", "data")}  # any JSON value: bounded by the message and the store


def _declared_types(tool: str) -> dict[str, set[str]]:
    from contextware.hosts.mcp.declared import DECLARED

    for entry in DECLARED["tools"]:
        if entry.get("name") == tool:
            out: dict[str, set[str]] = {}
            for name, schema in (entry.get("inputSchema", {}).get("properties") or {}).items():
                kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)}
                out[name] = {k for k in kinds if isinstance(k, str)}
            return out
    return {}


def _longest(value: JsonValue, items: int) -> tuple[int, int]:
    """(the longest string, the longest list) inside ``value``, iteratively."""
    longest, most, stack = 0, 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, list):
            most = max(most, len(item))
            if len(item) <= items:
                stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return longest, most


def argument_error(tool: str, arguments: JsonObject) -> tuple[str, str] | None:
    """(code, one sentence naming the parameter) for the first argument out of bounds, else None."""
    declared = _declared_types(tool)
    for name, value in arguments.items():
        if not isinstance(name, str) or len(name) > 200:
            return "unknown_argument", f"{tool} has no such argument."
        kinds = declared.get(name, set())
        if isinstance(value, bool) and kinds & {"integer", "number"} and "boolean" not in kinds:
            return "bad_arguments", f"Bad arguments for {tool}: {name} must be a number, not {str(value).lower()}."
        if (tool, name) in UNBOUNDED_STRINGS:
            continue
        longest, most = _longest(value, MAX_ITEMS)
        cap = LONGER.get((tool, name), MAX_STRING_CHARS)
        if longest > cap:
            return "too_large", (
                f"Bad arguments for {tool}: {name} holds {longest:,} characters, over the {cap:,} it may have; "
                "nothing was done."
            )
        if most > MAX_ITEMS:
            return "too_large", (
                f"Bad arguments for {tool}: {name} has {most:,} items, over the {MAX_ITEMS:,} it may have; "
                "nothing was done."
            )
    return None
