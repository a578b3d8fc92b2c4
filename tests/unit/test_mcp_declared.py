"""The MCP stdio front (``hosts.mcp_front``) answers discovery from a frozen copy of what the SDK-based
server declares: the copy must equal the declaration, the front must import nothing heavy, and its
JSON-RPC answers (handshake, ping, lists, errors) must be the protocol's."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import pytest

from contextware.hosts import mcp_front
from contextware.hosts.mcp_declared import DECLARED

HEAVY = ("mcp", "pydantic", "anyio", "lancedb", "pyarrow", "numpy", "onnxruntime", "tokenizers")


def test_the_frozen_declaration_is_what_the_sdk_server_declares() -> None:
    from contextware.hosts import mcp_server

    assert mcp_server.DECLARED_MODULE.read_text(encoding="utf-8") == mcp_server.frozen_text(), (
        "the tools changed: run `uv run python -m contextware.hosts.mcp_server` and commit mcp_declared.py"
    )
    assert [t["name"] for t in DECLARED["tools"]] == list(mcp_server.TOOLS)


def test_the_front_imports_only_the_standard_library() -> None:
    code = textwrap.dedent(f"""
        import sys
        import contextware.hosts.mcp_front
        print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _answers(*lines: bytes | dict) -> list[dict]:
    out = io.BytesIO()
    front = mcp_front.Front(out)
    front.serve(io.BytesIO(b"".join(x if isinstance(x, bytes) else json.dumps(x).encode() + b"\n" for x in lines)))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _init(version: str) -> dict:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


@pytest.mark.parametrize(("asked", "agreed"), [("2025-06-18", "2025-06-18"), ("1999-01-01", "2025-11-25")])
def test_initialize_agrees_a_protocol_version_like_the_sdk(asked: str, agreed: str) -> None:
    (answer,) = _answers(_init(asked))
    result = answer["result"]
    assert answer["id"] == 1 and result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "contextware" and "recall" in result["instructions"]
    assert result["capabilities"] == DECLARED["capabilities"]


def test_discovery_ping_lists_and_notifications() -> None:
    answers = _answers(
        _init("2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 5, "method": "resources/templates/list"},
        {"jsonrpc": "2.0", "id": 6, "method": "sampling/unknown"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
    )
    by_id = {a["id"]: a for a in answers}
    assert list(by_id) == [1, "two", 3, 4, 5, 6]  # notifications get no answer
    assert [t["name"] for t in by_id["two"]["result"]["tools"]][:2] == ["save_fact", "recall"]
    assert by_id[3]["result"] == {}
    assert by_id[4]["result"] == {"prompts": []} and by_id[5]["result"] == {"resourceTemplates": []}
    assert by_id[6]["error"]["code"] == -32601


def test_lines_that_are_not_json_rpc_get_the_json_rpc_error_and_the_server_goes_on() -> None:
    answers = _answers(
        b"{not json\n",
        b"\n",
        b'["a", "list"]\n',
        {"id": 7, "method": "ping"},  # no "jsonrpc": "2.0"
        {"jsonrpc": "2.0", "id": 8},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": {}}},
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
    )
    codes = [(a["id"], a.get("error", {}).get("code")) for a in answers]
    assert codes == [(None, -32700), (None, -32600), (None, -32600), (8, -32600), (9, -32602), (10, None)]
