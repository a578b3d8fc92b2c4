"""The MCP server's stdio front (``scripts/mcp_server.py``, ``contextware mcp``): standard library only.

Hosts start the server on every run and wait for ``initialize`` and ``tools/list`` (Gemini CLI on
each ``gemini -p``), so those cost a Python start and no more: they are answered from ``declared``
(the SDK ``server``'s declaration, frozen; a test holds the two equal), with ``ping``, the empty
prompt and resource lists, and the JSON-RPC 2.0 error for any line that is not a message.

Each ``tools/call`` runs in a thread of its own.  Quick tools go to the project's resident service,
which runs the same ``server.call_tool`` on its warm database and model; ``index_file``,
``crawl_project``, ``offload`` and ``recall`` with ``refresh_stale`` run here (long, or they run
Gemini CLI), as does everything when the service is off or cannot be had (``server`` is then
imported once and stays warm).  When the service dies mid-call, a tool that is safe to repeat is
run again here; any other answers ``service_died`` rather than risk doing it twice.

Only the protocol reaches stdout: fd 1 is kept for it and then pointed at stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import IO, cast

from contextware import __version__
from contextware.core.errors import internal_error
from contextware.core.json_types import JsonObject, JsonValue
from contextware.core.settings import Settings, current_settings
from contextware.hosts.mcp.bounds import MAX_MESSAGE_BYTES, argument_error
from contextware.hosts.mcp.declared import DECLARED
from contextware.hosts.mcp.messages import InitializeResult, JsonRpcReply
from contextware.service.messages import ServiceRequest, ToolCallResult

# Long, or they run Gemini CLI with this process's environment: never sent to the service.
IN_PROCESS_TOOLS = {"index_file", "crawl_project", "offload"}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
EMPTY_LISTS = {
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


def _repeatable() -> set[str]:
    out = set()
    for tool in DECLARED["tools"]:
        hints = tool.get("annotations") or {}
        if hints.get("readOnlyHint") or hints.get("idempotentHint"):
            out.add(tool["name"])
    return out


REPEATABLE = _repeatable()


def initialize_result(params: JsonValue) -> InitializeResult:
    """The SDK's answer: the client's protocol version when supported, else the latest one."""
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    version = (
        requested
        if isinstance(requested, str) and requested in DECLARED["protocolVersions"]
        else DECLARED["latestProtocolVersion"]
    )
    return {
        "protocolVersion": version,
        "capabilities": DECLARED["capabilities"],
        "serverInfo": DECLARED["serverInfo"],
        "instructions": DECLARED["instructions"],
    }


def error_result(code: str, message: str) -> ToolCallResult:
    """A tool error in the Contextware envelope, as ``calls.error_result`` puts it on the wire."""
    envelope: JsonObject = {"ok": False, "error": {"code": code, "message": message}}
    return {
        "content": [{"type": "text", "text": json.dumps(envelope, ensure_ascii=False)}],
        "structuredContent": envelope,
        "isError": True,
    }


# -- one tool call --------------------------------------------------------------------------------
def _in_process(name: str, arguments: JsonObject, settings: Settings) -> ToolCallResult:
    from contextware.hosts.mcp.server import call_tool

    return call_tool(name, arguments, settings)


def _via_service(name: str, arguments: JsonObject, settings: Settings) -> ToolCallResult | None:
    """The service's answer, an error result for a write it died in, or None: run it here."""
    from contextware.service import client

    if client.mode(settings) == "off" or name in IN_PROCESS_TOOLS or arguments.get("refresh_stale"):
        return None
    data_dir = client.data_dir_for(None, settings)
    if data_dir is None or not data_dir.is_dir():
        return None  # nothing saved yet: the first write creates the data dir here
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    message: ServiceRequest = {
        "op": "mcp",
        "id": os.urandom(8).hex(),
        "tool": name,
        "arguments": arguments,
        "cwd": cwd,
        "env": client.forwarded_env(settings),
    }
    try:
        answer = client.call(data_dir, message, client.COMMAND_TIMEOUT_S, settings)
    except client.DiedMidRequest:
        if name in REPEATABLE:
            return None
        return error_result(
            "service_died",
            f"The Contextware service stopped during {name}; whether it took effect is unknown: check before "
            "trying again.",
        )
    except client.Unavailable:
        return None
    result = answer.get("result")
    # the service's reply carries the result its own ``server.call_tool`` built
    return cast(ToolCallResult, result) if answer.get("ok") and isinstance(result, dict) else None


def call_tool(name: str, arguments: JsonObject, settings: Settings | None = None) -> ToolCallResult:
    """The ``tools/call`` result: through the service when it can answer, else in this process.
    ``settings``: the server's (``Front``), by default this process's."""
    settings = settings or current_settings()
    result = _via_service(name, arguments, settings)
    return result if result is not None else _in_process(name, arguments, settings)


# -- the stdio loop ---------------------------------------------------------------------------------

MAX_DEPTH = 64  # no tool's arguments nest this deep; deeper JSON is refused before any parser recurses


