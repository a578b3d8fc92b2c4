"""The MCP server's standard-library front (scripts/mcp_server.py), as a host runs it: a real process
spoken to in raw JSON-RPC lines.  Discovery never loads the SDK or a heavy library; quick tool calls
go to the resident service when it is on and run in the front's own process when it is off; bad
lines get their JSON-RPC error; a service that dies mid-call (a real process killed with -9 after
it took the request) has the read retried in-process and the write that is not safe to repeat
reported, never done twice."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from contextware.hosts.mcp_declared import DECLARED
from tests.conftest import SCRIPTS
from tests.service_helpers import OFF, ON, alive, log_text, run, services, status, wait_for  # noqa: F401 - fixture

SERVER = SCRIPTS / "mcp_server.py"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
HEAVY = ("lancedb", "pyarrow", "onnxruntime", "pydantic_core", "numpy")


class Front:
    """One front process and its JSON-RPC lines."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER)],
            cwd=cwd,
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def write(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def read(self, timeout: float = 120) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("the front did not answer in time") from None
        assert line, f"the front closed stdout (exit code {self.proc.poll()})"
        return json.loads(line)

    def request(self, method: str, params: Any = None) -> dict:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write((json.dumps(message) + "\n").encode())
        answer = self.read()
        assert answer["id"] == self.next_id, answer
        return answer

    def tool(self, name: str, ok: bool = True, **arguments: Any) -> dict:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        envelope = result["structuredContent"]
        assert result.get("isError", False) is (not ok) and envelope["ok"] is ok, result
        return envelope

    def heavy_loaded(self) -> list[str]:
        """Heavy libraries mapped into the front's process (their shared objects)."""
        maps = Path(f"/proc/{self.proc.pid}/maps").read_text()
        return [name for name in HEAVY if f"/{name}/" in maps or f"/{name}." in maps]

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        return code, self.proc.stderr.read().decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _start(cwd: Path, env: dict[str, str]) -> Front:
    front = Front(cwd, env)
    init = front.request("initialize", INIT)["result"]
    assert init["serverInfo"] == DECLARED["serverInfo"] and init["protocolVersion"] == "2025-06-18"
    front.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    assert front.request("tools/list")["result"]["tools"] == DECLARED["tools"]
    return front


def test_discovery_loads_nothing_heavy_and_off_runs_tools_in_the_front(project_dir):
    front = _start(project_dir, OFF)
    try:
        assert front.heavy_loaded() == []  # initialize + tools/list: the standard library only
        saved = front.tool("save_fact", content="The CI runs on GitHub Actions.", kind="environment")
        found = front.tool("recall", query="which CI do we use?")
        assert found["results"][0]["id"] == saved["id"]
        assert "lancedb" in front.heavy_loaded()  # off: the tools ran in this process
        assert not (project_dir / "contextware_data" / "service.log").exists()  # and never started a service
        assert front.tool("recall", ok=False, query="x", scope="everything")["error"]["code"] == "bad_scope"
        code, err = front.close()
    finally:
        front.kill()
    assert code == 0 and "Traceback" not in err


def test_with_the_service_on_quick_tools_run_in_the_service(project_dir, services):
    run("save_fact", "Deploys go through fly deploy.", "--kind", "decision", cwd=project_dir, env=OFF)
    front = _start(project_dir, ON)
    try:
        found = front.tool("recall", query="how do we deploy?")
        assert found["results"][0]["text"] == "Deploys go through fly deploy."
        saved = front.tool("save_fact", content="Releases are tagged from main.", kind="convention")
        assert front.tool("get_memory", id=saved["id"])["record"]["text"] == "Releases are tagged from main."
        # the same errors, argument checks and unknown tools as the SDK server in-process
        assert front.tool("save_fact", ok=False, content="x", kind="wish")["error"]["code"] == "bad_kind"
        assert front.tool("recall", ok=False, query="x", limit="many")["error"]["code"] == "bad_arguments"
        assert front.tool("recall", ok=False, query="x", bogus=1)["error"]["code"] == "unknown_argument"
        assert front.tool("forget_everything", ok=False)["error"]["code"] == "unknown_tool"
        brief = front.request("tools/call", {"name": "load_session_context", "arguments": {}})["result"]
        assert "Releases are tagged from main." in brief["content"][0]["text"]  # the markdown text, as before
        info = status(project_dir)
        received = re.findall(r"\] mcp (\w+) [0-9a-f]{16}$", log_text(project_dir), re.MULTILINE)
        assert info["running"] is True and received.count("recall") == 3 and "load_session_context" in received
        assert front.heavy_loaded() == []  # every call was answered by the service
        code, err = front.close()
    finally:
        front.kill()
    assert code == 0 and "Traceback" not in err


def test_lines_that_are_not_requests_get_their_json_rpc_error_and_the_front_goes_on(project_dir):
    front = Front(project_dir, OFF)
    try:
        front.write(b"this is not json\n")
        assert front.read() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the line is not valid JSON."},
        }
        front.write(b'{"no": "jsonrpc"}\n[1, 2]\n')
        assert [front.read()["error"]["code"] for _ in range(2)] == [-32600, -32600]
        assert front.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert front.request("sampling/anything")["error"]["code"] == -32601
        assert front.request("tools/call", {"name": 7})["error"]["code"] == -32602
        assert front.request("tools/call", {"name": "recall", "arguments": "query"})["error"]["code"] == -32602
        assert front.request("prompts/list")["result"] == {"prompts": []}  # the declared capabilities
        old = front.request("initialize", {**INIT, "protocolVersion": "1999-01-01"})["result"]
        assert old["protocolVersion"] == DECLARED["latestProtocolVersion"]
        assert front.heavy_loaded() == []
        code, err = front.close()
    finally:
        front.kill()
    assert code == 0 and "Traceback" not in err


