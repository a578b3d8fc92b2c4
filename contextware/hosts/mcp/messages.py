"""The JSON-RPC answers the stdio front builds.  What a client sends is not ours (a ``JsonObject``,
narrowed where it is read); a tool call's result is ``service.messages.ToolCallResult``, which the
resident service carries too."""

from __future__ import annotations

from typing import TypedDict

from contextware.core.json_types import JsonObject, JsonValue
from contextware.service.messages import ToolCallResult


class InitializeResult(TypedDict):
    """The answer to ``initialize``: the protocol version agreed and what the server declares."""

    protocolVersion: str
    capabilities: JsonObject
    serverInfo: JsonObject
    instructions: str


class JsonRpcError(TypedDict):
    """A JSON-RPC 2.0 error: its code and one sentence."""

    code: int
    message: str


class _ReplyBase(TypedDict):
    jsonrpc: str
    id: JsonValue


class JsonRpcReply(_ReplyBase, total=False):
    """One answer line: the request's id with its result or its error."""

    result: InitializeResult | ToolCallResult | JsonObject
    error: JsonRpcError


class Declared(TypedDict):
    """What the SDK server declares (``server.declared``), frozen in ``declared.py`` for the front."""

    protocolVersions: list[str]
    latestProtocolVersion: str
    serverInfo: JsonObject
    capabilities: JsonObject
    instructions: str | None
    tools: list[JsonObject]