def nesting(value: JsonValue) -> int:
    """How deeply a parsed JSON value nests (iteratively: a hostile message cannot exhaust the stack)."""
    deepest = 0
    stack: list[tuple[JsonValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


class Front:
    """Reads JSON-RPC lines and writes one answer line per request (from several threads)."""

    def __init__(self, out: IO[bytes], settings: Settings | None = None) -> None:
        self.out = out
        self.settings = settings or current_settings()  # this server's, resolved once at start
        self._write_lock = threading.Lock()
        self._calls: list[threading.Thread] = []

    def send(self, message: JsonRpcReply) -> None:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        with self._write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):
                pass  # the client went away

    def reply(self, id_: JsonValue, result: InitializeResult | ToolCallResult | JsonObject) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    def fail(self, id_: JsonValue, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})

    def handle(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            self.fail(None, PARSE_ERROR, "Parse error: the line is not valid JSON.")
            return
        except RecursionError:  # nested past the parser's stack: refused, never a crash
            self.fail(None, PARSE_ERROR, f"Parse error: the JSON is nested more than {MAX_DEPTH} levels deep.")
            return
        if nesting(message) > MAX_DEPTH:
            self.fail(None, INVALID_REQUEST, f"Invalid Request: the JSON is nested more than {MAX_DEPTH} levels deep.")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.fail(None, INVALID_REQUEST, "Invalid Request: the JSON is not a JSON-RPC 2.0 message.")
            return
        method = message.get("method")
        if "id" not in message:
            return  # a notification (initialized, cancelled, ...): nothing to answer
        id_ = message["id"]
        if not isinstance(method, str):
            if "result" not in message and "error" not in message:  # else: a client's answer, ignored
                self.fail(id_, INVALID_REQUEST, "Invalid Request: no method.")
            return
        params = message.get("params")
        if method == "initialize":
            self.reply(id_, initialize_result(params))
        elif method == "ping":
            self.reply(id_, {})
        elif method == "tools/list":
            self.reply(id_, {"tools": DECLARED["tools"]})
        elif method in EMPTY_LISTS:
            self.reply(id_, {EMPTY_LISTS[method]: []})
        elif method == "tools/call":
            self.start_call(id_, params)
        else:
            self.fail(id_, METHOD_NOT_FOUND, f"Method not found: {method}.")

    def start_call(self, id_: JsonValue, params: JsonValue) -> None:
        name = params.get("name") if isinstance(params, dict) else None
        arguments = params.get("arguments") if isinstance(params, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
            self.fail(id_, INVALID_PARAMS, "Invalid params: tools/call needs a name and an arguments object.")
            return
        refused = argument_error(name, arguments or {})
        if refused is not None:  # before any thread, service or tool sees it
            self.reply(id_, error_result(*refused))
            return

        def run() -> None:
            try:
                result = call_tool(name, arguments or {}, self.settings)
            except Exception as exc:  # noqa: BLE001 - one call's failure must not end the server
                import traceback

                traceback.print_exc(file=sys.stderr)
                error = internal_error(exc)
                result = error_result(error["code"], error["message"])
            self.reply(id_, result)

        # Not a daemon: a call in flight when the client closes stdin still finishes its write.
        thread = threading.Thread(target=run, name=f"mcp-call-{id_}", daemon=False)
        self._calls = [t for t in self._calls if t.is_alive()] + [thread]
        thread.start()

    def serve(self, lines: IO[bytes]) -> None:
        for line in bounded_lines(lines):
            if line is None:
                self.fail(
                    None, INVALID_REQUEST, f"Invalid Request: the message is over the {MAX_MESSAGE_BYTES:,}-byte limit."
                )
            else:
                self.handle(line)
        for thread in self._calls:
            thread.join()


def bounded_lines(stream: IO[bytes], limit: int = MAX_MESSAGE_BYTES) -> Iterator[bytes | None]:
    """Each line of ``stream``, or None for a line over ``limit`` bytes, which is read past in pieces
    and never held whole (a 300 MB line costs ``limit`` bytes of memory, not 300 MB)."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while not line.endswith(b"\n"):  # skip the rest of the long line
            line = stream.readline(1024 * 1024)
            if not line:
                break
        yield None


USAGE = """usage: mcp_server.py [--help] [--version]   (also: contextware mcp)

Contextware's MCP server over stdio for Claude Code, Cursor, Gemini CLI or any MCP client: tools
save_fact, recall, list_memories, get_memory, update_memory, delete_memory, memory_history,
memory_stats, index_file, crawl_project, offload, session_store and load_session_context.
The client starts it:

  <skill_dir>/.venv/bin/python <skill_dir>/scripts/mcp_server.py
  contextware mcp                      (once installed with `uv tool install`)

The project is CONTEXTWARE_PROJECT_ROOT, else the git top level of the working directory, else the
working directory. Quick tools are answered by the project's resident service when one can be had
(CONTEXTWARE_SERVICE=off: always in this process). stdout carries only the protocol; logs go to stderr.
"""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``scripts/mcp_server.py``: serve until the client closes stdin."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        raise SystemExit(0)
    if args and args[0] == "--version":
        sys.stdout.write(f"contextware-mcp {__version__}\n")
        raise SystemExit(0)
    if args:
        sys.stderr.write(f"mcp_server.py: unknown argument {args[0]!r}; it takes none (see --help).\n")
        raise SystemExit(2)
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray output of any library goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    try:
        Front(protocol, Settings.from_env(os.environ)).serve(sys.stdin.buffer)  # the MCP server's composition root
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":  # ``python -I -m contextware.hosts.mcp.front``: an installed package's server
    main()