# A service that takes one request and is then killed with -9, the connection still open: what a
# caller sees when a real service dies mid-request, at a moment the test controls.
_DYING_SERVICE = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from contextware.resident.server import Service
    from contextware.service.protocol import receive
    from contextware.settings import Settings
    service = Service(Path(sys.argv[1]), Settings.from_env(os.environ))
    assert service.bind()
    print("ready", flush=True)
    conn, _ = service._listener.accept()
    conn.settimeout(None)
    request = receive(conn)
    print(request["op"], request.get("tool"), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def _dying_service(project_dir: Path) -> subprocess.Popen:
    data_dir = (project_dir / "contextware_data").resolve()
    proc = subprocess.Popen(
        [sys.executable, "-c", _DYING_SERVICE, str(data_dir)], stdout=subprocess.PIPE, text=True, cwd=project_dir
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_a_service_killed_mid_call_retries_the_read_and_reports_the_write(project_dir, services):
    run("save_fact", "Logs rotate daily.", cwd=project_dir, env=OFF)
    run(
        "store", "save", "--namespace", "n", "--key", "k", "--data", '{"a": 1}', cwd=project_dir, env=OFF
    )  # the data dir exists: the front asks the service
    front = _start(project_dir, ON)
    try:
        dying = _dying_service(project_dir)
        found = front.tool("recall", query="how often do logs rotate?")
        assert dying.wait(timeout=60) == -9 and dying.stdout.read().split() == ["mcp", "recall"]  # type: ignore[union-attr]
        assert found["results"][0]["text"] == "Logs rotate daily."  # read again, in the front
        assert "lancedb" in front.heavy_loaded()

        # the caller that saw the death starts a replacement; stopped here so that the next service
        # to bind is again one that dies at a moment the test controls
        replacement = wait_for(lambda: status(project_dir).get("pid"))
        assert alive(replacement)
        assert run("service", "stop", cwd=project_dir).json["stopped"] is True
        wait_for(lambda: not alive(replacement), timeout=5)

        # session_store is not safe to repeat (a delete or an eviction could happen twice): reported
        dying = _dying_service(project_dir)
        died = front.tool("session_store", ok=False, action="delete", namespace="n", key="k")
        assert dying.wait(timeout=60) == -9
        assert (
            died["error"]["code"] == "service_died" and "whether it took effect is unknown" in died["error"]["message"]
        )
        # the next call meets the dead service's socket, starts a real service and is answered by it
        assert front.tool("session_store", action="load", namespace="n", key="k")["data"] == {"a": 1}
        deadline = time.monotonic() + 30
        while "mcp session_store" not in log_text(project_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "mcp session_store" in log_text(project_dir) and alive(status(project_dir)["pid"])
        code, err = front.close()
    finally:
        front.kill()
    assert code == 0 and "Traceback" not in err


def test_the_real_gemini_cli_connects_to_the_installed_front(project_dir, gemini_bin, gemini_cli_env):
    """Gemini CLI runs the MCP discovery (initialize, tools/list, ...) against the server entry the
    project install writes, and reports it connected."""
    home = Path(gemini_cli_env["HOME"])
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project_dir): "TRUST_FOLDER"}))
    env = {**gemini_cli_env, "CONTEXTWARE_HOME": os.environ["CONTEXTWARE_HOME"]}
    installed = subprocess.run(
        [sys.executable, str(SCRIPTS / "install.py"), "gemini", "--project", "--python", sys.executable],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(installed.stdout)["ok"], installed.stdout + installed.stderr
    listed = subprocess.run(
        [gemini_bin, "mcp", "list"], cwd=project_dir, env=env, capture_output=True, text=True, timeout=180
    )
    output = listed.stdout + listed.stderr  # the listing goes to either, depending on the CLI's output mode
    line = next((ln for ln in output.splitlines() if "contextware:" in ln), "")
    assert "mcp_server.py" in line and line.endswith("Connected"), output
