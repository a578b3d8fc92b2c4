"""Hostile input through the real doors (the scripts as processes, the MCP server over stdio):
each case ends in one clear sentence and the right exit code, never a traceback or internal_error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_client import INITIALIZE
from tests.support.repo import SCRIPTS
from tests.support.scripts import ScriptResult, run_script

DEEP = 100_000


def _script(name: str, *args: str, cwd: Path) -> ScriptResult:
    return run_script(name, *args, cwd=cwd, env={"CONTEXTWARE_SERVICE": "off"})


@pytest.mark.parametrize(
    ("since", "code"),
    [("0001-01-01", "bad_since"), ("9999-12-31", "bad_since"), ("99999999d", "bad_since"), ("1900-01-01", "bad_since")],
)
def test_dates_out_of_range_are_usage_errors(tmp_path, since, code):
    out = _script("recall", "--query", "deploys", "--since", since, cwd=tmp_path)
    body = out.json
    assert out.returncode == 2 and body["error"]["code"] == code, out.stdout
    assert "Traceback" not in out.stderr


def test_a_config_nested_too_deep_is_a_config_error(tmp_path):
    data = tmp_path / "contextware_data"
    data.mkdir()
    (data / "config.json").write_text("[" * DEEP + "]" * DEEP)
    out = _script("recall", "--query", "deploys", cwd=tmp_path)
    body = out.json
    assert out.returncode in (1, 2) and body["error"]["code"] != "internal_error", out.stdout
    assert "Traceback" not in out.stderr


def test_an_import_line_nested_too_deep_names_the_line(tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"id": "fact-000000000001", "text": "x", "created_at": "2026-01-01T00:00:00Z", "deep": '
        + "[" * 50_000
        + "]" * 50_000
        + "}\n"
    )
    out = _script("import", str(path), cwd=tmp_path)
    body = out.json
    assert out.returncode == 2 and body["error"]["code"] != "internal_error", out.stdout
    assert "line 1" in body["error"]["message"].lower()


def test_a_lone_surrogate_is_refused_through_the_mcp_server(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "mcp_server.py")],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "CONTEXTWARE_SERVICE": "off", "CONTEXTWARE_PROJECT_ROOT": str(tmp_path)},
    )
    try:
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
        deep = (
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": '
            + "[" * 5000
            + "]" * 5000
            + "}}}"
        )
        limit = '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "x", "limit": 0}}}'
        surrogate = '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "save_fact", "arguments": {"content": "a \\ud800 b"}}}'
        payload = "".join(json.dumps(m) + "\n" for m in lines) + deep + "\n" + surrogate + "\n" + limit + "\n"
        out, err = proc.communicate(payload.encode(), timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    answers = {m.get("id"): m for m in map(json.loads, out.decode().splitlines())}
    assert answers[None]["error"]["code"] in (-32600, -32700)  # the deep message: refused, the server lives on
    result = answers[3]["result"]
    assert result["isError"] is True
    error = json.loads(result["content"][0]["text"])["error"]
    assert error["code"] == "bad_encoding", error
    assert b"Traceback" not in err
    worded = answers[4]["result"]
    if worded.get("isError"):  # the SDK may refuse limit 0 itself; ours words the parameter as MCP names it
        text = worded["content"][0]["text"]
        assert "--limit" not in text


def test_the_command_line_names_its_flags(tmp_path):
    out = _script("save_fact", "ok", "--kind", "opinion", cwd=tmp_path)
    body = out.json
    assert out.returncode == 2 and body["error"]["message"].startswith("Unknown --kind 'opinion'")
    out = _script("recall", "--query", "x", "--max-chars", "0", cwd=tmp_path)
    assert out.json["error"]["message"] == "--max-chars must be a positive number of characters."
