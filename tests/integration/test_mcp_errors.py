"""Failures inside an MCP tool: the call comes back as the tool's JSON error envelope with one
sentence, the server keeps running and answers the next calls.

A damaged table is provoked for real: the session store's data files are overwritten with bytes that
are not a Lance file (a damaged disk or a bad copy) under a server that has already used them.  The
table's manifest is intact, so it opens; reading its rows fails, which is ``damaged_data`` naming the
repair command.  A bug of ours (an exception we did not foresee) has no realistic trigger, since every
known failure is mapped, so the raw-protocol test plants one: the server runs with
``contextware.store.kvstore.load`` replaced by a function that raises."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import anyio

from tests.support.mcp_client import SERVER, call, handshake, read_message, send, serve
from tests.support.scripts import run_script


def _damage_store(project_dir: Path) -> list[Path]:
    files = sorted((project_dir / "contextware_data" / "lancedb" / "kv.lance" / "data").glob("*.lance"))
    assert files, "the session store has no data files to damage"
    for path in files:
        path.write_bytes(b"\xab" * path.stat().st_size)  # same size, not a Lance file
    return files


def _assert_damaged(envelope: dict) -> str:
    assert envelope == {"ok": False, "error": {"code": "damaged_data", "message": envelope["error"]["message"]}}
    message = envelope["error"]["message"]
    assert "Lance" in message and "memory.py repair" in message, message  # the cause and the cure
    assert "\n" not in message and "Traceback" not in message and len(message) < 400, message
    return message


def _assert_internal_error(envelope: dict) -> str:
    assert envelope == {"ok": False, "error": {"code": "internal_error", "message": envelope["error"]["message"]}}
    message = envelope["error"]["message"]
    assert re.fullmatch(r"Unexpected [A-Za-z]+(Error|Exception): \S.*\.", message), message
    assert "\n" not in message and "Traceback" not in message and len(message) < 400, message
    return message


async def _tool_error(client, tool: str, args: dict) -> dict:
    result = await client.call_tool(tool, args)
    assert result.is_error is True, result
    envelope = result.structured_content
    assert envelope is not None and json.loads(result.content[0].text) == envelope, result
    return envelope


def test_a_damaged_table_is_a_tool_error_naming_the_repair_and_the_server_goes_on(project_dir: Path):
    async def go() -> None:
        async with serve(project_dir) as client:
            await call(
                client,
                "session_store",
                {"action": "save", "namespace": "baselines", "key": "GET /users", "data": {"p95_ms": 120}},
            )
            await call(
                client, "session_store", {"action": "save", "namespace": "schemas", "key": "api", "data": [1, 2]}
            )
            _damage_store(project_dir)

            # Every store action now reads a damaged file: each is a tool error in our envelope.
            _assert_damaged(await _tool_error(client, "session_store", {"action": "list"}))
            for args in (
                {"action": "load", "namespace": "baselines", "key": "GET /users"},
                {"action": "save", "namespace": "baselines", "key": "GET /items", "data": 1},
                {"action": "stats"},
            ):
                _assert_damaged(await _tool_error(client, "session_store", args))
            # The briefing loses only its store section.
            brief = await call(client, "load_session_context", {"format": "json"})
            assert "memory.py repair" in brief["unavailable"]["store"] and "store" not in brief

            # The same server answers the next calls: another tool works, bad input still gets its code.
            saved = await call(client, "save_fact", {"content": "The session store lives in the kv table."})
            assert saved["id"].startswith("fact-")
            bad = await _tool_error(client, "session_store", {"action": "drop"})
            assert bad["error"]["code"] == "bad_action"

            # Repaired meanwhile by the command line, the store works again through the same server.
            repaired = await anyio.to_thread.run_sync(lambda: run_script("memory", "repair", cwd=project_dir))
            assert repaired.returncode == 0 and repaired.json["tables"]["kv"]["status"] == "repaired", repaired.stdout
            await call(
                client,
                "session_store",
                {"action": "save", "namespace": "baselines", "key": "GET /users", "data": {"p95_ms": 99}},
            )
            loaded = await call(
                client, "session_store", {"action": "load", "namespace": "baselines", "key": "GET /users"}
            )
            assert loaded["data"] == {"p95_ms": 99}

    anyio.run(go)


_BUGGY_LOAD = """\
import runpy, sys
import contextware.store.kvstore as store

def load(*args, **kwargs):
    raise RuntimeError("a bug planted by the test")

store.load = load
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_the_internal_error_is_one_protocol_answer_and_the_traceback_goes_to_stderr(project_dir: Path):
    """Raw JSON-RPC, as a client sends it: the failing call gets its own answer (a result with isError,
    not a JSON-RPC error and not silence), the process stays alive and answers the next request, and
    the traceback is logged on stderr only."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _BUGGY_LOAD, str(SERVER)],
        cwd=project_dir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        handshake(proc)

        def store(i: int, **args) -> dict:
            send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "session_store", "arguments": args},
                },
            )
            answer = read_message(proc)
            assert answer["id"] == i and "error" not in answer, answer
            return answer["result"]

        assert store(2, action="save", namespace="n", key="k", data={"a": 1})["structuredContent"]["ok"] is True
        failed = store(3, action="load", namespace="n", key="k")
        assert failed["isError"] is True
        _assert_internal_error(failed["structuredContent"])
        assert json.loads(failed["content"][0]["text"]) == failed["structuredContent"]
        assert proc.poll() is None  # still running

        again = store(4, action="save", namespace="n", key="k", data={"a": 2})
        assert again.get("isError") is not True and again["structuredContent"]["created"] is False
        assert store(5, action="list", namespace="n")["structuredContent"]["ok"] is True

        rest, err = proc.communicate(timeout=30)  # closing stdin ends the server normally
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.decode().splitlines() if line.strip())
    assert proc.returncode == 0
    stderr = err.decode()
    assert "Unexpected error in a Contextware tool" in stderr and "Traceback" in stderr, stderr[-3000:]
