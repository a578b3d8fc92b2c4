"""The embedding runtime sends nothing and writes nothing outside the project and CONTEXTWARE_HOME.

onnxruntime 1.31 on Linux runs Microsoft's 1DS telemetry client from native threads: loading a model
writes ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and queues events for a collector.  The
tests' network guard sees only Python sockets, so these tests watch the process from outside: the
files it leaves in a fresh HOME, and every ``connect`` it makes under ``strace -f``.  The same watch
covers every other native dependency as we use it (``tests/support/native_audit.py``: LanceDB,
pyarrow, tokenizers, tree-sitter, the MCP SDK, Starlette and uvicorn, detect-secrets) and the two
long-lived fronts, the MCP server and the memory browser (the audit table is in docs/security.md).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_client import handshake, read_message, send
from tests.support.native_audit import CASES
from tests.support.repo import REPO, SCRIPTS

STRACE = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg"]
needs_strace = pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)"
)


def _files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _fresh(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A fresh HOME, a git project and the environment of a process run there (no opt-out inherited)."""
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(exist_ok=True)
    if not project.exists():
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY")},
        "HOME": str(home),
        "CONTEXTWARE_HOME": str(home / "cw"),
        "CONTEXTWARE_SERVICE": "off",
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    return home, project, env


def _internet_calls(trace: Path) -> list[str]:
    """connect()/sendto()/sendmsg() lines naming an internet address other than the loopback."""
    lines = trace.read_text().splitlines()
    return [line for line in lines if re.search(r"AF_INET6?\b", line) and not re.search(r"127\.0\.0\.1|::1\b", line)]


def _outside(home: Path) -> set[str]:
    return {f for f in _files_under(home) if not f.startswith("cw/")}


def _run(tmp_path: Path, script: str, *args: str, wrapper: list[str] | None = None) -> tuple[Path, Path]:
    home, project, env = _fresh(tmp_path)
    cmd = [*(wrapper or []), sys.executable, str(SCRIPTS / f"{script}.py"), *args]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    return home, project


def test_loading_the_model_leaves_no_file_outside_the_project_and_contextware_home(tmp_path: Path):
    home, project = _run(tmp_path, "save_fact", "Deploys go through the release pipeline.")
    _run(tmp_path, "recall", "--query", "how do we deploy?")
    outside = {f for f in _files_under(home) if not f.startswith("cw/")}
    assert not outside, f"files written outside the project and CONTEXTWARE_HOME: {sorted(outside)}"
    assert (project / "contextware_data").is_dir()


@needs_strace
def test_no_process_attempts_a_network_connection(tmp_path: Path):
    """Every connect() and addressed send of the save and of every thread and child it starts, with
    the real model loaded: none may name an internet address (a DNS lookup connects a UDP socket)."""
    trace = tmp_path / "connect.trace"
    wrapper = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace)]
    _run(tmp_path, "save_fact", "The staging database is restored every Monday.", wrapper=wrapper)
    network = [line for line in trace.read_text().splitlines() if re.search(r"AF_INET6?\b", line)]
    assert not network, "network calls: " + "\n".join(network[:10])


@needs_strace
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_native_dependency_sends_nothing_and_writes_nothing_outside(tmp_path: Path, case: str):
    """Each native library, used as we use it, in a process of ours (the package imported first)."""
    home, project, env = _fresh(tmp_path)
    trace = tmp_path / "trace"
    cmd = [*STRACE, "-o", str(trace), sys.executable, str(REPO / "tests" / "support" / "native_audit.py"), case]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert not _internet_calls(trace), "network calls: " + "\n".join(_internet_calls(trace)[:10])
    assert not _outside(home), f"files written outside the project and CONTEXTWARE_HOME: {sorted(_outside(home))}"


@needs_strace
def test_the_mcp_server_answering_a_recall_sends_nothing(tmp_path: Path):
    """The MCP server as a host starts it: initialize, a save and a recall (the model loaded)."""
    home, project, env = _fresh(tmp_path)
    trace = tmp_path / "trace"
    cmd = [*STRACE, "-o", str(trace), sys.executable, str(SCRIPTS / "mcp_server.py")]
    proc = subprocess.Popen(cmd, cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        handshake(proc)
        for n, (tool, args) in enumerate(
            [
                ("save_fact", {"content": "Releases are cut on Thursdays.", "kind": "convention"}),
                ("recall", {"query": "when are releases cut?"}),
            ],
            2,
        ):
            send(proc, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            answer = read_message(proc, timeout=180)
            assert answer["id"] == n and not answer["result"].get("isError"), answer
    finally:
        proc.stdin.close()
        proc.wait(60)
    assert not _internet_calls(trace), "network calls: " + "\n".join(_internet_calls(trace)[:10])
    assert not _outside(home), f"files written outside the project and CONTEXTWARE_HOME: {sorted(_outside(home))}"


@needs_strace
def test_the_memory_browser_serving_a_page_sends_nothing(tmp_path: Path):
    """``ui`` started and asked for its dashboard: only loopback connections, no file outside."""
    import urllib.request

    home, project, env = _fresh(tmp_path)
    _run(tmp_path, "save_fact", "The browser audit fact.")
    trace = tmp_path / "trace"
    cmd = [*STRACE, "-o", str(trace), sys.executable, str(SCRIPTS / "ui.py"), "--no-browser"]
    proc = subprocess.Popen(
        cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stderr is not None
        url = ""
        for _ in range(200):
            line = proc.stderr.readline()
            if m := re.search(r"http://127\.0\.0\.1:\d+/\S*\?token=\S+", line):
                url = m.group(0)
                break
            if not line or "Ctrl-C" in line:  # the banner's last line: no URL is coming
                break
        assert url, "ui.py printed no URL"
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # the token becomes a cookie
        with opener.open(url, timeout=60) as resp:
            assert resp.status == 200 and b"<html" in resp.read().lower()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # strace and the server it traces: ui stops on SIGTERM
        proc.wait(60)
    assert not _internet_calls(trace), "network calls: " + "\n".join(_internet_calls(trace)[:10])
    assert not _outside(home), f"files written outside the project and CONTEXTWARE_HOME: {sorted(_outside(home))}"
