"""Drive the MCP server (scripts/mcp_server.py) as a client does: the tool contract it must publish,
the official ``mcp`` client over stdio, and raw JSON-RPC lines on a process's pipes."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.support.repo import SCRIPTS

SERVER = SCRIPTS / "mcp_server.py"

KINDS = ["preference", "constraint", "decision", "convention", "environment", "note"]
RESULTS = ["success", "failure", "partial"]
NO_DEFAULT = _ = object()  # a parameter without a default
S, I, B, A, ANY = "string", "integer", "boolean", "array", None

# The tool contract: name -> {parameter: (JSON type, enum, default)}, plus the required parameters.
# A change here is a change for every agent configured with the server: update SKILL.md with it.
CONTRACT: dict[str, tuple[dict[str, tuple[Any, Any, Any]], list[str]]] = {
    "save_fact": (
        {
            "content": (S, None, _),
            "type": (S, ["fact", "episode", "log"], "fact"),
            "kind": (S, KINDS, _),
            "topics": (A, None, _),
            "supersedes": (S, None, _),
            "goal": (S, None, _),
            "result": (S, RESULTS, _),
            "category": (S, None, _),
            "session": (S, None, _),
            "role": (S, ["user", "agent"], _),
        },
        ["content"],
    ),
    "recall": (
        {
            "query": (S, None, _),
            "scope": (S, ["all", "code", "offloads", "memory", "facts", "episodes", "logs"], "all"),
            "limit": (I, None, 5),
            "mode": (S, ["summary", "exact"], "summary"),
            "max_chars": (I, None, _),
            "refresh_stale": (B, None, False),
            "since": (S, None, _),
            "topic": (S, None, _),
            "kind": (S, KINDS, _),
            "result": (S, RESULTS, _),
            "category": (S, None, _),
            "include_superseded": (B, None, False),
            "source": (S, None, _),
            "session": (S, None, _),
            "branch": (S, None, "current"),
            "all_projects": (B, None, False),
            "min_confidence": ("number", None, _),
            "explain": (B, None, False),
        },
        ["query"],
    ),
    "index_file": (
        {
            "paths": (A, None, _),
            "summarizer": (S, ["auto", "gemini", "local"], _),
            "force": (B, None, False),
        },
        ["paths"],
    ),
    "offload": (
        {
            "prompt": (S, None, _),
            "files": (A, None, _),
            "include_dirs": (A, None, _),
            "context": (S, None, _),
            "model": (S, None, _),
            "topics": (A, None, _),
            "refresh": (B, None, False),
            "session": (S, None, _),
            "feature": (S, None, _),
            "resume_id": (S, None, _),
        },
        ["prompt"],
    ),
    "session_store": (
        {
            "action": (S, ["save", "load", "list", "delete", "stats"], _),
            "data": (ANY, None, _),
            "namespace": (S, None, _),
            "key": (S, None, _),
        },
        ["action"],
    ),
    "load_session_context": (
        {
            "budget_tokens": (I, None, 1500),
            "format": (S, ["markdown", "json"], "markdown"),
        },
        [],
    ),
    "list_memories": (
        {"collection": (S, ["facts", "episodes", "logs"], _), "limit": (I, None, 20), "stale": (B, None, False)},
        [],
    ),
    "get_memory": ({"id": (S, None, _)}, ["id"]),
    "update_memory": (
        {
            "id": (S, None, _),
            "text": (S, None, _),
            "kind": (S, KINDS, _),
            "topics": (A, None, _),
            "status": (S, ["active", "superseded"], _),
            "goal": (S, None, _),
            "result": (S, RESULTS, _),
            "category": (S, None, _),
            "summary": (S, None, _),
            "role": (S, ["user", "agent"], _),
        },
        ["id"],
    ),
    "delete_memory": ({"id": (S, None, _)}, ["id"]),
    "memory_history": ({"id": (S, None, _)}, ["id"]),
    "confirm_memory": ({"id": (S, None, _)}, ["id"]),
    "memory_stats": ({}, []),
    "crawl_project": (
        {
            "paths": (A, None, _),
            "summarizer": (S, ["auto", "gemini", "local"], _),
            "jobs": (I, None, _),
            "force": (B, None, False),
            "upgrade": (B, None, False),
        },
        [],
    ),
}


def server_params(cwd: Path, env: dict[str, str] | None = None) -> StdioServerParameters:
    # The stdio client passes only a few safe variables by default: give the test's isolated
    # environment (CONTEXTWARE_HOME, the network guard on PYTHONPATH, ...) explicitly.
    return StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], cwd=str(cwd), env={**os.environ, **(env or {})}
    )


@asynccontextmanager
async def serve(cwd: Path, env: dict[str, str] | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    # mode="legacy": the initialize handshake, as Claude Code, Cursor and Gemini CLI speak it.
    async with Client(server_params(cwd, env), mode=mode, read_timeout_seconds=60) as client:
        yield client


async def call(client: Client, tool: str, args: dict[str, Any], *, ok: bool = True) -> dict:
    """Call a tool; the text is the JSON of the structured content; returns the envelope."""
    result = await client.call_tool(tool, args)
    envelope = result.structured_content
    assert envelope is not None, result
    assert json.loads(result.content[0].text) == envelope
    assert result.is_error is (not ok), envelope
    assert envelope["ok"] is ok, envelope
    return envelope


async def error(client: Client, tool: str, args: dict[str, Any]) -> str:
    envelope = await call(client, tool, args, ok=False)
    assert set(envelope["error"]) >= {"code", "message"} and envelope["error"]["message"]
    return envelope["error"]["code"]


def run(fn) -> None:
    anyio.run(fn)


def send(proc: subprocess.Popen, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def read_message(proc: subprocess.Popen, timeout: float = 60) -> dict:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    assert sel.select(timeout), "the server did not answer in time"
    line = proc.stdout.readline().decode()
    assert line, f"the server closed stdout (exit code {proc.poll()})"
    return json.loads(line)  # every stdout line is a JSON-RPC message, also around the error


INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def handshake(proc: subprocess.Popen, timeout: float = 60) -> dict:
    """``initialize`` and ``notifications/initialized`` over raw stdio, as a host opens a session;
    the server's initialize result."""
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    answer = read_message(proc, timeout)
    assert answer["id"] == 1, answer
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer["result"]
