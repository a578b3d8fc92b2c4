"""What a request frame may hold, checked before the service acts on it.

Any local process of the user can connect to the service's socket, so a frame is input like any
other: each field has one type, standard input is valid base64, and a ``run`` request names only a
command the service is meant to answer (``client.routed``: quick reads and saves; never ``watch``,
``ui``, an index run or an offload, which would hold the one-request-at-a-time service for ever).
A frame that fails is answered with ``bad_request`` and its caller works in-process.
"""

from __future__ import annotations

import base64
import binascii

from contextware.core.json_types import JsonObject

OPS = {"status", "stop", "drain", "run", "hook", "mcp"}
MAX_ARGS = 1_000


def _text(value: object) -> bool:
    """A string that can be written as UTF-8 (a lone surrogate cannot)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _optional_text(value: object) -> bool:
    return value is None or _text(value)


def _base64(value: object) -> bool:
    if value is None:
        return True
    if not isinstance(value, str) or not value.isascii():
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def problem(request: JsonObject) -> str | None:
    """Why the service must not act on ``request`` (one sentence), or None when it may."""
    from contextware.service.client import routed

    op = request.get("op")
    if not isinstance(op, str) or op not in OPS:
        return "The request's op is not one the service answers."
    if not _optional_text(request.get("cwd")) or not _optional_text(request.get("id")):
        return "The request's cwd and id must be strings."
    env = request.get("env")
    if env is not None and not (isinstance(env, dict) and all(_text(k) and _text(v) for k, v in env.items())):
        return "The request's env must map names to strings."
    if op == "run":
        command, argv = request.get("command"), request.get("argv")
        if not _text(command) or not isinstance(argv, list) or len(argv) > MAX_ARGS:
            return "A run request names a command and a list of arguments."
        if not all(_text(a) for a in argv) or not _optional_text(request.get("prog")):
            return "A run request's arguments must be strings."
        if not _base64(request.get("stdin")):
            return "A run request's stdin must be base64."
        if not routed(str(command), [str(a) for a in argv]):
            return f"The service does not run {str(command)[:40]!r} with these arguments; run it in-process."
    elif op == "hook" and not _optional_text(request.get("stdin")):
        return "A hook request's stdin must be a string."
    elif op == "mcp" and not (_text(request.get("tool")) and isinstance(request.get("arguments"), dict)):
        return "An mcp request names a tool and an object of arguments."
    return None
