"""The MCP front answers discovery from a frozen copy of what the SDK-based server declares: the copy
must be exactly the SDK server's declaration (so the two can never drift), and the front must stay
free of the SDK and every heavy library at import."""

from __future__ import annotations

import subprocess
import sys

from contextware.hosts.mcp import front, server
from contextware.hosts.mcp.declared import DECLARED


def test_the_frozen_declaration_is_what_the_sdk_server_declares():
    assert server.DECLARED_MODULE.read_text(encoding="utf-8") == server.frozen_text(), (
        "the tools changed: run `uv run python -m contextware.hosts.mcp.server` to freeze them again"
    )
    assert [t["name"] for t in DECLARED["tools"]] == list(server.TOOLS)


def test_routing_names_declared_tools_and_repeats_only_what_is_safe():
    names = {t["name"] for t in DECLARED["tools"]}
    assert names >= front.IN_PROCESS_TOOLS
    assert names >= front.REPEATABLE
    assert {"recall", "get_memory", "save_fact", "update_memory"} <= front.REPEATABLE
    assert not {"session_store", "offload"} & front.REPEATABLE


def test_initialize_negotiates_the_protocol_version_as_the_sdk_does():
    for version in DECLARED["protocolVersions"]:
        assert front.initialize_result({"protocolVersion": version})["protocolVersion"] == version
    latest = DECLARED["latestProtocolVersion"]
    assert front.initialize_result({"protocolVersion": "2000-01-01"})["protocolVersion"] == latest
    assert front.initialize_result(None)["protocolVersion"] == latest


def test_the_front_imports_neither_the_sdk_nor_a_heavy_library():
    code = (
        "import sys, contextware.hosts.mcp.front\n"
        "bad = {'mcp', 'pydantic', 'anyio', 'lancedb', 'pyarrow', 'numpy', 'onnxruntime'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
