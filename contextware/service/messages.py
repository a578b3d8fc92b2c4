"""The service's socket messages, declared once: what a caller sends (``ServiceRequest``), what the
service answers (``ServiceReply``), what a capture hook spools (``SpoolEntry``).  A frame read off
the socket is a ``JsonObject`` until ``frames.problem`` has checked each field; these describe the
messages we build."""

from __future__ import annotations

from typing import Literal, TypedDict

from contextware.core.json_types import JsonObject, JsonValue


class _RequestBase(TypedDict):
    op: str


class ServiceRequest(_RequestBase, total=False):
    """One request frame: ``op`` and the fields that op reads (``frames.problem`` checks each)."""

    version: str
    id: str
    command: str
    argv: list[str]
    prog: str
    cwd: str
    env: dict[str, str]
    stdin: str | None
    tool: str
    arguments: JsonObject


class _ErrorBase(TypedDict):
    code: str


class ServiceError(_ErrorBase, total=False):
    """Why the service did not answer a request (its caller works in-process)."""

    message: str


class ServiceStatus(TypedDict):
    """The running service, as ``status`` reports it (and a version mismatch carries it)."""

    running: bool
    pid: int
    socket: str
    data_dir: str
    version: str
    uptime_s: float
    requests: int
    idle_exit_s: float


class TextContent(TypedDict):
    """One text block of an MCP tool call result."""

    type: Literal["text"]
    text: str


class _ToolCallBase(TypedDict):
    content: list[TextContent]


class ToolCallResult(_ToolCallBase, total=False):
    """An MCP ``tools/call`` result as it goes on the wire (the service carries it for the front)."""

    structuredContent: JsonObject
    isError: bool


class _ReplyBase(TypedDict):
    ok: bool


class ServiceReply(_ReplyBase, total=False):
    """One answer frame: ``ok`` and what its op returns (an error, a command's output, a tool
    call's result, the status)."""

    error: ServiceError
    stopping: bool
    exit: int
    stdout: str
    stderr: str
    result: ToolCallResult
    running: bool
    pid: int
    socket: str
    data_dir: str
    version: str
    uptime_s: float
    requests: int
    idle_exit_s: float


class _StopBase(TypedDict):
    was_running: bool
    stopped: bool


class StopResult(_StopBase, total=False):
    """What ``client.stop`` did: whether a service ran, whether it is gone, and its pid."""

    pid: JsonValue


class SpoolEntry(TypedDict):
    """One finished turn a capture hook spooled: the hook's standard input and its caller."""

    id: str
    stdin: str
    cwd: str
    env: dict[str, str]
